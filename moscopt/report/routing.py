"""The report's sections on routing and what it learned: the specialization of the familiarity
router's activations (`moscopt.routing.specialization`), the calibration of the fitted
execution-memory gates and halting controller (`moscopt.extensions.memory.training.describe`), and
the CODREAM transfer channels between skills (`moscopt.extensions.niches.summary`). Each section
appears only when the run has what it describes."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from moscopt.report.render import Block

if TYPE_CHECKING:
    from moscopt.extensions.memory.params import MemoryState
    from moscopt.run.rundir import RunDir
    from moscopt.run.state import RunState

MEMORY_MODELS = ("write", "retrieval", "halting")


def routing_blocks(run: RunDir, state: RunState) -> list[Block]:
    """The sections of the add-ons whose parts the run kept; their modules (numpy, the memory's
    models) are imported only then (`report.summary.ROUTER_PART`)."""
    from moscopt.extensions.niches.records import stored_niches
    from moscopt.report.summary import MEMORY_PART, ROUTER_PART

    blocks: list[Block] = []
    if ROUTER_PART in state.extensions:
        blocks += specialization_blocks(run_specialization_of(run))
    if MEMORY_PART in state.extensions:
        from moscopt.extensions.memory.params import stored_memory

        if (memory := stored_memory(state)) is not None:
            blocks += memory_blocks(memory)
    if stored_niches(state) is not None:
        from moscopt.extensions.niches.summary import niche_summary

        summary = niche_summary(state, run.load_pool(state).names)
        if summary is not None:
            blocks += transfer_blocks(summary["channels"])
    return blocks


def run_specialization_of(run: RunDir) -> dict[str, Any]:
    from moscopt.routing.specialization import run_specialization

    return run_specialization(run)


def specialization_blocks(spec: dict[str, Any]) -> list[Block]:
    blocks: list[Block] = [("h2", "Specialization of the familiarity router")]
    if spec.get("index") is None:
        return [*blocks, ("p", f"No index: {spec.get('reason') or 'no rollouts'}.")]
    epochs = ", ".join(f"epoch {e}: {v:.3f}" for e, v in spec["by_epoch"].items())
    blocks.append(
        (
            "p",
            f"Specialization index {spec['index']:.3f} (1: each skill works on one niche; 0: "
            f"every skill evenly on all){'; ' + epochs if epochs else ''}.",
        )
    )
    rows = [
        [niche, str(v["activations"]), v["top"], f"{v['share']:.2f}"]
        for niche, v in spec["niches"].items()
    ]
    if rows:
        blocks.append(("table", ["niche", "activations", "top skill", "its share"], rows))
    return blocks


def memory_blocks(memory: MemoryState) -> list[Block]:
    rows = []
    for name in MEMORY_MODELS:
        p = getattr(memory, name)
        if p is None:
            rows.append([name, "not fitted (untrained rule)", "-", "-", "-", "-"])
        else:
            rows.append(
                [
                    name,
                    str(p.examples),
                    f"{p.base_rate:.2f}",
                    f"{p.brier:.3f}",
                    f"{p.ece:.3f}",
                    f"{p.accuracy:.2f}",
                ]
            )
    return [
        ("h2", "Execution memory: calibration"),
        (
            "p",
            f"The gates and the halting controller as fitted from {memory.rollouts} rollouts "
            "(Brier score and expected calibration error on their examples).",
        ),
        ("table", ["model", "examples", "base rate", "Brier", "ECE", "accuracy"], rows),
    ]


def transfer_blocks(channels: list[dict[str, Any]]) -> list[Block]:
    blocks: list[Block] = [("h2", "Insight transfer channels")]
    if not channels:
        return [*blocks, ("p", "No insight was routed between skills.")]
    blocks.append(
        (
            "p",
            "CODREAM insights from a giver (strong on a niche) to a recipient (weak there): "
            "routed, and adopted by an accepted edit.",
        )
    )
    rows = [[c["giver"], c["recipient"], str(c["routed"]), str(c["adopted"])] for c in channels]
    blocks.append(("table", ["giver", "recipient", "routed", "adopted"], rows))
    return blocks
