from __future__ import annotations

import contextlib
import json
import sqlite3
from pathlib import Path
from typing import Any

import diskcache
import pytest

from moscopt.config import LLMConfig
from moscopt.lm import LiteLLMClient
from moscopt.lm.base import Completion, Usage
from moscopt.lm.cache import (
    DB_FILE,
    PROJECT_CACHE,
    ResponseCache,
    default_cache_dir,
    read_record,
    shared_cache_dir,
)
from moscopt.lm.legacy import legacy_key
from moscopt.testing import FakeServer

KEY = "a" * 64


def test_round_trip_keeps_the_answer_only(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / "c")
    done = Completion(
        text="hi", model="m", usage=Usage(3, 1, 2), cost=0.5, latency=2.0, finish_reason="stop"
    )
    cache.put("k", done)
    got = cache.get("k")
    assert got is not None
    assert (got.text, got.model, got.usage, got.finish_reason) == (
        "hi",
        "m",
        Usage(3, 1, 2),
        "stop",
    )
    assert got.cost == 0.0 and got.latency == 0.0
    assert cache.get("other") is None
    assert "k" in cache and len(cache) == 1


def test_entries_survive_reopening_and_closing(tmp_path: Path) -> None:
    first = ResponseCache(tmp_path)
    first.put("k", Completion(text="kept", model="m"))
    first.close()
    got = ResponseCache(tmp_path).get("k")
    assert got is not None and got.text == "kept"
    assert first.get("k") is not None  # a closed cache reopens on use


def raw_put(directory: Path, key: str, value: object) -> None:
    """Store `value` under `key` as it is, past the cache's encoding (an entry in the database)."""
    ResponseCache(directory).put(key, Completion(text="replaced below", model="m"))
    with contextlib.closing(sqlite3.connect(directory / DB_FILE)) as db, db:
        db.execute(
            "UPDATE Cache SET mode = 1, filename = NULL, value = ? WHERE key = ?", (value, key)
        )


@pytest.mark.parametrize(
    "value",
    [
        b"{not json",
        b'{"text": "no model"}',
        b'{"text": 3, "model": "m", "prompt_tokens": 1, "completion_tokens": 1}',
        b'{"text": "t", "model": "m", "prompt_tokens": "many", "completion_tokens": 1}',
        b"[1, 2]",
        b"\xff\xfe\x00garbage",
        "stored as text, not JSON",
        12345,
    ],
)
def test_a_damaged_or_undecodable_entry_is_a_miss(tmp_path: Path, value: object) -> None:
    cache = ResponseCache(tmp_path)
    cache.put("other", Completion(text="fine", model="m"))  # creates the database
    raw_put(tmp_path, "k", value)
    assert cache.get("k") is None
    cache.put("k", Completion(text="repaired", model="m"))  # the next answer overwrites it
    got = cache.get("k")
    assert got is not None and got.text == "repaired"


def test_lone_surrogates_in_a_stored_entry_are_replaced(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path)
    cache.put("other", Completion(text="fine", model="m"))
    entry = b'{"text": "a\\ud800b", "model": "m", "prompt_tokens": 1, "completion_tokens": 1}'
    raw_put(tmp_path, "k", entry)
    got = cache.get("k")
    assert got is not None and got.text == "a\ufffdb"


def test_a_damaged_database_file_is_a_miss_not_a_crash(tmp_path: Path) -> None:
    (tmp_path / DB_FILE).write_bytes(b"this is not an SQLite database" * 100)
    cache = ResponseCache(tmp_path)
    assert cache.get("k") is None
    cache.put("k", Completion(text="t", model="m"))  # warns, does not raise


def test_the_run_record_lists_each_used_entry_once(tmp_path: Path) -> None:
    record = tmp_path / "run" / "cache" / "used-keys.txt"
    cache = ResponseCache(tmp_path / "shared", record=record)
    keys = [f"{i:064x}" for i in range(3)]
    for k in keys:
        cache.put(k, Completion(text=k, model="m"))
    cache.get(keys[0])
    assert cache.get("f" * 64) is None  # a miss is not recorded
    assert cache.used == 3
    cache.close()
    assert read_record(record) == keys
    again = ResponseCache(tmp_path / "shared", record=record)  # a resumed run
    again.get(keys[1])
    again.close()
    assert read_record(record) == keys


def test_the_cache_folder_keeps_itself_out_of_git(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / "c")
    cache.put("k", Completion(text="t", model="m"))
    assert (tmp_path / "c" / ".gitignore").read_text().splitlines()[-1] == "*"
    mine = tmp_path / "existing"
    mine.mkdir()
    ResponseCache(mine).put("k", Completion(text="t", model="m"))
    assert not (mine / ".gitignore").exists()  # a folder it did not make is left as it is


def test_a_cache_that_cannot_be_made_is_a_miss_not_a_crash(tmp_path: Path) -> None:
    (tmp_path / "taken").write_text("a file where the cache folder would go")
    cache = ResponseCache(tmp_path / "taken" / "cache")
    assert cache.get("k") is None
    cache.put("k", Completion(text="t", model="m"))  # warns once, does not raise


def test_default_cache_dir_precedence(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("MOSCOPT_CACHE_DIR", str(tmp_path / "a"))
    assert default_cache_dir() == tmp_path / "a"
    monkeypatch.delenv("MOSCOPT_CACHE_DIR")
    monkeypatch.setenv("MOSCOPT_HOME", str(tmp_path / "home"))
    assert default_cache_dir() == tmp_path / "home" / "cache"
    monkeypatch.delenv("MOSCOPT_HOME")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_cache_dir() == tmp_path / "xdg" / "moscopt"


def test_shared_cache_dir_is_the_projects(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    project = tmp_path / "proj"
    (project / "runs" / "r1").mkdir(parents=True)
    (project / "moscopt.yaml").write_text("seed: 1\n")
    (project / "runs" / "r1" / "moscopt.yaml").write_text("seed: 1\n")  # its frozen config
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    llm = LLMConfig()
    # a run finds its project from its own path, wherever the command runs
    assert shared_cache_dir(llm, run_path=project / "runs" / "r1") == project / PROJECT_CACHE
    # without a run: the project of the working directory, else the user-level cache
    assert shared_cache_dir(llm) == default_cache_dir()
    monkeypatch.chdir(project / "runs")
    assert shared_cache_dir(llm) == project / PROJECT_CACHE
    # configured: relative to the project; the environment variable beats the project
    assert shared_cache_dir(LLMConfig(cache_dir="c")) == project / "c"
    monkeypatch.setenv("MOSCOPT_CACHE_DIR", str(tmp_path / "env"))
    assert shared_cache_dir(llm) == tmp_path / "env"
    assert shared_cache_dir(LLMConfig(cache_dir=str(tmp_path / "abs"))) == tmp_path / "abs"


def legacy_run_cache(folder: Path, entries: dict[str, dict[str, object]]) -> None:
    """A run's cache/ as the release before the shared cache wrote it: diskcache's default `Disk`
    in the folder, each entry's JSON as text (in the database, or in a file when large)."""
    cache = diskcache.Cache(str(folder), eviction_policy="none", size_limit=2**62)
    for key, entry in entries.items():
        cache.set(key, json.dumps(entry, sort_keys=True, ensure_ascii=False))
    cache.close()


def test_a_run_from_before_the_shared_cache_resumes_from_its_own_answers(tmp_path: Path) -> None:
    with FakeServer() as server:
        lm = LiteLLMClient(
            "openai/fake-model", llm=LLMConfig(), seed=1, api_base=server.url, cache=None
        )
        messages: Any = [{"role": "user", "content": "asked before the upgrade"}]
        long: Any = [{"role": "user", "content": "asked before the upgrade, at length"}]
        entry = {"text": "old answer", "model": "openai/fake-model", "prompt_tokens": 4,
                 "completion_tokens": 2, "finish_reason": "stop"}  # fmt: skip
        large = {**entry, "text": "long answer " * 4000}  # past 32 KB: a file beside the database
        legacy_run_cache(
            tmp_path / "run" / "cache",
            {
                legacy_key(lm.request(messages), server.url): entry,
                legacy_key(lm.request(long), server.url): large,
            },
        )
        record = tmp_path / "run" / "cache" / "used-keys.txt"
        lm.cache = ResponseCache(tmp_path / "shared", record=record)
        done = lm.complete(messages)
        assert done.cache_hit and done.text == "old answer" and server.count() == 0
        assert lm.complete(long).text == large["text"] and server.count() == 0
        lm.close()
        # copied into the shared cache under its current key
        shared = ResponseCache(tmp_path / "shared")
        found = shared.get(lm.request(messages).key())
        assert found is not None and found.text == "old answer"
        assert read_record(record) == [lm.request(messages).key(), lm.request(long).key()]
        shared.close()
