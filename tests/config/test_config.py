from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from moscopt.app.project import config_template
from moscopt.config import Config, load_config
from moscopt.errors import UserError


def test_defaults_are_the_papers() -> None:
    c = Config()
    assert (c.pool.n, c.pool.k) == (10, 3)
    assert (c.evolution.eliminate, c.evolution.every) == (1, 1)
    assert (c.optimizer.l_max, c.optimizer.l_min) == (8, 2)
    assert c.optimizer.rejection_capacity == 10
    assert c.optimizer.summary_chars == 200
    assert (c.optimizer.minibatch, c.optimizer.merge_batch) == (4, 8)
    assert c.optimizer.p_val == 1.0
    assert c.credit.c_min == 5 and c.credit.beta == 0.3
    assert (c.sampling.temperature, c.sampling.top_p) == (0.8, 0.6)
    assert c.evolution.diversity_threshold == 0.85 and c.evolution.mutation_fraction == 0.5
    assert c.gating.enrich_epoch == 2 and c.gating.rebuild_threshold == 0.3
    assert c.gating.granularity == "task"
    assert c.model == "local/smollm2"


def test_template_spells_out_exactly_the_defaults(tmp_path: Path) -> None:
    path = tmp_path / "moscopt.yaml"
    path.write_text(config_template())
    assert load_config(path) == Config()
    # and mentions every key, so the template is complete documentation
    assert yaml.safe_load(config_template()) == Config().model_dump(mode="json")


def test_resolved_config_round_trips(tmp_path: Path) -> None:
    c = load_config(None, {"pool.k": 2, "model": "openai/gpt-4.1-mini"})
    path = tmp_path / "frozen.yaml"
    path.write_text(c.to_yaml())
    assert load_config(path) == c


def test_flags_override_file(tmp_path: Path) -> None:
    path = tmp_path / "moscopt.yaml"
    path.write_text("pool:\n  n: 6\n  k: 2\nseed: 7\n")
    c = load_config(path, {"pool.k": 4, "seed": None})
    assert (c.pool.n, c.pool.k, c.seed) == (6, 4, 7)


@pytest.mark.parametrize(
    ("text", "expect"),
    [
        ("pool:\n  n: 5\n  k: [1\n", ":3: not valid YAML"),
        ("seed: 1\nfoo: 2\n", ":2: field 'foo': unknown key"),
        ("pool:\n  n: 5\n  kk: 2\n", ":3: field 'pool.kk': unknown key"),
        ("pool:\n  n: 5\n  k: three\n", ":3: field 'pool.k': Input should be a valid integer"),
        ("seed: 1\npool:\n  n: 2\n  k: 3\n", ":2: field 'pool': K (3) must not exceed N (2)"),
        ("pool:\n  k: 0\n", ":2: field 'pool.k': Input should be greater than or equal to 1"),
        ("- a\n- b\n", ":1: must be a YAML mapping"),
        ("optimizer:\n  schedule: sometimes\n", "field 'optimizer.schedule'"),
        ("optimizer:\n  l_min: 9\n", "l_min (9) must not exceed l_max (8)"),
    ],
)
def test_bad_config_names_file_line_and_field(tmp_path: Path, text: str, expect: str) -> None:
    path = tmp_path / "moscopt.yaml"
    path.write_text(text)
    with pytest.raises(UserError) as e:
        load_config(path)
    assert str(e.value).startswith(str(path))
    assert expect in str(e.value)


def test_bad_flag_value_names_the_field() -> None:
    with pytest.raises(UserError, match=r"field 'pool': K \(20\) must not exceed N \(10\)"):
        load_config(None, {"pool.k": 20})


def test_missing_and_binary_config(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="file not found"):
        load_config(tmp_path / "nope.yaml")
    path = tmp_path / "moscopt.yaml"
    path.write_bytes(b"seed: \xff\n")
    with pytest.raises(UserError, match="not valid UTF-8"):
        load_config(path)


def test_empty_file_means_defaults(tmp_path: Path) -> None:
    path = tmp_path / "moscopt.yaml"
    path.write_text("# nothing\n")
    assert load_config(path) == Config()


def test_k_is_checked_against_the_loaded_pool_not_pool_n() -> None:
    """Regression: a folder of 3 skills with the default K = 3 ran with no gate and no
    warning, because the check read `pool.n` (10)."""
    from moscopt.app.assembly import pool_warnings
    from moscopt.errors import UserError

    with pytest.raises(UserError, match="select nothing"):
        pool_warnings(3, Config())
    assert pool_warnings(3, load_config(None, {"gating.policy": "all"})) == []  # asked for
    assert "K/N" in pool_warnings(6, load_config(None, {"pool.k": 5}))[0]
    assert pool_warnings(10, Config()) == []
    assert pool_warnings(1, load_config(None, {"pool.n": 1, "pool.k": 1})) == []
