"""The study's statistics: units per seed and task, the paired sign-flip interval, verdicts."""

from __future__ import annotations

import json
import random
from pathlib import Path

from moscopt.study.paired import EXACT_UNITS, accuracy, difference, load_rows, units


def rows(rewards: dict[str, list[float]]) -> dict[tuple[str, int], float]:
    return {(task, s): r for task, rs in rewards.items() for s, r in enumerate(rs)}


def test_a_unit_is_a_task_under_a_seed_averaged_over_its_samples() -> None:
    by_seed = {1: rows({"a": [1, 0, 1, 1], "b": [0, 0, 0]}), 2: rows({"a": [1, 1, 1]})}
    assert units(by_seed) == {(1, "a"): 0.75, (1, "b"): 0.0, (2, "a"): 1.0}
    acc = accuracy(by_seed)
    assert acc.units == 3 and abs(acc.mean - 1.75 / 3) < 1e-12
    assert acc.low < acc.mean < acc.high and acc.per_seed == {1: 0.375, 2: 1.0}


def test_identical_results_are_identical_not_a_tie_with_an_interval() -> None:
    same = {0: rows({"a": [1, 0, 1], "b": [0, 1, 1]})}
    d = difference(same, same)
    assert d.verdict == "identical" and (d.mean, d.low, d.high) == (0.0, 0.0, 0.0)


def test_pairs_use_only_the_sample_indices_both_evaluated() -> None:
    cand = {0: rows({"a": [1, 1, 1, 1, 0]})}  # sample 4 only in the candidate
    ref = {0: rows({"a": [1, 1, 1, 1]})}
    assert difference(cand, ref).verdict == "identical"


def test_six_units_of_one_sign_are_worse_and_fewer_cannot_be_told_apart() -> None:
    full = {s: rows({"a": [1, 1, 1], "b": [1, 1, 1]}) for s in range(3)}
    none = {s: rows({"a": [0, 0, 0], "b": [0, 0, 0]}) for s in range(3)}
    d = difference(none, full)
    assert d.verdict == "worse" and d.units == 6 and d.high < 0 and d.seeds_agreeing == 3
    assert d.low >= -1.0  # rewards in [0, 1]: the interval is kept within [-1, 1]
    assert abs(d.p_value - 2 / 64) < 1e-12  # exact: every sign flipped, two-sided
    two = difference({0: none[0]}, {0: full[0]})  # 2 units: p = 1/2 at best
    assert two.verdict == "indistinguishable" and two.low < 0 <= two.high


def test_noise_is_indistinguishable_and_a_real_gain_is_better() -> None:
    rng = random.Random(7)
    tasks = [f"t{i}" for i in range(40)]

    def draw(p: float) -> dict[int, dict[tuple[str, int], float]]:
        return {
            s: rows({t: [float(rng.random() < p) for _ in range(3)] for t in tasks})
            for s in range(3)
        }

    base = draw(0.5)
    assert difference(draw(0.5), base).verdict == "indistinguishable"
    better = difference(draw(0.9), base)
    assert better.verdict == "better" and better.low > 0 and better.seeds_agreeing == 3


def test_past_the_exact_limit_the_normal_approximation_agrees() -> None:
    rng = random.Random(3)
    n = EXACT_UNITS + 1
    cand = {0: {(f"t{i}", 0): float(rng.random() < 0.6) for i in range(n)}}
    ref = {0: {(f"t{i}", 0): float(rng.random() < 0.5) for i in range(n)}}
    big = difference(cand, ref)
    trimmed = difference(
        {0: dict(list(cand[0].items())[:EXACT_UNITS])},
        {0: dict(list(ref[0].items())[:EXACT_UNITS])},
    )
    assert big.verdict == trimmed.verdict == "better"
    assert abs((big.high - big.low) - (trimmed.high - trimmed.low)) < 0.01


def test_load_rows_reads_an_eval_file(tmp_path: Path) -> None:
    path = tmp_path / "e.jsonl"
    path.write_text(
        "".join(json.dumps({"task_id": t, "sample": s, "reward": r}) + "\n" for t, s, r in
                [("a", 0, 1.0), ("a", 1, 0.0), ("b", 0, 1.0)])
    )  # fmt: skip
    assert load_rows(path) == {("a", 0): 1.0, ("a", 1): 0.0, ("b", 0): 1.0}
