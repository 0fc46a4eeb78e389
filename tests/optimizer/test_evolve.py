from __future__ import annotations

import asyncio
import json
import random
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from moscopt.config import Config, load_config
from moscopt.core.skills import Pool, Skill
from moscopt.lm.base import Completion, Message
from moscopt.optimizer.evolve import generated_names, new_skill, newborns, next_generation
from moscopt.run.state import RunState
from moscopt.testing import FakeLM

BODY = "# S\n\n1. Plan.\n2. Compute.\n3. Check.\n4. Answer.\n"
SAME = "# Same\n\n" + "Do the same careful thing every time.\n" * 20
BROKEN = "not json at all"


def child(name: str, body: str = BODY) -> str:
    return json.dumps({"name": name, "description": "A child.", "body": body + f"\n{name}\n"})


def distinct(name: str) -> str:
    """A body unlike every other skill's (so that no pair looks alike by accident)."""
    words = " ".join(f"{name}{i}" for i in range(40))
    return f"# {name}\n\n1. {words}\n2. {name[::-1]}\n3. {len(name)}\n4. done\n"


class ByPurpose(FakeLM):
    """A `FakeLM` answering `answer(purpose, sample)`, optionally after `delays[purpose]` turns
    of the event loop; it records `(purpose, sample)` per call and the peak of calls in flight."""

    def __init__(
        self, answer: Callable[[str, int], str], delays: Mapping[str, int] | None = None
    ) -> None:
        super().__init__()
        self.answer, self.delays = answer, dict(delays or {})
        self.calls: list[tuple[str, int]] = []
        self.in_flight = self.peak = 0

    async def acomplete(
        self,
        messages: Sequence[Message],
        *,
        schema: Mapping[str, Any] | None = None,
        sample: int = 0,
        purpose: str = "",
        temperature: float | None = None,
        top_p: float | None = None,
        max_tokens: int | None = None,
    ) -> Completion:
        self.in_flight += 1
        self.peak = max(self.peak, self.in_flight)
        try:
            for _ in range(self.delays.get(purpose, 0)):
                await asyncio.sleep(0)
            self.calls.append((purpose, sample))
            self.enqueue(self.answer(purpose, sample))
            return self.complete(messages, schema=schema, sample=sample, purpose=purpose)
        finally:
            self.in_flight -= 1


def named_by_purpose(purpose: str, sample: int) -> str:
    return child(purpose.removeprefix("evolve-"), distinct(purpose))


def make_pool(bodies: Mapping[str, str]) -> Pool:
    return Pool(skills=tuple(Skill(name=n, description="d", body=b) for n, b in bodies.items()))


def settings(**overrides: object) -> Config:
    values: dict[str, object] = {"pool.k": 1, "evolution.embedding_model": "difflib"}
    values["evolution.diversity_threshold"] = 1.0  # no diversity step unless a test asks
    return load_config(None, {**values, **overrides})


def evolve(
    lm: FakeLM, pool: Pool, state: RunState, config: Config, seed_dir: Path
) -> tuple[Pool, list[dict[str, Any]]]:
    seeds = Pool.load(seed_dir)
    return asyncio.run(next_generation(lm, pool, state, config, seeds, random.Random(0)))


def kinds(notes: list[dict[str, Any]]) -> list[str]:
    return [n["kind"] for n in notes]


def test_new_skill_is_validated_and_renamed() -> None:
    skill = new_skill(
        {"name": "Math Expert!", "description": "d", "body": BODY}, {"math-expert"}, "mutation"
    )
    assert skill.name == "math-expert-2" and skill.metadata == {"origin": "mutation"}
    for bad in ({"name": "x"}, {"name": "x", "description": "d", "body": "short"}, "[1]"):
        try:
            new_skill(bad, set(), "m")
        except (ValueError, TypeError):
            continue
        raise AssertionError(f"accepted {bad!r}")


def test_generation_replaces_eliminated_and_restores_diversity(seed_dir: Path) -> None:
    pool = make_pool({"a": SAME, "b": SAME, "c": SAME + "x\n"})
    state = RunState(
        q={"a": 0.9, "b": 0.1, "c": 0.5},
        activations={"a": 9, "b": 9, "c": 9},
        names_used=["a", "b", "c", "old"],
    )
    overrides = {"pool.n": 3, "evolution.diversity_threshold": 0.85, "evolution.fresh_skills": 1}
    config = settings(**overrides, **{"evolution.eliminate": 3})
    lm = FakeLM([child("kid", SAME), child("kid2", SAME), child("mutant"), child("fresh-one")])
    new, notes = evolve(lm, pool, state, config, seed_dir)
    assert kinds(notes) == [
        "eliminate", "eliminate", "mutate", "mutate", "diversity", "forced_mutation", "fresh"
    ]  # fmt: skip
    assert notes[0]["skill"] == "b" and notes[4]["similarity"] > 0.85
    assert notes[5]["replaced"] == "a" and notes[6]["error"].startswith("skipped")  # M = 3 spent
    assert sorted(new.names) == ["kid", "kid2", "mutant"]
    assert lm.purposes == ["evolve-mutate"] * 3


def test_a_cycle_replaces_at_most_m_skills_diversity_included(seed_dir: Path) -> None:
    """M = 1 and an offspring born: the diversity step has no place left (it replaced up to
    1 + fresh_skills more: 3 of 3 skills here)."""
    pool = make_pool({"a": SAME, "b": SAME, "c": SAME + "x\n"})
    q = {"a": 0.9, "b": 0.1, "c": 0.5}
    state = RunState(q=q, activations=dict.fromkeys(q, 9), names_used=["a", "b", "c"])
    overrides = {"pool.n": 3, "evolution.diversity_threshold": 0.85, "evolution.fresh_skills": 1}
    lm = FakeLM([child("kid", SAME), child("mutant"), child("fresh-one")])
    new, notes = evolve(lm, pool, state, settings(**overrides), seed_dir)
    assert kinds(notes) == ["eliminate", "mutate", "diversity", "forced_mutation"]
    assert notes[3]["skill"] is None and "already replaced M = 1" in notes[3]["error"]
    assert sorted(new.names) == ["a", "c", "kid"] and lm.purposes == ["evolve-mutate"]


def test_fresh_skills_and_forced_mutation_never_replace_newborns_or_protected(
    seed_dir: Path,
) -> None:
    # a and c are a protected pair; e is the only old, unprotected skill alike to the others
    bodies = {"a": SAME, "b": distinct("b"), "c": SAME + "c\n", "d": distinct("d")}
    pool = make_pool({**bodies, "e": SAME + "e\n", "f": distinct("f")})
    q = {"a": 0.9, "b": 0.1, "c": 0.5, "d": 0.2, "e": 0.3, "f": 0.35}
    activations = {**dict.fromkeys(q, 9), "e": 0, "f": 0}  # b and d only may be eliminated
    state = RunState(q=q, activations=activations, synergy={"a|c": 5})
    config = settings(  # M = 3: two offspring, then one place for the diversity step
        **{"pool.n": 6, "evolution.diversity_threshold": 0.0, "evolution.eliminate": 3}
    )

    def answer(purpose: str, sample: int) -> str:
        body = SAME if purpose == "evolve-crossover" else distinct(purpose)
        return child(purpose.removeprefix("evolve-"), body)

    lm = ByPurpose(answer)
    new, notes = evolve(lm, pool, state, config, seed_dir)
    by_kind = {n["kind"]: n for n in notes}
    assert by_kind["crossover"]["skill"] == "crossover"  # the child looks like a, c and e
    assert by_kind["forced_mutation"]["replaced"] == "e"
    assert by_kind["fresh"]["error"].startswith("skipped: this cycle already replaced M = 3")
    assert len(new) == 6 and {"a", "c", "crossover", "mutate", "f"} <= set(new.names)


def test_fresh_injection_is_skipped_when_no_skill_is_eligible(seed_dir: Path) -> None:
    pool = make_pool({"a": SAME, "b": distinct("b"), "c": SAME + "c\n"})
    state = RunState(
        q={"a": 0.9, "b": 0.1, "c": 0.5}, activations=dict.fromkeys("abc", 9), synergy={"a|c": 5}
    )
    config = settings(
        **{"pool.n": 3, "evolution.diversity_threshold": 0.0, "evolution.eliminate": 3}
    )
    new, notes = evolve(ByPurpose(named_by_purpose), pool, state, config, seed_dir)
    assert new.names == ["a", "c", "mutate"]  # the newborn survives
    skipped = [n for n in notes if n["kind"] in ("forced_mutation", "fresh")]
    assert [n["skill"] for n in skipped] == [None, None]
    assert all(n["error"].startswith("skipped") for n in skipped)


TWO = {"evolution.eliminate": 2}  # room for both offspring of the plan in one cycle


def pair_pool() -> tuple[Pool, RunState]:
    pool = make_pool({n: distinct(n) for n in "abcd"})
    q = {"a": 0.9, "b": 0.6, "c": 0.1, "d": 0.2}
    return pool, RunState(q=q, activations=dict.fromkeys(q, 9), synergy={"a|b": 2})


def test_each_cycle_replaces_exactly_m_skills_alternating_mutation_and_crossover(
    seed_dir: Path,
) -> None:
    """M = 1 (the paper's default): one skill replaced per cycle, even with co-breeding on; the
    cycles take turns in the plan (mutation, then crossover)."""
    pool, state = pair_pool()
    new, notes = evolve(ByPurpose(named_by_purpose), pool, state, settings(), seed_dir)
    assert kinds(notes) == ["eliminate", "mutate", "diversity"]
    assert notes[0]["skill"] == "c" and notes[1]["parents"] == ["a"]
    assert new.names == ["a", "b", "d", "mutate"]  # a pool is ordered by name
    state.epoch = 1
    new, notes = evolve(ByPurpose(named_by_purpose), pool, state, settings(), seed_dir)
    assert kinds(notes) == ["eliminate", "crossover", "diversity"]
    assert notes[1]["parents"] == ["a", "b"]
    assert new.names == ["a", "b", "crossover", "d"]
    state.epoch = 3  # every E = 2 epochs: epoch 3 is cycle 1 (crossover's turn)
    config = settings(**{"evolution.every": 2})
    _, notes = evolve(ByPurpose(named_by_purpose), pool, state, config, seed_dir)
    assert kinds(notes)[:2] == ["eliminate", "crossover"]


def test_m_of_two_mutates_the_top_skill_and_cobreeds_the_best_pair(seed_dir: Path) -> None:
    pool, state = pair_pool()
    config = settings(**{"evolution.eliminate": 2})
    new, notes = evolve(ByPurpose(named_by_purpose), pool, state, config, seed_dir)
    assert kinds(notes) == ["eliminate", "eliminate", "mutate", "crossover", "diversity"]
    assert [n["skill"] for n in notes[:2]] == ["c", "d"]
    assert [n["parents"] for n in notes[2:4]] == [["a"], ["a", "b"]]
    assert new.names == ["a", "b", "crossover", "mutate"]


def test_without_cobreeding_only_the_top_skill_is_reproduced(seed_dir: Path) -> None:
    pool, state = pair_pool()
    config = settings(**{"evolution.cobreed": False})
    new, notes = evolve(ByPurpose(named_by_purpose), pool, state, config, seed_dir)
    assert kinds(notes) == ["eliminate", "mutate", "diversity"]
    assert new.names == ["a", "b", "d", "mutate"]


def test_an_lm_that_fails_every_offspring_leaves_the_pool_at_n(seed_dir: Path) -> None:
    pool, state = pair_pool()
    config = settings(**{**TWO, "evolution.diversity_threshold": 0.0})
    lm = ByPurpose(lambda purpose, sample: BROKEN)
    new, notes = evolve(lm, pool, state, config, seed_dir)
    assert new.names == pool.names and new.digest() == pool.digest()
    assert kinds(notes)[:2] == ["eliminate_undone", "eliminate_undone"]
    for note in notes[2:4]:
        assert note["skill"] is None and note["error"] and note["attempts"] == 2
        assert note["fallback"] == "fresh" and note["fallback_error"]
    # every request was tried twice, the retry with the next sample index (not the cached one)
    tries = [("evolve-mutate", 0), ("evolve-mutate", 1), ("evolve-crossover", 0)]
    assert lm.calls[:4] == [*tries, ("evolve-crossover", 1)]
    assert generated_names(notes) == [] and newborns(notes) == []


def test_a_failed_offspring_is_retried_with_the_next_sample(seed_dir: Path) -> None:
    pool, state = pair_pool()

    def answer(purpose: str, sample: int) -> str:
        return BROKEN if sample == 0 else named_by_purpose(purpose, sample)

    new, notes = evolve(ByPurpose(answer), pool, state, settings(**TWO), seed_dir)
    assert new.names == ["a", "b", "crossover", "mutate"]  # a pool is ordered by name
    assert [(n["attempts"], n["error"]) for n in notes[2:4]] == [(2, None), (2, None)]


def test_an_offspring_failing_twice_is_replaced_by_a_fresh_seed_skill(seed_dir: Path) -> None:
    pool, state = pair_pool()

    def answer(purpose: str, sample: int) -> str:
        return BROKEN if purpose == "evolve-crossover" else named_by_purpose(purpose, sample)

    new, notes = evolve(ByPurpose(answer), pool, state, settings(**TWO), seed_dir)
    assert new.names == ["a", "b", "fresh", "mutate"] and len(new) == len(pool)
    crossover = notes[3]
    assert crossover["kind"] == "crossover" and crossover["skill"] == "fresh"
    assert crossover["fallback"] == "fresh" and crossover["seed"] in Pool.load(seed_dir).names
    assert new.get("fresh").metadata == {"origin": "fresh"}
    assert kinds(notes)[:2] == ["eliminate", "eliminate"]


def test_the_top_skill_for_reproduction_has_c_min_activations(seed_dir: Path) -> None:
    pool = make_pool({n: distinct(n) for n in "abcd"})
    # a's Q is one lucky success: b is the best skill whose Q can be trusted
    q = {"a": 1.0, "b": 0.8, "c": 0.1, "d": 0.2}
    state = RunState(q=q, activations={"a": 1, "b": 9, "c": 9, "d": 9})
    lm = ByPurpose(named_by_purpose)
    _, notes = evolve(lm, pool, state, settings(**{"credit.c_min": 5}), seed_dir)
    assert "name: b\n" in lm.history[0].messages[0]["content"]
    assert notes[1]["kind"] == "mutate" and notes[1]["parents"] == ["b"]


def test_generated_names_report_every_slug_of_the_cycle(seed_dir: Path) -> None:
    pool, state = pair_pool()
    state = state.model_copy(update={"names_used": ["a", "b", "c", "d", "mutate"]})
    new, notes = evolve(ByPurpose(named_by_purpose), pool, state, settings(**TWO), seed_dir)
    # "mutate" was used earlier in the run (e.g. by a rejected cycle): never given again
    assert generated_names(notes) == ["mutate-2", "crossover"] == newborns(notes)
    assert set(generated_names(notes)) <= set(new.names)


def test_offspring_are_asked_for_concurrently_and_named_in_plan_order(seed_dir: Path) -> None:
    pool, state = pair_pool()

    def same_name(purpose: str, sample: int) -> str:
        return child("child", distinct(purpose))

    # the mutation answers last: names and order still follow the plan (mutation first)
    lm = ByPurpose(same_name, delays={"evolve-mutate": 5})
    new, notes = evolve(lm, pool, state, settings(**TWO), seed_dir)
    assert lm.peak == 2 and [c[0] for c in lm.calls] == ["evolve-crossover", "evolve-mutate"]
    assert [(n["kind"], n["skill"]) for n in notes[2:4]] == [
        ("mutate", "child"),
        ("crossover", "child-2"),
    ]
    assert new.names == ["a", "b", "child", "child-2"]
    again, _ = evolve(ByPurpose(same_name), pool, state, settings(**TWO), seed_dir)
    assert again.digest() == new.digest()


def test_more_eliminations_than_the_plan_repeat_it_with_new_samples(seed_dir: Path) -> None:
    pool = make_pool({n: distinct(n) for n in "abcde"})
    q = {"a": 0.9, "b": 0.6, "c": 0.1, "d": 0.2, "e": 0.3}
    state = RunState(q=q, activations=dict.fromkeys(q, 9), synergy={"a|b": 2})
    lm = ByPurpose(lambda purpose, sample: child(f"{purpose}-{sample}", distinct(purpose)))
    new, notes = evolve(lm, pool, state, settings(**{"evolution.eliminate": 3}), seed_dir)
    assert [n["skill"] for n in notes[:3]] == ["c", "d", "e"]
    assert lm.calls == [("evolve-mutate", 0), ("evolve-crossover", 0), ("evolve-mutate", 2)]
    assert len(new) == 5 and newborns(notes) == [
        "evolve-mutate-0",
        "evolve-crossover-0",
        "evolve-mutate-2",
    ]
