"""The names of `moscopt eval`'s per-task result files: `eval-<benchmark>-<split>-<mode>.jsonl`,
in the run's `exports/` (with `--run`) or the current folder.

An evaluation never replaces an earlier one's file by default: when the name is taken, it takes
the next free `eval-<benchmark>-<split>-<mode>-<n>.jsonl` (n = 2, 3, ...), and says where it
wrote. Replacing a file is what `--out FILE --force` is for. The report reads every such file
back (`parse_name`), each as its own row.
"""

from __future__ import annotations

from pathlib import Path

MODES = ("none", "mixture", "static", "topq", "distilled", "router", "agents")


def new_results_path(folder: Path, benchmark: str, split: str, mode: str) -> Path:
    """The first name of `eval-<benchmark>-<split>-<mode>[-<n>].jsonl` not taken in `folder`
    (the file is written when the evaluation ends, atomically)."""
    stem = f"eval-{benchmark}-{split}-{mode}"
    n = 1
    while True:
        path = folder / (f"{stem}.jsonl" if n == 1 else f"{stem}-{n}.jsonl")
        if not (path.exists() or path.is_symlink()):
            return path
        n += 1


def parse_name(stem: str) -> tuple[str, str, str]:
    """(benchmark, split, mode) of a result file's stem; a later evaluation's `-<n>` is shown
    with its mode (`mixture #2`)."""
    parts = stem.removeprefix("eval-").split("-")
    number = ""
    if len(parts) > 3 and parts[-1].isdigit() and parts[-2] in MODES:
        number = f" #{parts.pop()}"
    if len(parts) < 3:
        return "?", "?", stem
    return "-".join(parts[:-2]), parts[-2], parts[-1] + number
