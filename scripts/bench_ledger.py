"""How many bytes of events.jsonl the trainer reads per step, as a run gets longer.

    python scripts/bench_ledger.py            # 4 and 64 skill-editing steps

Trains the scripted environment (moscopt.testing.scripted, FakeLM: no network) for one epoch of
S minibatches and counts every byte read from the run's events.jsonl while training, through a
wrapper around `open`. Before the typed ledger, each step re-parsed the whole log to find its
rollouts (work per step grew with the run); now the cursor keeps the byte offsets of the epoch's
rollouts and reads back only those lines.
"""

from __future__ import annotations

import asyncio
import builtins
import io
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
read_bytes = 0


class Counting:
    def __init__(self, f: Any) -> None:
        self._f = f

    def __getattr__(self, name: str) -> Any:
        return getattr(self._f, name)

    def __enter__(self) -> Counting:
        self._f.__enter__()
        return self

    def __exit__(self, *exc: Any) -> Any:
        return self._f.__exit__(*exc)

    def __iter__(self) -> Any:
        for line in self._f:
            _count(line)
            yield line

    def read(self, *a: Any) -> Any:
        return _count(self._f.read(*a))

    def readline(self, *a: Any) -> Any:
        return _count(self._f.readline(*a))


def _count(data: Any) -> Any:
    global read_bytes
    read_bytes += len(data)
    return data


def logging_lm(run: Any, **kw: Any) -> Any:
    """A FakeLM that logs an `llm_call` event per call, as the real client does in training
    (those lines are the bulk of a real log)."""
    from moscopt.testing import FakeLM

    class Logging(FakeLM):
        def complete(self, messages: Any, **k: Any) -> Any:
            out = super().complete(messages, **k)
            record = {"model": self.model, "purpose": k.get("purpose", ""), "sample": 0,
                      "prompt_tokens": out.usage.prompt_tokens,
                      "completion_tokens": out.usage.completion_tokens, "cost": 0.0,
                      "latency": 0.001, "cache_hit": False, "retries": 0, "ok": True}  # fmt: skip
            try:
                from moscopt.run.ledger import LLMCall

                run.events.append(LLMCall(**record))
            except ImportError:  # before the typed ledger
                run.events.append("llm_call", **record)
            return out

    return Logging(**kw)


def measure(steps: int) -> tuple[int, int, int]:
    from moscopt.app.workspace import make_trainer
    from moscopt.benchmarks import Splits
    from moscopt.testing.scripted import make_run, respond, tasks

    global read_bytes
    with tempfile.TemporaryDirectory() as tmp:
        import moscopt.testing.scripted as scripted

        scripted.splits = lambda n_train=4, n_val=4: Splits(  # type: ignore[assignment]
            train=tasks("train", 2 * steps), val=tasks("val", 4), test=tasks("test", 2)
        )
        run, config, bench, sp, seeds = make_run(
            Path(tmp), ROOT / "skills", **{"training.epochs": 1,
            "training.max_steps_per_epoch": steps, "gating.edit_steps": 0}
        )  # fmt: skip
        real_open = builtins.open

        def counting_open(file: Any, mode: str = "r", *a: Any, **k: Any) -> Any:
            f = real_open(file, mode, *a, **k)
            if str(file).endswith("events.jsonl") and "r" in mode and "+" not in mode:
                return Counting(f)
            return f

        lm = logging_lm(run, responder=respond)
        trainer = make_trainer(
            run=run, config=config, benchmark=bench, splits=sp,
            agent_lm=lm, optimizer_lm=lm, seeds=seeds,
        )  # fmt: skip
        read_bytes = 0
        builtins.open = io.open = counting_open  # Path.open goes through io.open
        try:
            asyncio.run(trainer.train())
        finally:
            builtins.open = io.open = real_open
        size = run.events_path.stat().st_size
        return read_bytes, size, trainer.state.step


def main() -> None:
    print(f"{'steps':>6} {'log bytes':>10} {'read while training':>20} {'read per step':>14}")
    for steps in (4, 64):
        read, size, done = measure(steps)
        print(f"{done:>6} {size:>10,} {read:>20,} {read // max(1, done):>14,}")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
