"""`NicheWorld`: tasks from several families, each solvable only when one specific skill is
active; a loopback world for routers (tests, `scripts/bench_router.py`).

The pool has one specialist skill per family (its body carries a marker sentence) and some
generalists that solve nothing. An agent call succeeds when the system prompt holds the task's
specialist marker, and then with probability `p_solve`: a fixed draw per (task, sample index),
so every router faces the same coins and an oracle router scores exactly the fraction of coins
that came up. A gate call (a request under the activation schema: `gating.output: json`) is
answered by a fake LLM gate that names the task's specialist, if the table offers it, with
probability `gate_accuracy` (always, if the gate skill holds the family's `route_rule`), and
fills the other ids by a hashed draw: the answer depends only on (task, sample, ids offered,
gate skill). `gate_learning_routes` is an optimizer that learns those rules from the routing
cases it is shown, so gate editing has something to find (`scripts/bench_hybrid_gate.py`).

`respond` serves `FakeLM` routes; calling the world serves `FakeServer` (the request body).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from moscopt.benchmarks.tasks import Task
from moscopt.core.evidence import case_text
from moscopt.core.skills import Pool, Skill
from moscopt.routing.gate import Activation, schema_answer, schema_ids

WRONG = "unknown"
DESCRIPTIONS = {
    "basics": "One-step arithmetic on two small numbers (a + b, a - b, a * b).",
    "arithmetic": "Multi-step arithmetic expressions with several operations and parentheses.",
    "units": "Unit conversions (kilometers, meters, hours, minutes, kilograms, feet, inches).",
    "dates": "Calendar arithmetic: weekdays of dates, dates a number of days after another.",
    "counting": "Counting how many times a letter appears in a word.",
    "reversal": "Reversing words and the letters of words.",
}


def marker(family: str) -> str:
    return f"Specialist method for {family} tasks, step by step."


def specialist_name(family: str) -> str:
    return f"{family}-specialist"


def route_rule(family: str) -> str:
    """The gate-skill line that makes the world's gate always name the family's specialist."""
    return f"Send {family} tasks to {specialist_name(family)}."


_RULE_RE = re.compile(r"Send ([a-z]+) tasks to [a-z]+-specialist\.")  # the family


def niche_pool(families: Sequence[str], generalists: int, gate: Skill | None) -> Pool:
    """One specialist per family, then `generalists` skills that solve nothing, and `gate`."""
    skills = []
    for family in families:
        description = DESCRIPTIONS.get(family, f"Tasks of the {family} family.")
        body = f"# {family.title()} specialist\n\n{marker(family)}\n"
        skills.append(Skill(name=specialist_name(family), description=description, body=body))
    for i in range(generalists):
        name = f"generalist-{chr(ord('a') + i)}"
        body = f"# Generalist {i + 1}\n\nRead the task carefully, then answer.\n"
        skills.append(Skill(name=name, description="General problem solving.", body=body))
    return Pool(skills=tuple(skills), gate=gate)


def _unit(*parts: Any) -> float:
    digest = hashlib.sha256(json.dumps(parts).encode()).hexdigest()
    return int(digest[:15], 16) / 16**15


@dataclass
class NicheWorld:
    tasks: Sequence[Task]
    family_of: Callable[[Task], str] = field(default=lambda t: str(t.meta["family"]))
    p_solve: float = 0.9
    gate_accuracy: float = 0.8
    seed: int = 0
    base_seed: int = 0  # FakeServer: the request's seed is base_seed + sample
    _by_prompt: dict[str, Task] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._by_prompt = {t.prompt: t for t in self.tasks}
        for p in (self.p_solve, self.gate_accuracy):
            if not 0.0 <= p <= 1.0:
                raise ValueError(f"probabilities must be within [0, 1], got {p}")

    @property
    def families(self) -> list[str]:
        return sorted({self.family_of(t) for t in self.tasks})

    def specialist(self, task: Task) -> str:
        return specialist_name(self.family_of(task))

    def coin(self, task: Task, sample: int) -> bool:
        """Whether `task` is solved at `sample` when its specialist is active."""
        return _unit("solve", self.seed, task.id, sample) < self.p_solve

    def solves(self, task: Task, sample: int, system: str) -> bool:
        return marker(self.family_of(task)) in system and self.coin(task, sample)

    # -- the two kinds of call -------------------------------------------------------------------

    def answer(self, messages: Sequence[Mapping[str, Any]], schema: Any, sample: int) -> str:
        users = [str(m.get("content", "")) for m in messages if m.get("role") == "user"]
        system = "\n".join(str(m.get("content", "")) for m in messages if m.get("role") == "system")
        if schema is not None:
            return self._gate(users[-1] if users else "", system, schema, sample)
        task = self._by_prompt.get(users[-1] if users else "")
        if task is None or not self.solves(task, sample, system):
            return f"I am not sure.\nFINAL ANSWER: {WRONG}"
        return f"Worked it out.\nFINAL ANSWER: {task.gold}"

    def _gate(self, user: str, gate_skill: str, schema: Any, sample: int) -> str:
        ids, k = schema_ids(schema)
        task = next((t for p, t in self._by_prompt.items() if p in user), None)
        chosen: list[str] = []
        if task is not None:
            right = self.specialist(task)
            knows = route_rule(self.family_of(task)) in gate_skill
            lucky = _unit("gate", self.seed, task.id, sample) < self.gate_accuracy
            if right in ids and (knows or lucky):
                chosen.append(right)
        key = task.id if task is not None else user
        rest = sorted((i for i in ids if i not in chosen), key=lambda i: _unit("fill", key, i))
        chosen += rest[: k - len(chosen)]
        return json.dumps(schema_answer(schema, chosen))

    def respond(self, request: Any) -> str:
        """A `FakeLM` route (for both purposes, "gate" and "agent")."""
        return self.answer(request.messages, request.schema, request.sample)

    def __call__(self, body: dict[str, Any]) -> str:
        """The `FakeServer` responder."""
        messages = [m for m in body.get("messages", []) if isinstance(m, dict)]
        fmt = body.get("response_format") or {}
        schema = fmt.get("json_schema", {}).get("schema") if isinstance(fmt, dict) else None
        sample = int(body.get("seed") or 0) - self.base_seed
        return self.answer(messages, schema, sample)


class OracleRouter:
    """Activates exactly the task's specialist (the upper bound of any router at K = 1)."""

    def __init__(self, world: NicheWorld) -> None:
        self.world = world

    async def select(self, task_text: str, *, sample: int = 0) -> Activation:
        task = self.world._by_prompt.get(task_text)
        skills = (self.world.specialist(task),) if task is not None else ()
        return Activation(skills, "oracle")


# -- a training run in this world (trainer and export tests) -------------------------------------


def make_router_run(
    root: Path, seed_dir: Path, *, val: int = 6, **overrides: Any
) -> tuple[Any, ...]:
    """(run, config, benchmark, splits, seeds, world): offline tasks of the six families, one
    specialist per family and a generalist, `gating.policy: familiarity` over hashing features;
    `val` validation tasks."""
    from moscopt.benchmarks import get_benchmark
    from moscopt.config import load_config
    from moscopt.optimizer.engine import initial_state
    from moscopt.run.rundir import RunDir

    bench = get_benchmark("offline")
    sp = bench.load(sizes={"train": 24, "val": val, "test": 6})
    seeds = Pool.load(seed_dir, require_gate=True)
    world = NicheWorld(list(sp["all"]))
    pool = niche_pool(world.families, 1, seeds.gate)
    settings: dict[str, Any] = {
        "pool.n": len(pool),
        "pool.k": 2,
        "training.epochs": 2,
        "optimizer.minibatch": 4,
        "evolution.enabled": False,
        "gating.policy": "familiarity",
        "gating.output": "json",
        "router.embedding_model": "hashing",
        "llm.concurrency": 2,
        **overrides,
    }
    config = load_config(None, settings)
    run = RunDir.create(root / "run", config, pool, initial_state(config, pool, "offline", sp))
    return run, config, bench, sp, seeds, world


def trainer_routes(world: NicheWorld) -> dict[str, Callable[[Any], str]]:
    """`FakeLM` routes for training in `world`: edits never apply (their anchor matches
    nothing), so the pool stays as it is and only the router changes."""
    never = json.dumps(
        {"reasoning": "r", "edits": [{"op": "add", "anchor": "no such anchor", "content": "x"}]}
    )
    return {
        "agent": world.respond,
        "gate": world.respond,
        "reflect": lambda r: "- The agent lacked the family's method.",
        "merge": lambda r: "- The agent lacked the family's method.",
        "propose": lambda r: never,
        "memory": lambda r: "- Nothing applied.",
        "budget": lambda r: "L: 2",
    }


def _section(prompt: str, heading: str, until: str) -> str:
    """The prompt's text from its `## <heading>` line to its `## <until>` line (a skill's text
    in it has headings of its own)."""
    _, found, rest = prompt.partition(f"\n## {heading}")
    return rest.split(f"\n## {until}", 1)[0] if found else ""


def gate_learning_routes(world: NicheWorld) -> dict[str, Callable[[Any], str]]:
    """`trainer_routes`, plus an optimizer for the gate that learns from its routing cases: its
    reflection states the `route_rule` of each family among the failed tasks it is shown (only
    what it is shown: `moscopt.core.evidence.routing_cases`), merging keeps those lines, and its
    proposal adds the rules the gate does not hold yet (at most two per edit)."""
    shown = {case_text(t.prompt): t for t in world.tasks}

    def reflect(request: Any) -> str:
        text = str(request.messages[-1]["content"])
        cases = re.findall(r"^- task: (.*)$", text, re.MULTILINE)
        found = [shown[c.strip()] for c in cases if c.strip() in shown]
        families = dict.fromkeys(world.family_of(t) for t in found)
        return "\n".join(f"- {route_rule(f)}" for f in families) or "- No routing pattern."

    def merge(request: Any) -> str:
        families = dict.fromkeys(_RULE_RE.findall(str(request.messages[-1]["content"])))
        return "\n".join(f"- {route_rule(f)}" for f in families) or "- No routing pattern."

    def propose(request: Any) -> str:
        text = str(request.messages[-1]["content"])
        gate = _section(text, "The gating skill", "Scores")
        analyses = _section(text, "Routing analyses", "Edits already rejected")
        wanted = dict.fromkeys(_RULE_RE.findall(analyses))
        new = [f for f in wanted if route_rule(f) not in gate]
        edits = [{"op": "add", "anchor": "", "content": route_rule(f)} for f in new[:2]]
        return json.dumps({"reasoning": "route each family to its specialist", "edits": edits})

    return {
        **trainer_routes(world),
        "reflect-gate": reflect,
        "merge-gate": merge,
        "propose-gate": propose,
    }


def trained_router_run(root: Path, seed_dir: Path, **overrides: Any) -> tuple[Any, NicheWorld]:
    """`make_router_run`, trained to the end with a `FakeLM` of `trainer_routes`: (run, world)."""
    import asyncio

    from moscopt.app.workspace import make_trainer
    from moscopt.run.rundir import RunDir
    from moscopt.testing.fake_lm import FakeLM

    run, config, bench, sp, seeds, world = make_router_run(root, seed_dir, **overrides)
    lm = FakeLM(routes=trainer_routes(world))
    trainer = make_trainer(
        run=RunDir.open(run.path), config=config, benchmark=bench, splits=sp,
        agent_lm=lm, optimizer_lm=lm, seeds=seeds,
    )  # fmt: skip
    asyncio.run(trainer.train())
    return run, world
