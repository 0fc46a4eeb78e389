from __future__ import annotations

from moscopt.config import load_config
from moscopt.optimizer.policies.evolution_selection import EvolutionSelection
from moscopt.run.state import RunState

NAMES = ["a", "b", "c", "d"]


def selection(
    q: dict[str, float], acts: dict[str, int], synergy: dict[str, int] | None = None
) -> EvolutionSelection:
    return EvolutionSelection(
        q=q, activations=acts, synergy=synergy or {}, c_min=5, protect_above=3
    )


def test_eliminate_takes_the_lowest_q_ranked_unprotected_skills_and_never_a_parent() -> None:
    select = selection(
        {"a": 0.1, "b": 0.2, "c": 0.9, "d": 0.05}, {"a": 9, "b": 9, "c": 9, "d": 2}, {"a|c": 5}
    )
    # d is too young to rank, a is protected by its high-synergy pair with c
    assert select.eliminate(NAMES, 1) == ["b"]
    assert select.eliminate(NAMES, 3) == ["b"]  # fewer when fewer are eligible
    assert select.eliminate(NAMES, 1, keep={"b"}) == []
    assert select.eliminate(NAMES, 0) == []
    assert selection({"a": 0.1, "b": 0.2}, {"a": 9, "b": 9}).eliminate(NAMES, 2) == ["a", "b"]


def test_protection_needs_both_members_in_the_pool() -> None:
    select = selection({}, {}, {"a|c": 5, "b|d": 3})
    assert select.protected(NAMES) == {"a", "c"}  # 3 is not above the threshold
    assert select.protected(["a", "b"]) == set()


def test_best_pair_is_the_highest_synergy_among_the_names() -> None:
    select = selection({}, {}, {"a|c": 5, "b|c": 1, "a|b": 5})
    assert select.best_pair(NAMES) == ("a", "b")  # ties by key
    assert select.best_pair(["b", "c"]) == ("b", "c")
    assert select.best_pair(["b", "d"]) is None


def test_top_skill_is_chosen_among_ranked_skills_when_any_exist() -> None:
    # a has the best Q after one lucky activation: not trusted while b is ranked
    assert selection({"a": 1.0, "b": 0.8}, {"a": 1, "b": 9}).top_skill(["a", "b"]) == "b"
    assert selection({"a": 1.0, "b": 0.8}, {"a": 1, "b": 2}).top_skill(["a", "b"]) == "a"
    assert selection({}, {}).top_skill([]) is None


def test_forced_mutation_victim_is_never_protected_nor_a_newborn() -> None:
    select = selection({"a": 0.9, "b": 0.2, "c": 0.1, "kid": 0.0}, {}, {"a|c": 5})
    names = ["a", "b", "c", "kid"]
    # (a, c) is protected, (a, kid) has only a protected skill and a newborn: next pair
    pairs = [("a", "c"), ("a", "kid"), ("b", "kid"), ("b", "c")]
    assert select.forced_mutation_victim(pairs, names, {"kid"}) == "b"
    # both members free: the lower-Q one
    assert selection({"a": 0.9, "b": 0.2}, {}).forced_mutation_victim([("a", "b")], NAMES) == "b"
    assert select.forced_mutation_victim([("a", "c"), ("a", "kid")], names, {"kid"}) is None


def test_fresh_victims_are_ranked_unprotected_old_skills_lowest_q_first() -> None:
    select = selection(
        {"a": 0.1, "b": 0.2, "c": 0.9, "d": 0.05, "e": 0.3},
        {"a": 9, "b": 9, "c": 9, "d": 2, "e": 9},
        {"a|c": 5},
    )
    names = [*NAMES, "e", "kid"]
    assert select.fresh_victims(names, 2, newborns={"kid"}) == ["b", "e"]
    assert select.fresh_victims(names, 1, newborns={"kid", "b", "e"}) == []


def test_selection_reads_the_run_state_and_the_credit_config() -> None:
    state = RunState(q={"a": 0.5}, activations={"a": 2}, synergy={"a|b": 4})
    config = load_config(None, {"credit.c_min": 2, "credit.synergy_protect": 3})
    select = EvolutionSelection.of(state, config)
    assert select.ranked("a") and select.protected(["a", "b"]) == {"a", "b"}
