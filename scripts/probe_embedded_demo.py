"""The demo task set (examples/acme-support) on the embedded model: seed vs fixed skill, and
whether the embedded optimizer proposes the fixing sentence.

    python scripts/probe_embedded_demo.py eval [--split test] [--samples 2] [--variants seed,fixed]
    python scripts/probe_embedded_demo.py propose [--trials 6]
    python scripts/probe_embedded_demo.py simulate REWARDS.json [--val 4,8,10] [--samples 2]

`eval`: every task of `--split` in examples/acme-support/tasks.jsonl (customers' questions whose
answer is an Acme fact: the support email or the phone number), answered by the embedded model
(`build_lm`, `local/smollm2`, one thread, `max_tokens` 128, the default temperature unless
`--temperature`) with the system prompt the harness builds from one skill, for each variant:

- seed:    examples/acme-support/skills/acme-support (the deficient seed: hours and refunds only);
- fixed:   examples/acme-support/fixed/acme-support (the seed + "Acme's support email is
           help@acme.example." and "Acme's phone number is 555-0100." as its last lines, where an
           optimizer's `add` at the end puts them);
- first:   the same two lines first in the body;
- oneline: the seed + one line with both facts ("Contact Acme support at ... or call ...");
- plain:   the seed + an optimizer-style instruction carrying both literals.

The reward is the task's rule checks' fraction met (the task file's `fraction` scoring); the table
gives each variant's mean, each check's pass rate, and the paired difference from the first
variant (per task, averaged over samples) with a 95% t-interval over tasks.

`propose`: EditAdam (the real `reflect` and `propose` prompts, grammar-constrained as for the
embedded model) on the seed skill, with two failed trajectories per trial (the seed's real
answers to two training tasks) whose feedback is the failed check as the lead plans to render it
(`Failed checks: must contain "help@acme.example" (gives Acme's support email, ...)`) instead of
an expected answer (`--direct`: no reflection, the failed checks themselves are the analysis
the proposal sees; `--short`: not moscopt's propose prompt but a short one, the skill and the
failed checks and one instruction, with the same constrained schema). Each trial shows different
tasks; the table counts the proposals that
applied, and those whose new body carries a required literal (and both).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from moscopt.agent.harness import system_prompt
from moscopt.config import Config, LLMConfig, SamplingConfig, load_config
from moscopt.core.edits import (
    Proposal,
    ProposalError,
    parse_proposal,
    proposal_schema,
    unique_lines,
)
from moscopt.core.skills import Skill
from moscopt.lm import build_lm
from moscopt.lm.base import Message
from moscopt.optimizer.editadam import EditAdam
from moscopt.run.state import OptimizerState

DATA = Path(__file__).resolve().parents[1] / "examples" / "acme-support"
FACTS = ["Acme's support email is help@acme.example.", "Acme's phone number is 555-0100."]
ONE_LINE = "Contact Acme support at help@acme.example or call 555-0100."
PLAIN = "Always give the support email help@acme.example and the phone number 555-0100."
T95 = {1: 12.71, 2: 4.30, 3: 3.18, 4: 2.78, 5: 2.57, 6: 2.45, 7: 2.36, 8: 2.31, 9: 2.26}


def t95(df: int) -> float:
    return T95.get(df, 2.23 if df < 15 else 2.13 if df < 20 else 2.09 if df < 30 else 2.0)


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load {one:.2f} {five:.2f} {fifteen:.2f}"


def tasks(split: str) -> list[dict[str, Any]]:
    rows = [json.loads(line) for line in (DATA / "tasks.jsonl").read_text().splitlines()]
    return [r for r in rows if r.get("split") == split]


def check(c: dict[str, Any], text: str) -> bool:
    """One rule check of the task-file format (the ops this data set uses, and a few more)."""
    op: str = c["op"]
    arg: Any = c.get("arg")
    flags = re.IGNORECASE if c.get("ignore_case") else 0
    if op in ("contains", "not_contains"):
        found = (arg.lower() in text.lower()) if flags else (arg in text)
        return found == (op == "contains")
    if op == "regex":
        return re.search(arg, text, flags) is not None
    if op == "section_present":
        heading = rf"^#{{1,6}}\s*{re.escape(arg)}\s*$"
        return re.search(heading, text, re.MULTILINE | re.IGNORECASE) is not None
    if op in ("max_chars", "min_chars"):
        return len(text) <= arg if op == "max_chars" else len(text) >= arg
    if op in ("max_words", "min_words"):
        words = len(text.split())
        return words <= arg if op == "max_words" else words >= arg
    raise ValueError(f"op {op!r} is not handled by this probe")


def skill_variant(name: str) -> Skill:
    seed = Skill.load(DATA / "skills" / "acme-support" / "SKILL.md")
    lines = seed.body.strip().splitlines()
    if name == "seed":
        return seed
    if name == "fixed":
        return Skill.load(DATA / "fixed" / "acme-support" / "SKILL.md")
    if name == "first":
        return seed.with_body("\n".join([*FACTS, *lines]))
    if name == "oneline":
        return seed.with_body("\n".join([*lines, ONE_LINE]))
    if name == "plain":
        return seed.with_body("\n".join([*lines, PLAIN]))
    raise ValueError(f"unknown variant {name!r}")


def interval(diffs: list[float]) -> str:
    mean = statistics.fmean(diffs)
    if len(diffs) < 2:
        return f"{mean:+.3f}"
    half = t95(len(diffs) - 1) * statistics.stdev(diffs) / len(diffs) ** 0.5
    return f"{mean:+.3f} [{mean - half:+.3f}, {mean + half:+.3f}]"


def run_eval(args: argparse.Namespace) -> None:
    config = Config(
        sampling=SamplingConfig(max_tokens=args.max_tokens, **_temperature(args)),
        llm=LLMConfig(threads=1),
    )
    lm = build_lm(config, cache_dir=_cache(args))
    rows = tasks(args.split)
    variants = [v for v in args.variants.split(",") if v]
    print(f"{len(rows)} {args.split} tasks x {args.samples} samples; {config.sampling}; {load()}")
    per_task: dict[str, list[float]] = {}
    dumped: dict[str, dict[str, list[float]]] = {}
    for variant in variants:
        system = system_prompt([skill_variant(variant)], [])
        assert system is not None
        rewards, passed, spent, made = [], [0, 0], 0.0, 0
        for row in rows:
            checks = row["judge"]["checks"]
            got = []
            for sample in range(args.samples):
                messages: list[Message] = [
                    {"role": "system", "content": system},
                    {"role": "user", "content": row["task"]},
                ]
                started = time.perf_counter()
                done = lm.complete(messages, sample=sample)
                if not done.cache_hit:
                    spent, made = spent + time.perf_counter() - started, made + 1
                ok = [check(c, done.text) for c in checks]
                passed = [p + o for p, o in zip(passed, ok, strict=False)]
                got.append(sum(ok) / len(ok))
                if args.show and sample == 0:
                    print(f"  [{variant} {row['task_id']} {ok}] {done.text.strip()[:160]!r}")
            rewards.append(statistics.fmean(got))
            dumped.setdefault(variant, {})[row["task_id"]] = got
        per_task[variant] = rewards
        n = len(rows) * args.samples
        rates = " ".join(f"check{i + 1} {p}/{n}" for i, p in enumerate(passed))
        paired = ""
        if variant != variants[0]:
            diffs = [a - b for a, b in zip(rewards, per_task[variants[0]], strict=True)]
            paired = f" | vs {variants[0]}: {interval(diffs)}"
        per = f"{spent / made:.2f} s/call" if made else "cached"
        mean = statistics.fmean(rewards)
        print(f"{variant:6} mean {mean:.3f} | {rates}{paired} | {per} | {load()}", flush=True)
    if args.dump:
        Path(args.dump).write_text(json.dumps(dumped, indent=1))


def run_simulate(args: argparse.Namespace) -> None:
    """How often moscopt's paired acceptance test (the default policy, 95%) accepts `fixed` over
    `seed`, on validation splits of `--val` tasks drawn from the measured tasks, each look's
    rewards drawn from that task's measured answers (a bootstrap of `eval --dump`'s rewards)."""
    import random

    from moscopt.optimizer.policies.acceptance import make_acceptance

    measured = json.loads(Path(args.rewards).read_text())
    seed, fixed = measured[args.incumbent], measured[args.candidate]
    ids = sorted(seed)
    rng = random.Random(0)
    for val in [int(v) for v in args.val.split(",")]:
        accepted = 0
        for _ in range(args.runs):
            chosen = rng.sample(ids, min(val, len(ids)))
            policy = make_acceptance("paired", max_samples=args.samples)
            incumbent, candidate = _drawn(seed, chosen, rng), _drawn(fixed, chosen, rng)
            verdict = asyncio.run(policy.decide(incumbent, candidate))
            accepted += verdict.accepted
        print(f"val {val} tasks, up to {args.samples} samples: accepted {accepted}/{args.runs}")


QUOTE = '"'  # `propose --quote none`: the literal without the quotes a JSON string ends at


def feedback(row: dict[str, Any]) -> str:
    """The failed checks of a task, rendered as the lead plans: literal and description."""
    check = row["judge"]["checks"][0]
    return f"Failed checks: must contain {QUOTE}{check['arg']}{QUOTE} ({check['description']})"


def evidence(rows: list[dict[str, Any]], replies: list[str]) -> str:
    """Failed trajectories as reflection would see them with the planned feedback."""
    parts = []
    for i, (row, reply) in enumerate(zip(rows, replies, strict=True), 1):
        parts.append(
            "\n".join(
                [
                    f"### Trajectory {i}: WRONG (reward 0.50)",
                    "Skills active: acme-support",
                    f"Task:\n{row['task']}",
                    f"Agent's final reply:\n{reply}",
                    feedback(row),
                ]
            )
        )
    return "\n\n".join(parts)


async def propose_trials(args: argparse.Namespace) -> None:
    config = load_config(None, {"llm.threads": 1, "llm.cache": False, **_temperature_set(args)})
    lm = build_lm(config, role="optimizer")
    adam = EditAdam(lm, config.optimizer, constrained=True)
    seed = skill_variant("seed")
    system = system_prompt([seed], [])
    assert system is not None
    rows = tasks("train")
    counts = {"trials": 0, "proposals": 0, "applied": 0, "email": 0, "phone": 0, "both": 0}
    print(f"{args.trials} trials; {load()}")
    started = time.perf_counter()
    for trial in range(args.trials):
        # an email and a phone task (the train split alternates them), other pairs after a lap
        lap = trial // (len(rows) // 2)
        shown = [rows[(2 * trial) % len(rows)], rows[(2 * trial + 1 + 2 * lap) % len(rows)]]
        state = OptimizerState()
        counts["trials"] += 1
        analysis: str | None
        if args.direct or args.short:  # no reflection: the failed checks are the analysis
            analysis = "\n".join(f"- Task: {r['task']} {feedback(r)}" for r in shown)
        else:
            analysis = await _reflect(adam, lm, system, seed, shown, state)
        try:
            if args.short:
                proposal = await _short_proposal(lm, seed, shown)
            else:
                proposal = await adam.propose(
                    seed, state, analysis=analysis, scores="validation 0.500", max_edits=2
                )
        except ProposalError as e:
            print(f"  trial {trial}: unusable proposal ({e})")
            continue
        counts["proposals"] += 1
        candidate = adam.apply(seed, proposal, 2)
        body = candidate.skill.body
        counts["applied"] += candidate.changed
        email, phone = "help@acme.example" in body, "555-0100" in body
        counts["email"] += email
        counts["phone"] += phone
        counts["both"] += email and phone
        print(f"  trial {trial}: analysis {(analysis or '')[:200]!r}")
        print(f"  trial {trial}: {proposal.summary(300)}", flush=True)
    took = time.perf_counter() - started
    print(" | ".join(f"{k} {v}" for k, v in counts.items()) + f" | {took:.0f} s | {load()}")


SHORT = """Skill:
{body}

The agent's answers failed these checks:
{checks}

Add one line to the skill that gives the agent what the checks require. Reply in JSON."""


async def _short_proposal(lm: Any, seed: Skill, shown: list[dict[str, Any]]) -> Proposal:
    """A short proposal prompt (not moscopt's): the skill, the failed checks, one instruction;
    the same grammar-constrained proposal schema."""
    checks = "\n".join(f"- {feedback(r).removeprefix('Failed checks: ')}" for r in shown)
    prompt = SHORT.format(body=seed.body.strip(), checks=checks)
    done = await lm.acomplete(
        [{"role": "user", "content": prompt}],
        schema=proposal_schema(2, unique_lines(seed.body)),
        purpose="propose-skill",
        max_tokens=600,
    )
    return parse_proposal(done.data if isinstance(done.data, dict) else done.text)


async def _reflect(
    adam: EditAdam,
    lm: Any,
    system: str,
    seed: Skill,
    shown: list[dict[str, Any]],
    state: OptimizerState,
) -> str | None:
    """The seed's real answers to `shown` (what reflection would see), then reflection."""
    replies = []
    for row in shown:
        msgs: list[Message] = [
            {"role": "system", "content": system},
            {"role": "user", "content": row["task"]},
        ]
        replies.append((await lm.acomplete(msgs, max_tokens=128, purpose="rollout")).text)
    return await adam.reflect(seed, [evidence(shown, replies)], state)


def _drawn(table: dict[str, list[float]], chosen: list[str], rng: Any) -> Any:
    """A `Rewards` callable: at every look, one measured reward per chosen task."""

    async def at(sample: int) -> list[float]:
        return [rng.choice(table[t]) for t in chosen]

    return at


def _temperature(args: argparse.Namespace) -> dict[str, float]:
    return {} if args.temperature is None else {"temperature": args.temperature}


def _temperature_set(args: argparse.Namespace) -> dict[str, float]:
    return {} if args.temperature is None else {"sampling.temperature": args.temperature}


def _cache(args: argparse.Namespace) -> Path:
    return Path(args.cache) if args.cache else Path(tempfile.mkdtemp(prefix="probe-demo-"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="mode", required=True)
    ev = sub.add_parser("eval")
    ev.add_argument("--split", default="test")
    ev.add_argument("--samples", type=int, default=2)
    ev.add_argument("--variants", default="seed,fixed")
    ev.add_argument("--max-tokens", type=int, default=128)
    ev.add_argument("--show", action="store_true")
    ev.add_argument("--dump", default="", help="write every reward to this JSON file")
    si = sub.add_parser("simulate")
    si.add_argument("rewards", help="a JSON file written by `eval --dump`")
    si.add_argument("--val", default="4,8,10")
    si.add_argument("--samples", type=int, default=2)
    si.add_argument("--runs", type=int, default=200)
    si.add_argument("--incumbent", default="seed")
    si.add_argument("--candidate", default="fixed")
    pr = sub.add_parser("propose")
    pr.add_argument("--trials", type=int, default=6)
    pr.add_argument("--direct", action="store_true", help="the failed checks as the analysis")
    pr.add_argument("--quote", choices=["double", "none"], default="double")
    pr.add_argument("--short", action="store_true", help="a short proposal prompt, no reflection")
    for p in (ev, pr):
        p.add_argument("--temperature", type=float, default=None)
        p.add_argument("--cache", default="")
    args = ap.parse_args()
    if args.mode == "eval":
        run_eval(args)
    elif args.mode == "simulate":
        run_simulate(args)
    else:
        global QUOTE
        QUOTE = '"' if args.quote == "double" else ""
        asyncio.run(propose_trials(args))


if __name__ == "__main__":
    main()
