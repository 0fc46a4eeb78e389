"""The study's plot (matplotlib, the `report` extra): accuracy and the paired differences."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any


def plot_table(table: dict[str, Any], out: Path) -> Path | None:
    """Write `out` (PNG): left, test accuracy with its 95% interval per configuration; right,
    the paired difference to full with its interval. None (nothing written) without matplotlib
    or without a finished row."""
    rows = [r for r in table["rows"] if "accuracy" in r]
    if not rows:
        return None
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    from moscopt.run.fsio import atomic_write_bytes

    names = [r["configuration"] for r in rows][::-1]
    acc = [r["accuracy"] for r in rows][::-1]
    diffs = [r.get("difference") for r in rows][::-1]
    y = list(range(len(rows)))
    fig, (left, right) = plt.subplots(
        1, 2, figsize=(10, 0.45 * len(rows) + 1.5), sharey=True, constrained_layout=True
    )
    means = [a["mean"] for a in acc]
    left.errorbar(
        means,
        y,
        xerr=[[max(0.0, m - a["ci95"][0]) for m, a in zip(means, acc, strict=True)],
              [max(0.0, a["ci95"][1] - m) for m, a in zip(means, acc, strict=True)]],
        fmt="o",
        capsize=3,
    )  # fmt: skip
    left.set_yticks(y, names)
    left.set_xlabel("test accuracy (95% CI)")
    left.set_xlim(-0.02, 1.02)
    for i, d in enumerate(diffs):
        if d is None:
            right.plot([0], [i], marker="s", color="black")
            continue
        colour = {"better": "tab:green", "worse": "tab:red"}.get(d["verdict"], "tab:gray")
        lo, hi = d["ci95"]
        err = [[max(0.0, d["mean"] - lo)], [max(0.0, hi - d["mean"])]]
        right.errorbar([d["mean"]], [i], xerr=err, fmt="o", color=colour, capsize=3)
    right.axvline(0.0, color="black", linewidth=0.8)
    right.set_xlabel("paired difference to full (95% CI)")
    fig.suptitle(f"{table['kind']} on {table['benchmark']}: {table['budget_calls']} calls, "
                 f"seeds {', '.join(map(str, table['seeds']))}")  # fmt: skip
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=110)
    plt.close(fig)
    atomic_write_bytes(out, buffer.getvalue())
    return out
