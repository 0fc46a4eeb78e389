"""The transcript readers on the real transcripts the CLIs wrote, and on malformed input."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from moscopt.errors import UserError
from moscopt.learn.harvest import harvest, parse_since
from moscopt.learn.readers import READERS, read_file
from moscopt.learn.sessions import MAX_TURN_CHARS, HarvestCounts

PROJECT = Path("/home/user/project")  # where the real transcripts were recorded (renamed)


def users(source: str, sessions_dir: Path) -> list[list[str]]:
    got = harvest(source, path=sessions_dir / source, project=PROJECT)
    return [[t.text for t in s.turns if t.role == "user"] for s in got.sessions]


def test_codex_rollouts_written_by_the_real_cli_read_as_request_then_correction(
    sessions_dir: Path,
) -> None:
    got = harvest("codex", path=sessions_dir / "codex", project=PROJECT)
    assert got.counts.sessions == 3 and not got.counts.skipped and got.counts.bad_lines == 0
    first = got.sessions[0]
    assert first.version == "0.171.0" and first.cwd == str(PROJECT)
    assert [t.role for t in first.turns] == ["user", "assistant", "user", "assistant"]
    # the environment context and instructions Codex inserts are not the user's words
    assert not any("<environment_context>" in t.text for s in got.sessions for t in s.turns)
    assert [u[0] for u in users("codex", sessions_dir)] == [
        "Write the weekly status report for the billing service",
        "Add retry logic to fetch_user in api.py",
        "Write the weekly status report for the search service",
    ]
    assert users("codex", sessions_dir)[0][1] == "no — always put the risks first"
    assert first.started is not None and first.started.tzinfo is not None


def test_claude_code_sessions_written_by_the_real_cli_read_without_inserted_text(
    sessions_dir: Path,
) -> None:
    got = harvest("claude-code", path=sessions_dir / "claude-code", project=PROJECT)
    assert got.counts.sessions == 3 and not got.counts.skipped
    assert {s.version for s in got.sessions} == {"2.1.197"}
    said = users("claude-code", sessions_dir)
    assert ["Write the weekly status report for the payments service",
            "no — always put the risks first"] in said  # fmt: skip
    texts = [t.text for s in got.sessions for t in s.turns]
    assert not any("<system-reminder>" in t for t in texts)


def test_the_project_and_the_window_scope_a_harvest(sessions_dir: Path, tmp_path: Path) -> None:
    other = harvest("codex", path=sessions_dir / "codex", project=tmp_path)
    assert other.counts.sessions == 0 and other.counts.skipped["other-project"] == 3
    inside = harvest("codex", path=sessions_dir / "codex", project=Path("/home/user"))
    assert inside.counts.sessions == 3  # the project folder holds the session's folder
    future = dt.datetime(2100, 1, 1, tzinfo=dt.UTC)
    late = harvest("codex", path=sessions_dir / "codex", project=PROJECT, since=future)
    assert late.counts.sessions == 0 and late.counts.skipped["too-old"] == 3


def test_default_folders_follow_the_clis_homes(
    sessions_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import shutil

    shutil.copytree(sessions_dir / "codex", tmp_path / "codex-home" / "sessions")
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "codex-home"))
    assert harvest("codex", project=PROJECT).counts.sessions == 3
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "nothing-here"))
    assert harvest("claude-code", project=PROJECT).counts.sessions == 0  # never used: no error


def test_since_accepts_dates_times_and_days() -> None:
    now = dt.datetime(2026, 3, 10, tzinfo=dt.UTC)
    assert parse_since("7d", now=now) == dt.datetime(2026, 3, 3, tzinfo=dt.UTC)
    assert parse_since("2026-01-31") == dt.datetime(2026, 1, 31, tzinfo=dt.UTC)
    with pytest.raises(UserError, match="--since"):
        parse_since("last tuesday")


@pytest.mark.parametrize(
    ("source", "content", "reason"),
    [
        ("claude-code", "not json at all\n", "malformed"),
        ("claude-code", "", "malformed"),
        ("claude-code", json.dumps({"type": "user", "message": "x"}) + "\n", "malformed"),
        (
            "claude-code",
            json.dumps({"type": "user", "version": "9.0.0", "message": {"content": "hi"}}) + "\n",
            "unknown-version",
        ),
        (
            "codex",
            json.dumps({"id": "x", "timestamp": "2025-01-01", "instructions": ""}) + "\n",
            "unknown-version",
        ),
        ("codex", json.dumps({"type": "response_item", "payload": {}}) + "\n", "malformed"),
        (
            "codex",
            json.dumps({"type": "session_meta", "payload": {"cli_version": "7.1.0"}}) + "\n",
            "unknown-version",
        ),
        ("jsonl", json.dumps({"messages": [], "version": 2}) + "\n", "unknown-version"),
        ("jsonl", "[1, 2]\n", "malformed"),
    ],
)
def test_a_bad_transcript_is_skipped_and_counted(
    tmp_path: Path, source: str, content: str, reason: str
) -> None:
    path = tmp_path / "rollout-x.jsonl"
    path.write_text(content)
    got = harvest(source, path=path)
    assert got.sessions == [] and got.counts.skipped[reason] == 1


def test_bad_lines_inside_a_good_transcript_are_counted_not_fatal(
    sessions_dir: Path, tmp_path: Path
) -> None:
    [real] = sorted((sessions_dir / "codex").rglob("*.jsonl"))[:1]
    lines = real.read_text().splitlines()
    broken = tmp_path / "rollout-broken.jsonl"
    broken.write_bytes(("\n".join([*lines[:5], "{torn", "\xff", *lines[5:]]) + "\n").encode())
    got = harvest("codex", path=broken, project=PROJECT)
    assert got.counts.sessions == 1 and got.counts.bad_lines == 2


def test_turns_are_bounded(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    big = "word " * 10_000
    path.write_text(json.dumps({"messages": [{"role": "user", "content": big}]}) + "\n")
    [session] = harvest("jsonl", path=path).sessions
    assert len(session.turns[0].text) <= MAX_TURN_CHARS


def test_a_resumed_session_that_copies_another_is_kept_once(tmp_path: Path) -> None:
    turns = [{"role": "user", "content": "fix the bug"}, {"role": "assistant", "content": "ok"}]
    longer = [*turns, {"role": "user", "content": "no, add a test"}]
    path = tmp_path / "s.jsonl"
    path.write_text(
        json.dumps({"id": "a", "messages": turns})
        + "\n"
        + json.dumps({"id": "b", "messages": longer})
    )
    got = harvest("jsonl", path=path)
    assert [s.id for s in got.sessions] == ["b"] and got.counts.skipped["repeat"] == 1


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)
record = st.fixed_dictionaries(
    {},
    optional={
        "type": st.sampled_from(
            ["user", "assistant", "session_meta", "response_item", "event_msg"]
        ),
        "message": json_values,
        "payload": json_values,
        "messages": json_values,
        "version": st.sampled_from(["2.0.1", "1.0", "x", 1]),
        "timestamp": st.sampled_from(["2026-01-01T00:00:00Z", "garbage", 5]),
        "cwd": json_values,
    },
)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    source=st.sampled_from(sorted(READERS)),
    lines=st.lists(st.one_of(record.map(json.dumps), st.text(max_size=30)), max_size=6),
)
def test_no_input_crashes_a_reader(tmp_path: Path, source: str, lines: list[str]) -> None:
    path = tmp_path / "rollout-fuzz.jsonl"
    path.write_text("\n".join(lines), encoding="utf-8", errors="surrogatepass")
    counts = HarvestCounts()
    for session in read_file(source, path, counts):
        assert all(t.role in ("user", "assistant") and t.text for t in session.turns)
    assert counts.files == 1
