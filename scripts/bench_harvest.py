"""Time a harvest: reading, scrubbing and deterministic mining of N real-format sessions.

    python scripts/bench_harvest.py [--n 100 1000] [--source codex|claude-code]

Each session is a copy of one of the real transcripts in tests/fixtures/sessions/<source>
(written by the real CLIs) with its request made distinct (8 words of its own, so that
requests do not merge) and its session id renamed; every copy carries the user's correction.
Prints, for each N: the seconds to read and scrub (harvest), to mine, the sessions read and
the tasks mined. (A request the scrubber changed, the Claude Code session that pastes a
`.env`, is not found in its file to be made distinct: its copies are one session repeated,
which the harvest keeps once.)
No model is called (the deterministic miner).
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from moscopt.learn.harvest import harvest
from moscopt.learn.mine import mine

FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "sessions"
PROJECT = Path("/home/user/project")
AREAS = ("billing", "search", "payments", "ledger", "identity", "storage", "pricing", "catalog")


def write_copies(source: str, n: int, out: Path) -> None:
    real = sorted((FIXTURES / source).rglob("*.jsonl"))
    requests = [
        s.turns[0].text for s in harvest(source, path=FIXTURES / source, project=PROJECT).sessions
    ]
    for i in range(n):
        src = real[i % len(real)]
        text = src.read_text(encoding="utf-8")
        ids = {json.loads(line).get("sessionId") for line in text.splitlines()} - {None}
        first = json.loads(text.splitlines()[0])
        ids |= {first.get("payload", {}).get("id")} - {None}
        for old in ids:
            text = text.replace(old, f"{old[:-6]}{i:06d}")
        for request in requests:  # made distinct wherever the transcript holds it
            escaped = json.dumps(request)[1:-1]
            tag = " ".join(f"{AREAS[(i + k) % len(AREAS)]}{i}x{k}" for k in range(8))
            text = text.replace(escaped, f"{escaped} ({tag})")
        name = f"rollout-{i:06d}.jsonl" if source == "codex" else f"{i:06d}.jsonl"
        (out / name).write_text(text, encoding="utf-8")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, nargs="+", default=[100, 1000])
    ap.add_argument("--source", choices=["codex", "claude-code"], default="codex")
    args = ap.parse_args()
    print(f"source {args.source}: sessions, harvest s, mine s, read, tasks")
    for n in args.n:
        with tempfile.TemporaryDirectory() as tmp:
            write_copies(args.source, n, Path(tmp))
            t0 = time.perf_counter()
            got = harvest(args.source, path=Path(tmp), project=PROJECT)
            t1 = time.perf_counter()
            mined = mine(got.sessions)
            t2 = time.perf_counter()
        print(f"{n:>8} {t1 - t0:9.2f} {t2 - t1:7.2f} {got.counts.sessions:6} {len(mined.tasks):6}")


if __name__ == "__main__":
    main()
