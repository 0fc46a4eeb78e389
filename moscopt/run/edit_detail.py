"""An edit in full: what the ledger keeps of each proposed operation, the unified diff of the
skill it targeted, and the validation samples its decision rests on.

The trainer records, in the edit's one `edit` event (one `write`, so a line is whole or is a
torn tail readers skip): every operation as proposed (op, anchor, content, whether it applied
and why not), the diff of each targeted SKILL.md from the pool the edit was decided against to
the candidate, the digests of those two pools, and the per-task rewards of each validation
sample the decision used on each side. Every field is bounded: an anchor or a content at the
proposal parser's own limits, the diff at `DIFF_MAX_CHARS`, the samples at the acceptance
policy's most samples of the validation split, so a model that answers at length never makes
an unbounded line.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from typing import Any

from moscopt.core.edits import MAX_ANCHOR_CHARS, MAX_CONTENT_CHARS

DIFF_MAX_CHARS = 60_000  # a proposal's edits are bounded: their diff is far below this

NOT_RECORDED = "not recorded (the run was logged by an older moscopt)"


def bounded(text: str, limit: int) -> str:
    """`text`, cut at `limit` characters with a note of how many were left out."""
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n[... {len(text) - limit} more characters not recorded]"


def op_record(
    op: str, anchor: str, content: str, status: str, reason: str, target: str | None = None
) -> dict[str, Any]:
    """One proposed operation as the ledger keeps it (anchor and content in full, bounded)."""
    record: dict[str, Any] = {
        "op": op,
        "status": status,
        "reason": reason,
        "anchor": bounded(anchor, MAX_ANCHOR_CHARS),
        "content": bounded(content, MAX_CONTENT_CHARS),
    }
    if target is not None:
        record["target"] = target
    return record


def unified(name: str, old: str | None, new: str | None, old_label: str, new_label: str) -> str:
    """The unified diff of `name`'s SKILL.md from `old` to `new` (None: absent on that side)."""
    return "".join(
        difflib.unified_diff(
            (old or "").splitlines(keepends=True),
            (new or "").splitlines(keepends=True),
            fromfile=f"a/{name}/SKILL.md ({old_label})" if old is not None else "/dev/null",
            tofile=f"b/{name}/SKILL.md ({new_label})" if new is not None else "/dev/null",
        )
    )


def proposal_diff(changes: Iterable[tuple[str, str | None, str]], step: int) -> str:
    """The diffs of (name, text before, candidate text) against the pool at `step`, bounded."""
    text = "".join(unified(n, old, new, f"step {step}", "proposed") for n, old, new in changes)
    return bounded(text, DIFF_MAX_CHARS)


def full_lines(row: dict[str, Any]) -> list[str]:
    """The details of one edit (`EditEntry.to_json(full=True)` with its `samples`), as lines
    without the head line: what `log --full` prints indented under it and the report puts in a
    code block. Edits are numbered 1, 2, ... in log order over the whole run, the same with
    or without `log --skill`."""
    lines: list[str] = []
    if row["reasoning"]:
        lines.append("reasoning:")
        lines.extend(f"  {line}" for line in row["reasoning"].splitlines())
    d = row.get("decision")
    if d:
        lines.append(
            f"decision ({d['policy']}): {d['samples']} sample(s), {d['n']} paired, difference "
            f"{d['mean_diff']:+.3f} [{d['low']:+.3f}, {d['high']:+.3f}]: {d['reason']}"
        )
    samples = row.get("samples") or {}
    if d and not any(samples.values()):
        lines.append(f"  validation samples: {NOT_RECORDED}")
    elif d:
        lines.append("  per-task rewards of each validation sample (incumbent | candidate):")
    mine, theirs = samples.get("incumbent") or [], samples.get("candidate") or []
    for s in range(max(len(mine), len(theirs))):
        a = mine[s] if s < len(mine) else []
        b = theirs[s] if s < len(theirs) else []
        lines.append(f"    sample {s}: {_rewards(a)} | {_rewards(b)}")
    operations = row.get("operations") or []
    if operations:
        lines.append(f"operations ({len(operations)}):")
        for i, op in enumerate(operations, 1):
            lines.extend(_operation(i, op))
    elif row["status"] != "unusable":
        lines.append(f"operations: {NOT_RECORDED}")
    if row.get("diff"):
        lines.append("diff against the skill it targeted:")
        lines.extend(row["diff"].splitlines())
    elif row["status"] in ("accepted", "rejected"):
        lines.append(f"diff: {NOT_RECORDED} (`moscopt diff SKILL` shows accepted edits)")
    return lines


def _rewards(values: list[float]) -> str:
    """`0.500 (1 0 1 0)`: the mean, then each task's reward."""
    if not values:
        return "-"
    each = " ".join(f"{v:.2f}".rstrip("0").rstrip(".") for v in values)
    return f"{sum(values) / len(values):.3f} ({each})"


def _operation(i: int, op: dict[str, Any]) -> list[str]:
    target = f" on {op['target']}" if op.get("target") else ""
    why = f" ({op['reason']})" if op.get("reason") else ""
    lines = [f"  {i}. {op.get('op')}{target}: {op.get('status')}{why}"]
    if "anchor" not in op:
        return [*lines, f"     anchor and content: {NOT_RECORDED}"]
    for name in ("anchor", "content"):
        text = op.get(name) or ""
        if not text:
            lines.append(
                f"     {name}: (empty)" + (" = the end of the body" if name == "anchor" else "")
            )
            continue
        lines.append(f"     {name}:")
        lines.extend(f"       | {line}" for line in text.splitlines())
    return lines
