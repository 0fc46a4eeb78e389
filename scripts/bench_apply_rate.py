"""How many of the embedded model's edit operations apply: anchors free vs from an enum.

    python scripts/bench_apply_rate.py [--skills 5] [--samples 2] [--max-tokens 400]

For each of the first `--skills` seed skills (`skills/*/SKILL.md`) and `--samples` sample
indices, EditAdam asks the embedded SmolLM2 for a bounded JSON proposal from the same fixed
failure analysis, twice: with free-text anchors (the schema's `anchor` is any string) and with
the skill's own unique lines as an enum (what `optimizer` does for grammar-constrained models).
Each proposal is applied to the skill with the anchor applier; the table counts the operations
proposed and applied, and the reasons the rest did not. No cache: every call is made.

`--max-tokens` caps a proposal (the trainer allows 2048; a 135M model rarely needs 400 for a
schema-constrained object, and the cap keeps the run short).
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import time

from moscopt.config import load_config
from moscopt.core.edits import ProposalError
from moscopt.core.resources import seed_skills_dir
from moscopt.core.skills import Pool
from moscopt.lm import build_lm
from moscopt.optimizer import editadam
from moscopt.optimizer.editadam import EditAdam
from moscopt.run.state import OptimizerState

ANALYSIS = (
    "The agent added the numbers correctly but forgot to convert minutes to hours before "
    "dividing, and it gave its final answer without checking the units. The skill should tell "
    "it to write the unit of every quantity and to check the unit of the final answer."
)


async def _measure(lm: object, skills: list, constrained: bool, samples: int) -> dict:
    counts: collections.Counter[str] = collections.Counter()
    config = load_config(None, {}).optimizer
    adam = EditAdam(lm, config, constrained=constrained)  # type: ignore[arg-type]
    for skill in skills:
        for sample in range(samples):
            state = OptimizerState(step_buffer=[f"(sample {sample})"] if sample else [])
            try:
                proposal = await adam.propose(
                    skill, state, analysis=ANALYSIS, scores="validation 0.40", max_edits=3
                )
            except ProposalError as e:
                counts[f"unusable proposal: {str(e)[:40]}"] += 1
                continue
            result = adam.apply(skill, proposal, 3).applied
            counts["proposals"] += 1
            for outcome in result.outcomes:
                counts["ops"] += 1
                applied = outcome.status == "applied"
                counts["applied" if applied else f"{outcome.status}: {outcome.reason[:28]}"] += 1
    return dict(counts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--skills", type=int, default=5)
    parser.add_argument("--samples", type=int, default=2)
    parser.add_argument("--max-tokens", type=int, default=400)
    args = parser.parse_args()
    editadam.PROPOSAL_TOKENS = args.max_tokens
    pool = Pool.load(seed_skills_dir(), require_gate=True)
    skills = list(pool.skills[: args.skills])
    config = load_config(None, {"llm.cache": False, "sampling.max_tokens": args.max_tokens})
    lm = build_lm(config, role="optimizer")
    print("| anchors | proposals | ops | applied | apply rate | other statuses | seconds |")
    print("|---|---|---|---|---|---|---|")
    try:
        for constrained in (False, True):
            started = time.perf_counter()
            c = asyncio.run(_measure(lm, skills, constrained, args.samples))
            ops, applied = c.get("ops", 0), c.get("applied", 0)
            other = ", ".join(
                f"{k} {v}"
                for k, v in sorted(c.items())
                if k not in ("ops", "applied", "proposals") and v
            )
            print(
                f"| {'enum of unique lines' if constrained else 'free text'} |"
                f" {c.get('proposals', 0)} | {ops} | {applied} |"
                f" {applied / ops if ops else 0:.0%} | {other or '-'} |"
                f" {time.perf_counter() - started:.0f} |",
                flush=True,
            )
    finally:
        lm.close()


if __name__ == "__main__":
    main()
