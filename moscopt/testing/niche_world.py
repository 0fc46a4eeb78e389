"""A world of niches for transfer tests and `scripts/bench_transfer.py`.

Tasks belong to niche A or B (`meta["family"]`, as the offline benchmark's tasks do). Each niche
has a rule; the agent answers a task right with probability `p_with` when the rule of its niche
is in the agent's system prompt (its activated skills) and `p_without` otherwise, drawn from a
hash of (task, sample index, rule present): a reworded skill without the rule gets exactly the
answers it got before. A right answer made with the rule states it (`Technique: <rule>`), as a
model following a playbook does, so the rule can be read from the successful trajectories.

The gate (K = 1) routes by niche and task index: A tasks go in turn to `routes["A"]` (alpha,
beta, gamma), B tasks to `routes["B"]` (beta, gamma, delta). Alpha holds rule A; beta, gamma
and delta hold rule B. So beta and gamma are weak on A and strong on B, delta never works on A.

The optimizer is scripted by purpose: reflection and CODREAM phases give generic text but carry
any `Technique:` line they are shown onwards; distillation turns it into an insight; a proposal
adds each routed insight it is shown (`moscopt.extensions.niches.hook`) and otherwise a harmless
generic sentence (which validation rejects: it changes no answer).

`routes()` serves `FakeLM(routes=...)` (gate, agent and optimizer); `__call__(body)` serves
`FakeServer` for the agent and the gate (with `gating.output: json`, the gate's request is the
one with a `response_format`).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from moscopt.benchmarks.tasks import Splits, Task
from moscopt.config import Config, load_config
from moscopt.core.skills import Pool, Skill
from moscopt.lm.base import LMRequest
from moscopt.routing.gate import schema_answer, schema_ids

RULES = {
    "A": "Before adding, reverse the digits of each number.",
    "B": "Before adding, add one to each number.",
}
ROUTES = {"A": ("alpha", "beta", "gamma"), "B": ("beta", "gamma", "delta")}
HOLDS = {"alpha": "A", "beta": "B", "gamma": "B", "delta": "B"}
GENERIC = "Read the task twice before answering."
WRONG = "unknown"
_TECHNIQUE = re.compile(r"Technique: ([^\n]+)")
_ROUTED = re.compile(r"^- \[niche (\S+), from (\S+)\] (.+)$", re.MULTILINE)


def gold(niche: str, a: int, b: int) -> str:
    if niche == "A":
        return str(int(str(a)[::-1]) + int(str(b)[::-1]))
    return str(a + b + 2)


def make_tasks(prefix: str, n_per_niche: int, start: int = 0) -> list[Task]:
    out = []
    for i in range(start, start + n_per_niche):
        for niche in ("A", "B"):
            a, b = 10 + 7 * i, 13 + 3 * i
            prompt = (
                f"[{prefix} {niche}{i}] Combine {a} and {b} the {niche} way.\n\n"
                "End with FINAL ANSWER: <n>"
            )
            out.append(
                Task(
                    f"{prefix}-{niche}{i}", "offline", prompt, gold(niche, a, b), {"family": niche}
                )
            )
    return out


def make_splits(train: int = 12, val: int = 24, test: int = 8) -> Splits:
    """Tasks per niche in each split (A and B alternate)."""
    return Splits(
        train=make_tasks("train", train), val=make_tasks("val", val), test=make_tasks("test", test)
    )


def make_pool(gate: Skill) -> Pool:
    skills = []
    for name, niche in HOLDS.items():
        body = f"# {name.title()}\n\nSolve the task step by step.\n\n{RULES[niche]}\n"
        skills.append(Skill(name=name, description=f"The {name} skill.", body=body))
    return Pool(skills=tuple(skills), gate=gate)


def world_config(*, transfer: bool, **overrides: Any) -> Config:
    """K = 1 of N = 4, evolution and gate editing off, niches tracked; `transfer` on or off."""
    base: dict[str, Any] = {
        "pool.n": 4,
        "pool.k": 1,
        "training.epochs": 3,
        "optimizer.minibatch": 4,
        "evolution.enabled": False,
        "evolution.embedding_model": "difflib",
        "gating.edit_steps": 0,
        "credit.c_min": 1,
        "niches.enabled": True,
        "niches.transfer": transfer,
        "niches.embedding_model": "hashing",
        "llm.concurrency": 4,
    }
    return load_config(None, {**base, **overrides})


@dataclass
class NicheWorld:
    tasks: Sequence[Task]
    p_with: float = 0.9
    p_without: float = 0.1
    base_seed: int = 0  # the seed moscopt sends over HTTP is config.seed + sample
    _by_prompt: dict[str, tuple[Task, int]] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        turn = {"A": 0, "B": 0}
        self._by_prompt = {}
        for t in self.tasks:
            niche = str(t.meta["family"])
            self._by_prompt[t.prompt] = (t, turn[niche])
            turn[niche] += 1

    # -- the agent and the gate ------------------------------------------------------------------

    def routed(self, task_text: str, names: Sequence[str]) -> str:
        """The skill the gate picks for the task (the niche's turn; else the first name)."""
        found = self._by_prompt.get(task_text)
        if found is None:
            return names[0]
        task, index = found
        choices = [n for n in ROUTES[str(task.meta["family"])] if n in names] or list(names)
        return choices[index % len(choices)]

    def succeeds(self, task: Task, sample: int, system: str) -> bool:
        has_rule = RULES[str(task.meta["family"])] in system
        key = json.dumps([task.prompt, sample, has_rule])
        u = int(hashlib.sha256(key.encode()).hexdigest()[:15], 16) / 16**15
        return u < (self.p_with if has_rule else self.p_without)

    def answer(self, task_text: str, system: str, sample: int) -> str:
        found = self._by_prompt.get(task_text)
        if found is None or not self.succeeds(found[0], sample, system):
            return f"I am not sure.\nFINAL ANSWER: {WRONG}"
        task = found[0]
        rule = RULES[str(task.meta["family"])]
        said = f"Technique: {rule}\n" if rule in system else ""
        return f"{said}Worked it out.\nFINAL ANSWER: {task.gold}"

    def gate_text(self, content: str, names: Sequence[str]) -> str:
        task = next((p for p in self._by_prompt if p in content), "")
        return f"ACTIVATE: {self.routed(task, names)}"

    def __call__(self, body: dict[str, Any]) -> str:
        """`FakeServer` responder for the agent and the gate."""
        messages = [m for m in body.get("messages", []) if isinstance(m, dict)]
        users = [str(m.get("content", "")) for m in messages if m.get("role") == "user"]
        fmt = body.get("response_format")
        if fmt:
            schema = fmt["json_schema"]["schema"]
            names, _ = schema_ids(schema)
            choice = self.gate_text(users[-1] if users else "", names).split(": ", 1)[1]
            return json.dumps(schema_answer(schema, choice.split(", ")))
        system = "\n".join(str(m.get("content", "")) for m in messages if m.get("role") == "system")
        sample = int(body.get("seed") or 0) - self.base_seed
        return self.answer(users[-1] if users else "", system, sample)

    # -- the scripted optimizer ------------------------------------------------------------------

    def routes(self) -> dict[str, Callable[[LMRequest], str]]:
        def last(r: LMRequest) -> str:
            return r.messages[-1]["content"]

        def system(r: LMRequest) -> str:
            return "\n".join(m["content"] for m in r.messages if m["role"] == "system")

        def names(r: LMRequest) -> list[str]:
            found = re.findall(r"^\| ([a-z0-9-]+) \|", last(r), re.MULTILINE)
            return [n for n in found if n != "id"] or list(HOLDS)

        def carry(r: LMRequest) -> str:
            found = _TECHNIQUE.findall(last(r))
            return f"The strong solutions state it. Technique: {found[0]}" if found else "(none)"

        def distill(r: LMRequest) -> str:
            found = _TECHNIQUE.findall(last(r))
            insights = [{"text": found[0], "scope": "niche"}] if found else []
            return json.dumps({"insights": insights})

        def propose(r: LMRequest) -> str:
            routed = [text for _, _, text in _ROUTED.findall(last(r))]
            contents = list(dict.fromkeys(routed)) or [GENERIC]
            edits = [{"op": "add", "anchor": "", "content": c} for c in contents[:2]]
            return json.dumps({"reasoning": "adopt what was learned", "edits": edits})

        return {
            "gate": lambda r: self.gate_text(last(r), names(r)),
            "agent": lambda r: self.answer(
                next(m["content"] for m in r.messages if m["role"] == "user"), system(r), r.sample
            ),
            "reflect": lambda r: "- The agent lacks the technique this kind of task needs.",
            "merge": lambda r: "- The agent lacks the technique this kind of task needs.",
            "propose": propose,
            "memory": lambda r: "- Adopting techniques routed from strong skills helped.",
            "budget": lambda r: "L: 2",
            "codream-diagnose": lambda r: "The skill lacks the key technique of this niche.",
            "codream-contrast": carry,
            "codream-imagine": carry,
            "codream-distill": distill,
        }


def stream_world(
    path: Path,
    seed_dir: Path,
    *,
    transfer: bool = True,
    n: int = 24,
    window: int = 8,
    hold_every: int = 4,
) -> Any:
    """Create (or reopen) a stream run of `n` tasks per niche in the niche world and run it to
    the end with a `FakeLM`; the `StreamOutcome`. A resumed call continues where it stopped."""
    import asyncio

    from moscopt.app.stream import StreamSettings, finish, write_stream_file
    from moscopt.app.workspace import make_stream
    from moscopt.benchmarks import get_benchmark
    from moscopt.optimizer.engine import initial_state
    from moscopt.run.rundir import RunDir
    from moscopt.testing import FakeLM

    seeds = Pool.load(seed_dir, require_gate=True)
    tasks = make_tasks("s", n)
    splits = Splits(train=tasks, val=[], test=[])
    config = world_config(transfer=transfer)
    resumed = (path / "state.json").exists()
    if not resumed:
        pool = make_pool(seeds.gate)  # type: ignore[arg-type]
        run = RunDir.create(path, config, pool, initial_state(config, pool, "offline", splits))
        settings = StreamSettings(window=window, hold_every=hold_every)
        write_stream_file(run, {"settings": settings.__dict__})
    lm = FakeLM(routes=NicheWorld(tasks).routes())
    stream = make_stream(
        run=RunDir.open(path),
        config=config,
        benchmark=get_benchmark("offline"),
        tasks=tasks,
        agent_lm=lm,
        optimizer_lm=lm,
        seeds=seeds,
        window=window,
        hold_every=hold_every,
    )
    settings = StreamSettings(window=window, hold_every=hold_every)
    return asyncio.run(finish(stream, settings, resumed))


if __name__ == "__main__":  # python -m moscopt.testing.niche_world RUN_DIR SEED_DIR
    import sys

    stream_world(Path(sys.argv[1]), Path(sys.argv[2]))
