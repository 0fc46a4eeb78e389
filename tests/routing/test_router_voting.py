"""`agent.aggregate: vote` through `assembly.make_agent`: the top m skills by familiarity each
answer alone and the familiarity-weighted majority wins, at m agent calls per task.

The world: three skills, each answering an offline-benchmark task right except on its own
third of the tasks (skill i is wrong on task j when j mod 3 = i), so any one skill alone is
right on 2/3 of the tasks and a majority of the three on all of them.
"""

from __future__ import annotations

import asyncio
import re

import numpy as np
import pytest

from moscopt.agent.evaluate import run_tasks
from moscopt.app.assembly import make_agent
from moscopt.benchmarks import Benchmark, Task, get_benchmark
from moscopt.config import load_config
from moscopt.core.skills import Pool, Skill
from moscopt.embedding.hashing import HashingEmbedder
from moscopt.errors import UserError
from moscopt.lm.base import LMRequest
from moscopt.routing.familiarity import FamiliarityModel, Hyper
from moscopt.routing.features import FeatureCache
from moscopt.routing.gate import FixedSkills
from moscopt.routing.projection import Projection
from moscopt.routing.router import FamiliarityRouter
from moscopt.routing.voting import VotingAgent
from moscopt.testing import FakeLM

SKILLS = ("alpha", "beta", "gamma")
_SKILL = re.compile(r"^## Skill: (\S+)", re.MULTILINE)


@pytest.fixture(scope="module")
def bench() -> Benchmark:
    return get_benchmark("offline")


@pytest.fixture(scope="module")
def tasks(bench: Benchmark) -> list[Task]:
    return list(bench.load(sizes={"train": 12, "val": 2, "test": 2})["train"])


def noisy_world(tasks: list[Task]) -> FakeLM:
    index = {t.prompt: i for i, t in enumerate(tasks)}
    gold = {t.prompt: str(t.gold) for t in tasks}

    def agent(request: LMRequest) -> str:
        system = str(request.messages[0]["content"])
        task = next(str(m["content"]) for m in request.messages if m["role"] == "user")
        (skill,) = _SKILL.findall(system)
        wrong = index[task] % 3 == SKILLS.index(skill)
        answer = f"not-{gold[task]}-{skill}" if wrong else gold[task]
        return f"Working with {skill}.\nFINAL ANSWER: {answer}"

    return FakeLM(routes={"agent": agent})


def pool() -> Pool:
    return Pool(skills=tuple(Skill(name=n, description=f"{n} tasks", body=n) for n in SKILLS))


def router(tasks: list[Task], familiarity: list[float]) -> FamiliarityRouter:
    """A deployment router whose heads give every task the familiarity `familiarity`:
    W_i = (1 - s_i) T_i makes the normalized distance s_i², so f_i = exp(-s_i²)."""
    embedder = HashingEmbedder(64)
    projection = Projection.fit([embedder.encode(t.prompt) for t in tasks], 12)
    model = FamiliarityModel(projection=projection, seed=0, hyper=Hyper(k_max=1), names=SKILLS)
    s = np.sqrt(-np.log(np.array(familiarity, np.float32)))
    model.weight = ((1.0 - s)[:, None, None] * model.target).astype(np.float32)
    return FamiliarityRouter(model, FeatureCache(embedder), SKILLS)


def evaluate(agent: object, tasks: list[Task]) -> float:
    rollouts = asyncio.run(run_tasks(agent, tasks, concurrency=4))  # type: ignore[arg-type]
    return sum(r.reward for r in rollouts) / len(rollouts)


def test_the_vote_fixes_a_noisy_single_skill_at_m_calls_per_task(
    bench: Benchmark, tasks: list[Task]
) -> None:
    familiar = router(tasks, [0.6, 0.5, 0.4])
    single_lm = noisy_world(tasks)
    off = load_config(None, {})
    single = make_agent(off, bench, pool(), familiar, single_lm, tasks=tasks)
    assert not isinstance(single, VotingAgent)  # off by default
    assert evaluate(single, tasks) == pytest.approx(2 / 3)  # alpha alone: wrong on a third
    assert single_lm.purposes.count("agent") == len(tasks)

    vote_lm = noisy_world(tasks)
    on = load_config(None, {"agent.aggregate": "vote", "agent.vote_m": 3})
    voting = make_agent(on, bench, pool(), familiar, vote_lm, tasks=tasks)
    assert isinstance(voting, VotingAgent)
    rollouts = asyncio.run(run_tasks(voting, tasks, concurrency=4))
    assert all(r.reward == 1.0 for r in rollouts)
    assert vote_lm.purposes.count("agent") == 3 * len(tasks)  # m calls per task
    assert all(r.calls == 3 and r.activation == "vote" for r in rollouts)
    assert all(r.skills == SKILLS for r in rollouts)  # by familiarity
    wrong_alpha = rollouts[0]  # task 0: alpha (the most familiar) is outvoted
    assert wrong_alpha.extra["vote"]["answers"][0].startswith("not-")
    assert wrong_alpha.extra["vote"]["winner"] == "beta"


def test_familiarity_weights_the_vote(bench: Benchmark, tasks: list[Task]) -> None:
    """Two voters that disagree: the more familiar one wins, whatever the order."""
    lm = noisy_world(tasks)
    config = load_config(None, {"agent.aggregate": "vote", "agent.vote_m": 2})
    agent = make_agent(config, bench, pool(), router(tasks, [0.3, 0.9, 0.2]), lm)
    rollout = asyncio.run(agent.run(tasks[1]))  # beta wrong on task 1, alpha right
    assert rollout.skills == ("beta", "alpha") and rollout.reward == 0.0
    assert rollout.extra["vote"]["winner"] == "beta"


def test_the_vote_needs_a_router_that_ranks_by_familiarity(
    bench: Benchmark, tasks: list[Task]
) -> None:
    config = load_config(None, {"agent.aggregate": "vote"})
    with pytest.raises(UserError, match="familiarity"):
        make_agent(config, bench, pool(), FixedSkills(("alpha",), "single"), noisy_world(tasks))
