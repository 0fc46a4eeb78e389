"""Helpers of the reliability suite: CLI arguments, fast-retry settings, tree snapshots."""

from __future__ import annotations

import hashlib
from pathlib import Path

# Settings that keep fault-injected runs fast: retries come quickly and a held request times out
# well before the fake server's `hang`. The transient-error policy itself is unchanged.
FAST_RETRIES = """\
llm:
  timeout: 0.5
  max_retries: 12
  backoff_base: 0.01
  backoff_max: 0.05
evolution:
  embedding_model: difflib
credit:
  c_min: 1
"""


def common(url: str) -> list[str]:
    return ["--model", "openai/scripted", "--api-base", url, "--data", "addition.jsonl"]


def train_args(
    url: str, run: str = "runs/r1", *, epochs: int = 1, evolution: bool = False
) -> list[str]:
    return [
        "train", "--benchmark", "addition.yaml", *common(url), "--n", "3", "--k", "2",
        "--epochs", str(epochs), "--steps-per-epoch", "2", "--run", run,
        *([] if evolution else ["--no-evolution"]),
    ]  # fmt: skip


def snapshot(root: Path) -> dict[str, str]:
    """Every file under `root` (relative path -> sha256): compare before/after a command."""
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }
