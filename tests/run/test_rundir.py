from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from moscopt.config import Config
from moscopt.core.skills import Pool
from moscopt.errors import UserError
from moscopt.run.ledger import EditEvent, LLMCall
from moscopt.run.ledger_read import read_events
from moscopt.run.rundir import RunDir
from moscopt.run.state import MIGRATIONS, SCHEMA_VERSION, Migration, RunState, migrate


@pytest.fixture
def run(tmp_path: Path, seed_dir: Path) -> RunDir:
    return RunDir.create(tmp_path / "runs" / "r1", Config(), Pool.load(seed_dir), RunState())


def test_create_writes_the_layout(run: RunDir, seed_dir: Path) -> None:
    for p in (run.config_path, run.state_path, run.cache_dir, run.exports_dir, run.checkpoints_dir):
        assert p.exists(), p
    assert run.load_config() == Config()
    state = run.load_state()
    assert state.schema_version == SCHEMA_VERSION and state.checkpoint is not None
    assert run.load_pool() == Pool.load(seed_dir)
    # skills/ is byte-identical to the seed library: the run's starting point diffs clean
    for f in seed_dir.glob("*/SKILL.md"):
        assert (run.skills_dir / f.parent.name / "SKILL.md").read_bytes() == f.read_bytes()


def test_create_refuses_an_existing_run(run: RunDir, seed_dir: Path) -> None:
    before = run.state_path.read_bytes()
    with pytest.raises(UserError, match="already holds a run"):
        RunDir.create(run.path, Config(), Pool.load(seed_dir), RunState(step=9))
    assert run.state_path.read_bytes() == before


def test_open_rejects_what_is_not_a_run(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="run directory not found"):
        RunDir.open(tmp_path / "nope")
    with pytest.raises(UserError, match="not a moscopt run directory"):
        RunDir.open(tmp_path)


def test_save_checkpoints_changed_pools_and_restores_drifted_skills(run: RunDir) -> None:
    state = run.load_state()
    pool = run.load_pool(state)
    first = state.checkpoint
    edited = pool.replace(pool.get("careful-computation").with_body("Be careful.\n"))
    state.step = 3
    run.save(state, edited)
    assert state.checkpoint != first and len(run.checkpoints()) == 2
    # simulate a kill after state.json was written but before skills/ was rewritten
    pool.dump(run.skills_dir, prune=True)
    restored = run.load_pool()
    assert restored == edited
    text = (run.skills_dir / "careful-computation" / "SKILL.md").read_text()
    assert text.endswith("\nBe careful.\n")


def test_unchanged_pool_makes_no_new_checkpoint(run: RunDir) -> None:
    state = run.load_state()
    run.save(state, run.load_pool(state))
    assert len(run.checkpoints()) == 1


def test_events_are_appended_and_read_back(run: RunDir) -> None:
    first = run.events.append(LLMCall(model="m", purpose="agent", prompt_tokens=3))
    second = run.events.append(EditEvent(target="a", status="rejected"))
    assert [e.type for e in read_events(run.events.path)] == ["llm_call", "edit"]
    (edit,) = read_events(run.events.path, kinds={"edit"})
    assert isinstance(edit, EditEvent) and edit.status == "rejected"
    assert [e.type for e in run.events.read_at([second, first])] == ["edit", "llm_call"]


def test_an_unknown_event_field_is_corruption_named_by_file_and_line(run: RunDir) -> None:
    run.events.append(EditEvent(target="a", status="rejected"))
    with open(run.events_path, "a") as f:
        f.write('{"type": "edit", "target": "a", "status": "rejected", "bogus": 1}\n')
    with pytest.raises(UserError, match=r"events.jsonl:2: bad event: edit.bogus"):
        read_events(run.events.path)


def test_bad_state_files(run: RunDir) -> None:
    run.state_path.write_text("{not json")
    with pytest.raises(UserError, match=r"state.json:1: not valid JSON"):
        run.load_state()
    run.state_path.write_text(json.dumps({"schema_version": 1, "bogus": 1}))
    with pytest.raises(UserError, match="field 'bogus': unknown key"):
        run.load_state()
    run.state_path.write_text(json.dumps({"schema_version": 99}))
    with pytest.raises(UserError, match="newer than this moscopt"):
        run.load_state()


def test_named_migrations_apply_in_order() -> None:
    def rename(d: dict) -> dict:
        d["count"] = d.pop("counter", 0)
        return d

    steps = [
        Migration("m002_rename_counter", rename),
        Migration("m003_add_flag", lambda d: {**d, "flag": True}),
    ]
    out = migrate({"schema_version": 1, "counter": 4}, steps)
    assert out == {"schema_version": 3, "count": 4, "flag": True}
    assert migrate(dict(out), steps) == out
    assert len(MIGRATIONS) == SCHEMA_VERSION - 1


def test_second_process_is_refused_by_the_lock(run: RunDir) -> None:
    root = Path(__file__).resolve().parents[2]
    probe = textwrap.dedent(
        f"""
        import sys
        sys.path.insert(0, {str(root)!r})
        from moscopt.errors import UserError
        from moscopt.run.rundir import RunDir
        try:
            with RunDir({str(run.path)!r}).locked():
                print("got lock")
        except UserError as e:
            print("refused:", e)
        """
    )
    with run.locked():
        out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True).stdout
        assert "refused: " in out and "another moscopt process" in out
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True).stdout
    assert "got lock" in out


def test_in_use_sees_a_holder_and_not_a_released_lock(run: RunDir) -> None:
    assert not run.in_use()
    with run.locked():
        assert run.in_use()
    assert not run.in_use()


def test_the_run_modules_import_where_there_is_no_fcntl() -> None:
    """As on Windows: `moscopt.run` imports without fcntl (the lock's module is imported where
    the lock is taken)."""
    code = (
        "import sys\n"
        "sys.modules['fcntl'] = None\n"
        "import moscopt.run.rundir, moscopt.run\n"
        "assert 'fcntl' not in sys.modules or sys.modules['fcntl'] is None\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
