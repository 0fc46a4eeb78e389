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

    python scripts/bench_harvest.py --grouping --n 1000 4000

times the grouping of near-duplicate requests alone on synthetic requests that share common
words (`grouping`).

    python scripts/bench_harvest.py --world

runs the world of `moscopt.testing.learn_world` (a user who corrects every report the same
way) through the command line, `harvest -> train --tasks --held-out -> adopt`, against the
loopback server, and prints the sessions, the seconds and tasks of the harvest, the calls of
training and its certificate (the held-out score before -> after).

    python scripts/bench_harvest.py --world --agent PATH/TO/codex|claude [--sessions 40]

does the same with the agent a user runs: every task is solved by a real `codex exec` or
`claude -p` (`npm install @openai/codex @anthropic-ai/claude-code`), its skills in its folder's
`.agents/skills` / `.claude/skills`, its model the world's `agent_model` behind a loopback
server (`moscopt.testing.agent_api_server`); nothing leaves 127.0.0.1.
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


def world(agent: str | None = None, sessions: int = 999) -> None:
    """`harvest -> train -> adopt` in the learn world; with `agent` (the path of a `codex` or a
    `claude` binary), the trained agent is that real `codex exec` / `claude -p`, driven by the
    external-agent harness, its model the world's `agent_model` behind a loopback server."""
    import contextlib
    import os
    import subprocess
    import sys

    from moscopt.testing import FakeServer
    from moscopt.testing.agent_api_server import (
        CLOSED_PROXIES,
        AgentAPIServer,
        claude_environment,
        codex_environment,
    )
    from moscopt.testing.learn_world import agent_model, responder, write_sessions
    from moscopt.testing.scripted import write_project

    with tempfile.TemporaryDirectory() as tmp, contextlib.ExitStack() as stack:
        root = Path(tmp)
        env = {**os.environ, "OPENAI_API_KEY": "sk-bench"}
        config = ""
        if agent is not None:
            model = stack.enter_context(AgentAPIServer(body_responder=agent_model))
            binary = str(Path(agent).resolve())
            if Path(agent).name.startswith("claude"):
                command = [binary, "-p", "{task}"]
                extra = claude_environment(model.url)
            else:
                command = [binary, "exec", "--skip-git-repo-check", "{task}"]
                extra = codex_environment(root / ".codex-home", model.url)
            env |= CLOSED_PROXIES | extra  # nothing leaves the machine
            settings = {"command": command, "env": sorted(extra), "timeout": 180, "parallel": 2}
            config = json.dumps({"agent": settings})
        write_project(root, FIXTURES.parents[2] / "skills", config)
        corrections = ["no — always put the risks first"] * sessions
        n = write_sessions(root / "sessions.jsonl", corrections)

        def moscopt(*args: str) -> str:
            cmd = [sys.executable, "-m", "moscopt", *args]
            done = subprocess.run(cmd, cwd=root, env=env, capture_output=True, text=True)
            if done.returncode:
                sys.exit(done.stdout + done.stderr)
            return done.stdout

        t0 = time.perf_counter()
        moscopt("harvest", "--source", "jsonl", "--path", "sessions.jsonl", "-o", "tasks.jsonl")
        t1 = time.perf_counter()
        tasks = sum(len(p.read_text().splitlines()) for p in root.glob("tasks*.jsonl"))
        with FakeServer(responder=responder) as server:
            out = moscopt(
                "train", "--tasks", "tasks.jsonl", "--held-out", "tasks.heldout.jsonl",
                "--model", "openai/scripted", "--api-base", server.url, "--n", "3", "--k", "2",
                "--epochs", "1", "--steps-per-epoch", "2", "--run", "runs/r1",
                "--no-evolution", "--max-calls", "5000",
            )  # fmt: skip
            calls = server.count("ok")
        t2 = time.perf_counter()
        moscopt("adopt", "--run", "runs/r1", "--to", ".claude/skills")
        runs = len(model.requests) if agent is not None else 0
    certificate = next(line for line in out.splitlines() if line.startswith("certificate:"))
    print(f"world: {n} sessions; harvest {t1 - t0:.2f} s (process included), {tasks} tasks")
    print(f"train: {calls} calls, {t2 - t1:.1f} s; {certificate}")
    if agent is not None:
        from moscopt.testing.agent_api_server import cli_version

        print(f"agent: {runs} model requests from {Path(agent).name} ({cli_version(agent)})")


def grouping(counts: list[int]) -> None:
    """Time `group` alone on N requests of 12 words of their own (of 3,000) and 5 words every
    request ends with, plus N/10 repeats: the common words must not make it quadratic."""
    import random

    from moscopt.learn.mine import Exchange, group

    rng = random.Random(0)
    vocab = [f"w{i}" for i in range(3000)]
    print("requests, groups, group s")
    for n in counts:
        texts = [
            " ".join(rng.sample(vocab, 12)) + " please fix the report format" for _ in range(n)
        ]
        items = [Exchange(session=None, request=t, context="") for t in texts]  # type: ignore[arg-type]
        items += items[: n // 10]
        t0 = time.perf_counter()
        found = group(items)
        print(f"{len(items):>8} {len(found):6} {time.perf_counter() - t0:7.3f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, nargs="+", default=[100, 1000])
    ap.add_argument("--source", choices=["codex", "claude-code"], default="codex")
    ap.add_argument("--world", action="store_true", help="harvest -> train -> adopt, end to end")
    ap.add_argument("--agent", help="--world: the path of a codex binary, the trained agent")
    ap.add_argument("--sessions", type=int, default=999, help="--world: sessions written")
    ap.add_argument("--grouping", action="store_true", help="time the grouping alone, at --n")
    args = ap.parse_args()
    if args.world:
        world(args.agent, args.sessions)
        return
    if args.grouping:
        grouping(args.n)
        return
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
