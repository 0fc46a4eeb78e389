"""The study's frame: configurations as data, the manifest, and the calls a resume rewinds."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from moscopt.config import load_config
from moscopt.errors import UserError
from moscopt.study.accounting import RewoundCalls, ledger_spending
from moscopt.study.configurations import (
    ABLATE,
    CATALOG,
    FULL,
    ablate_names,
    compare_names,
)
from moscopt.study.layout import Manifest, StudyDir


def test_each_trained_ablation_changes_exactly_one_thing_and_is_a_valid_config() -> None:
    full = load_config(None, {"pool.n": 4, "pool.k": 2}).model_dump()
    for conf in CATALOG.values():
        if not conf.trains or conf.name == FULL:
            continue
        changed = load_config(None, {"pool.n": 4, "pool.k": 2, **conf.resolved(4)}).model_dump()
        sections = {k for k in full if full[k] != changed[k]}
        keys = {k.split(".")[0] for k in conf.overrides}
        assert sections == keys, conf.name
        assert len(conf.overrides) == 1 or conf.overrides.keys() <= {
            "pool.n",
            "pool.k",
            "gating.policy",
        }
    assert CATALOG["k-equals-n"].resolved(7) == {"gating.policy": "all", "pool.k": 7}


def test_the_ablate_and_compare_rows() -> None:
    assert ablate_names()[0] == FULL and set(ablate_names()) == set(ABLATE)
    # full, 12 ablations of Table 2 (K = 1 among them), static (top-Q), static-table,
    # distilled, no-skill
    assert len(ABLATE) == 17 and "k-equals-1" in ABLATE
    assert CATALOG["k-equals-1"].overrides == {"pool.k": 1}
    assert CATALOG["static"].mode == "topq" and CATALOG["static-table"].mode == "static"
    assert ablate_names(["no-skill", "static"]) == [FULL, "static", "no-skill"]
    assert compare_names("gepa") == [FULL, "gepa", "no-skill"]
    assert compare_names("none") == [FULL, "no-skill"]
    with pytest.raises(UserError, match="unknown configuration"):
        ablate_names(["nope"])
    with pytest.raises(UserError, match="--with"):
        compare_names("dspy")


def manifest(**changes: object) -> Manifest:
    data: dict[str, object] = {
        "kind": "ablate", "benchmark": "offline", "budget_calls": 50, "seeds": [1, 2],
        "configurations": [FULL, "no-skill"], "repeats": "auto", "config_digest": "d",
    }  # fmt: skip
    data.update(changes)
    return Manifest(**data)  # type: ignore[arg-type]


def test_a_study_continues_only_in_its_own_frame(tmp_path: Path) -> None:
    study = StudyDir(tmp_path / "s")
    assert study.open_or_create(manifest(), "model: a\n") is False
    assert study.open_or_create(manifest(), "model: a\n") is True
    with pytest.raises(UserError, match=r"budget_calls: 50 there, 60 now"):
        study.open_or_create(manifest(budget_calls=60), "model: a\n")
    with pytest.raises(UserError, match=r"config model"):
        study.open_or_create(manifest(config_digest="e"), "model: b\n")
    other = tmp_path / "busy"
    other.mkdir()
    (other / "x").write_text("x")
    with pytest.raises(UserError, match="holds no study"):
        StudyDir(other).open_or_create(manifest(), "")


def call(hit: bool = False, tokens: int = 3) -> str:
    event = {"type": "llm_call", "model": "m", "purpose": "agent", "prompt_tokens": tokens}
    if hit:
        event["cache_hit"] = True
    return json.dumps(event) + "\n"


def test_calls_a_resume_rewinds_are_counted_once(tmp_path: Path) -> None:
    events = tmp_path / "events.jsonl"
    saved = call() + call(hit=True)
    events.write_text(saved + call() + call() + '{"type": "llm_c')  # a torn last line
    assert ledger_spending(events).calls == 3
    rewound = RewoundCalls(tmp_path / "r.json")
    offset = len(saved.encode())
    assert rewound.note(events, offset).calls == 2
    assert rewound.note(events, offset).calls == 2  # killed again before the rewind: same part
    events.write_text(saved + call(hit=True) + call())  # rewound, replayed, one new call
    total = rewound.note(events, offset)
    assert total.calls == 3 and total.prompt_tokens == 9
