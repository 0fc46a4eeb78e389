"""The benchmark scripts' loopback world: a `FakeServer` in a child process (`ServerProcess`),
the "sums" benchmark they evaluate (`write_sums`) and the CPU their children used
(`child_cpu`).

`python -m moscopt.testing.loopback --latency 0.1 [--responder module:name | file.py:name]
[--fault-rate R --seed S] [--prompt-cache]` serves until its stdin closes; its first line of
output is the server's URL. A responder named by file (a bench script's own) is loaded from
that file.
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import urllib.request
from pathlib import Path
from types import TracebackType
from typing import Any

from moscopt.testing.fake_server import RESET_PATH, STATS_PATH

SUMS_SPEC = """\
name: sums
description: "{description}"
source:
  local:
    files: [sums.jsonl]
    fields: {{id: id, question: question, answer: answer}}
splits: {{train: {train}, val: {val}, test: {test}, seed: 1}}
grader: exact
"""


class ServerProcess:
    """A `FakeServer` answering after `latency` seconds in a child process (`responder` as
    `python -m moscopt.testing.loopback` takes it; None: the fake server's own answers),
    controlled over HTTP; `env` is the child's environment (None: this one's)."""

    def __init__(
        self,
        latency: float = 0.0,
        *,
        responder: str | None = None,
        env: dict[str, str] | None = None,
    ) -> None:
        cmd = [sys.executable, "-W", "ignore::RuntimeWarning", "-m", __name__]
        cmd += ["--latency", str(latency)] + (["--responder", responder] if responder else [])
        self.proc = subprocess.Popen(
            cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env
        )
        assert self.proc.stdout is not None
        self.url = self.proc.stdout.readline().strip()
        if not self.url:
            self.stop()
            raise RuntimeError(f"the loopback server did not start: {' '.join(cmd)}")
        self.root = self.url.removesuffix("/v1")

    def stats(self) -> dict[str, Any]:
        """The server's counters (`requests`, `max_in_flight`, `median_seconds`, ...)."""
        with urllib.request.urlopen(self.root + STATS_PATH) as r:
            return dict(json.loads(r.read()))

    def requests(self) -> int:
        return int(self.stats()["requests"])

    def reset(self) -> None:
        urllib.request.urlopen(urllib.request.Request(self.root + RESET_PATH, method="POST"))

    def stop(self) -> None:
        if self.proc.stdin is not None and not self.proc.stdin.closed:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def __enter__(self) -> ServerProcess:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


def write_sums(work: Path, n: int, *, description: str, extra: str = "") -> None:
    """`work/sums.yaml` and `work/sums.jsonl`: n additions ("Compute i + (i + 7)."), half of
    them train, a quarter validation, the rest test; `extra` is appended to the spec."""
    rows = [
        {"id": f"s{i}", "question": f"Compute {i} + {i + 7}.", "answer": str(2 * i + 7)}
        for i in range(n)
    ]
    (work / "sums.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    train = n // 2
    val = (n - train) // 2
    spec = SUMS_SPEC.format(description=description, train=train, val=val, test=n - train - val)
    (work / "sums.yaml").write_text(spec + extra)


def child_cpu() -> float:
    """CPU seconds (user + system) of this process's waited-for children so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def load_responder(spec: str) -> Any:
    """`module:name` or `path/to/file.py:name`: the responder it names."""
    import importlib
    import importlib.util

    where, _, name = spec.rpartition(":")
    if not where or not name:
        raise ValueError(f"a responder is module:name or file.py:name, got {spec!r}")
    if where.endswith(".py"):
        found = importlib.util.spec_from_file_location(Path(where).stem, where)
        if found is None or found.loader is None:
            raise ValueError(f"cannot load {where}")
        module = importlib.util.module_from_spec(found)
        found.loader.exec_module(module)
    else:
        module = importlib.import_module(where)
    return getattr(module, name)


def main(argv: list[str] | None = None) -> None:
    """Serve until stdin closes (see the module docstring)."""
    import argparse

    from moscopt.testing.fake_server import FakeServer

    parser = argparse.ArgumentParser(description="a loopback fake server for the bench scripts")
    parser.add_argument("--latency", type=float, default=0.0)
    parser.add_argument("--responder", default=None, help="module:name or file.py:name")
    parser.add_argument("--fault-rate", type=float, default=0.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--prompt-cache", action="store_true", help="simulate a prefix cache")
    args = parser.parse_args(argv)
    options: dict[str, Any] = {
        "latency": args.latency,
        "fault_rate": args.fault_rate,
        "seed": args.seed,
        "prompt_cache": args.prompt_cache,
    }
    if args.responder:
        options["responder"] = load_responder(args.responder)
    with FakeServer(**options) as server:
        print(server.url, flush=True)
        sys.stdin.read()


if __name__ == "__main__":
    main()
