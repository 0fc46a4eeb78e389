"""Rebuilding a run's pools from its events and checkpoints."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from moscopt.config import Config
from moscopt.core.skills import Pool
from moscopt.errors import UserError
from moscopt.run.history import History, skill_diff
from moscopt.run.ledger import EditEvent, GateRestored, TrainStart
from moscopt.run.rundir import RunDir
from moscopt.run.state import RunState
from moscopt.testing.scripted import MAGIC, VAGUE


def test_pools_follow_exactly_the_accepted_edits(scripted_run: RunDir) -> None:
    h = History.load(scripted_run)
    assert not h.warnings
    statuses = [(e.step, e.target, e.status) for e in h.edits if e.target == "careful-computation"]
    assert statuses == [
        (0, "careful-computation", "rejected"),
        (1, "careful-computation", "accepted"),
    ]
    # one accepted edit: two pools; the rejected edit at step 0 changes nothing
    assert [(v.step, v.cause) for v in h.versions] == [(None, "start"), (1, "edit")]
    assert h.pool_at(0) == h.initial_pool
    assert MAGIC not in h.initial_pool.get("careful-computation").body
    assert h.pool_at(1).get("careful-computation").body.rstrip().endswith(MAGIC)
    assert h.pool_at(h.last_step) == h.current_pool() == scripted_run.load_pool()

    diff = skill_diff(h, "careful-computation", None, None)
    added = [x for x in diff.text.splitlines() if x.startswith("+") and not x.startswith("+++")]
    removed = [x for x in diff.text.splitlines() if x.startswith("-") and not x.startswith("---")]
    assert added == ["+", f"+{MAGIC}"] and removed == []
    assert VAGUE not in diff.text  # the rejected edit never shows
    assert diff.text.startswith("--- a/careful-computation/SKILL.md (start)\n")
    assert skill_diff(h, "careful-computation", 0, 0).text == ""  # nothing accepted by step 0
    assert skill_diff(h, "careful-computation", 0, 1).text == diff.text.replace(
        "(start)", "(step 0)"
    ).replace(f"(step {h.last_step})", "(step 1)")
    untouched = skill_diff(h, "detail-verifier", None, None)
    assert untouched.text == "" and "no change" in untouched.notes[0]


def test_evolution_is_replayed_from_its_checkpoint(evolved_run: RunDir) -> None:
    h = History.load(evolved_run)
    assert not h.warnings
    kept = [e for e in h.evolutions if e.accepted]
    assert kept and len(kept[0].eliminated) == 1
    gone_name = kept[0].eliminated[0]
    # the top skill (careful-computation carries the rule) is a parent: never the one eliminated
    assert gone_name != "careful-computation"
    child = kept[0].added[0]
    assert [v.cause for v in h.versions] == ["start", "edit"] + ["evolution"] * len(kept)
    names = {p.name.split("-", 1)[1][:12] for p in evolved_run.checkpoints()}
    assert all(v.pool.digest()[:12] in names for v in h.versions)  # every pool was saved
    assert h.versions[-1].pool.digest() == h.state.pool_digest
    step = kept[0].step
    assert gone_name in h.pool_at(step - 1) and child not in h.pool_at(step - 1)
    assert gone_name not in h.pool_at(step) and child in h.pool_at(step)

    born = skill_diff(h, child, step - 1, step)
    assert born.text.startswith("--- /dev/null\n") and MAGIC in born.text
    assert "added by evolution" in born.notes[0]
    gone = skill_diff(h, gone_name, None, None)
    assert "+++ /dev/null" in gone.text and f"removed at step {step}" in gone.notes[0]
    with pytest.raises(UserError, match=f"from step {step} \\(added by evolution\\)"):
        skill_diff(h, child, 0, step - 1)


def test_steps_and_names_are_checked(scripted_run: RunDir) -> None:
    h = History.load(scripted_run)
    for args, message in [
        (("careful-computation", h.last_step + 1, None), "out of range"),
        (("careful-computation", None, -1), "out of range"),
        (("careful-computation", 2, 1), "--from 2 is after --to 1"),
        (("no-such-skill", None, None), "unknown skill 'no-such-skill'"),
    ]:
        with pytest.raises(UserError, match=message):
            skill_diff(h, *args)  # type: ignore[arg-type]


def synthetic_run(tmp_path: Path, seed_dir: Path) -> tuple[RunDir, Pool, Pool]:
    """A run whose gate was restored at step 2 (an event with no patch), saved by hand."""
    seeds = Pool.load(seed_dir, require_gate=True)
    pool = Pool(skills=seeds.skills[:2], gate=seeds.gate)
    state = RunState()
    run = RunDir.create(tmp_path / "run", Config(), pool, state)
    start = run.write_checkpoint(pool, 0)
    run.events.append(TrainStart(pool=pool.digest()[:12], n=2, checkpoint=start))
    assert pool.gate is not None
    restored = pool.replace(pool.gate.with_body(pool.gate.body + "\nRestored rule.\n"))
    state.step = 2
    checkpoint = run.write_checkpoint(restored, 2)
    run.events.append(GateRestored(epoch=0, step=2, checkpoint=checkpoint))
    run.save(state, restored)
    return run, pool, restored


def test_gate_restoration_and_unsaved_events(tmp_path: Path, seed_dir: Path) -> None:
    run, pool, restored = synthetic_run(tmp_path, seed_dir)
    # an event after the last save is work in flight: it does not count
    run.events.append(EditEvent(target="gate", status="accepted", step=2, patch=[{"op": "bad"}]))
    with open(run.events_path, "a") as f:
        f.write('{"type": "edit", "torn')  # a torn last line is skipped
    h = History.load(run)
    assert [(v.step, v.cause) for v in h.versions] == [(None, "start"), (2, "gate_restored")]
    assert h.pool_at(1) == pool and h.pool_at(2) == restored and not h.warnings
    assert "+Restored rule." in skill_diff(h, "gate", 1, 2).text
    assert [e.type for e in run.read_events(h.state)] == ["train_start", "gate_restored"]
    assert [e.to_json()["kind"] for e in h.entries] == ["gate_restored"]


def test_corrupt_event_line_names_file_and_line(tmp_path: Path, seed_dir: Path) -> None:
    run, _, _ = synthetic_run(tmp_path, seed_dir)
    lines = run.events_path.read_text().splitlines(keepends=True)
    run.events_path.write_text(lines[0] + "{not json\n" + lines[1])
    state = run.load_state()
    state.events_bytes = run.events_path.stat().st_size
    with pytest.raises(UserError, match=r"events.jsonl:2: bad JSON line"):
        run.read_events(state)


class Crash(Exception):
    pass


@pytest.mark.parametrize("crash_at", [20, 60])
def test_history_of_a_resumed_run_is_that_of_an_uninterrupted_one(
    tmp_path: Path, crash_at: int, scripted: Any
) -> None:
    calls = 0

    def crashing(request: Any) -> str:
        nonlocal calls
        calls += 1
        if calls == crash_at:
            raise Crash()
        return scripted.evolving(request)

    overrides = {"evolution.enabled": True, "credit.c_min": 1, "optimizer.margin": 0.6}
    with pytest.raises(Crash):
        scripted.train(tmp_path / "a", crashing, **overrides)
    run = scripted.train(tmp_path / "a", scripted.evolving, resume=True, **overrides)
    reference = scripted.train(tmp_path / "b", scripted.evolving, **overrides)
    h, ref = History.load(run), History.load(reference)
    assert not h.warnings and h.current_pool() == ref.current_pool()
    assert [(v.step, v.cause, v.pool) for v in h.versions] == [
        (v.step, v.cause, v.pool) for v in ref.versions
    ]
    assert [e.to_json() | {"t": ""} for e in h.entries] == [
        e.to_json() | {"t": ""} for e in ref.entries
    ]
