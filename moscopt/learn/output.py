"""Write mined tasks as a task file (the format of `moscopt train --tasks`), split.

Each task's split comes from a hash of its id (stable from one harvest to the next, so that a
task held out last night is not trained on tonight): about 20% `test`, 20% `val`, the rest
`train`; with 3 tasks or more, at least one of each (with fewer, all `train`). The `test`
tasks are written apart, to the held-out file (default: `<output stem>.heldout.jsonl`), for
`--held-out`; the main file holds `train` and `val`. Both are plain JSONL, one task a line,
for the user to read, edit and approve before anything is sent to a provider.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from moscopt.learn.mine import MinedTask
from moscopt.run.fsio import atomic_write_text, check_output_path

TEST_SHARE = 0.2
VAL_SHARE = 0.2


def _unit(task_id: str) -> float:
    return int(hashlib.sha256(task_id.encode()).hexdigest()[:12], 16) / 16**12


def splits(ids: list[str]) -> dict[str, str]:
    """task id -> "train" | "val" | "test"; see the module docstring."""
    out: dict[str, str] = {}
    if len(ids) < 3:  # too few to hold any out
        return dict.fromkeys(ids, "train")
    for i in ids:
        u = _unit(i)
        out[i] = "test" if u < TEST_SHARE else "val" if u < TEST_SHARE + VAL_SHARE else "train"
    for name in ("test", "val"):
        if name not in out.values():  # taken from the largest split
            sizes = {s: list(out.values()).count(s) for s in set(out.values())}
            largest = max(sizes, key=lambda s: (sizes[s], s == "train"))
            out[min((i for i in ids if out[i] == largest), key=_unit)] = name
    return out


def record(task: MinedTask, split: str) -> dict[str, Any]:
    out: dict[str, Any] = {"task_id": task.task_id, "task": task.task}
    if task.context:
        out["context"] = task.context
    out["split"] = split
    out["judge"] = task.judge
    out.update(task.meta)
    return out


def held_out_path(output: Path) -> Path:
    return output.with_name(output.stem + ".heldout.jsonl")


def write_tasks(
    tasks: list[MinedTask], output: Path, held_out: Path | None = None
) -> dict[str, int]:
    """Write `tasks` (train and val to `output`, test to `held_out`); the count per split."""
    held_out = held_out or held_out_path(output)
    if held_out.resolve() == output.resolve():
        raise ValueError("the held-out file must differ from the task file")
    check_output_path(output, replaced=True)
    check_output_path(held_out, replaced=True)
    split = splits([t.task_id for t in tasks])
    lines: dict[str, list[str]] = {"main": [], "test": []}
    counts = {"train": 0, "val": 0, "test": 0}
    for t in tasks:
        s = split[t.task_id]
        counts[s] += 1
        line = json.dumps(record(t, s), ensure_ascii=False, sort_keys=False)
        lines["test" if s == "test" else "main"].append(line)
    atomic_write_text(output, "".join(x + "\n" for x in lines["main"]))
    atomic_write_text(held_out, "".join(x + "\n" for x in lines["test"]))
    return counts
