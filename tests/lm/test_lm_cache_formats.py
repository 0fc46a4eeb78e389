"""The response cache on diskcache: what earlier versions stored is still found, nothing is ever
unpickled, and processes writing at once lose nothing."""

from __future__ import annotations

import contextlib
import pickle
import sqlite3
import subprocess
import sys
from pathlib import Path

import diskcache
import pytest
from typer.testing import CliRunner

from moscopt.cli import app
from moscopt.lm.base import Completion, Usage
from moscopt.lm.cache import DB_FILE, PROJECT_CACHE, RECORD_FILE, ResponseCache, TextDisk
from moscopt.lm.legacy import SQLITE_FILE
from moscopt.lm.wire import dumps
from moscopt.testing import FakeServer
from moscopt.testing.scripted import server_responder, write_project
from moscopt.testing.scripted import train_argv as train

runner = CliRunner()
KEY = "a" * 64


def format2_cache(directory: Path, entries: dict[str, bytes]) -> None:
    """The shared cache as format 2 (the hand-written SQLite store before diskcache) wrote it:
    one file, WAL mode, the entry's JSON (orjson, UTF-8) under the same keys as now."""
    directory.mkdir(parents=True, exist_ok=True)
    with contextlib.closing(sqlite3.connect(directory / SQLITE_FILE)) as db, db:
        db.execute("PRAGMA journal_mode=WAL")
        db.execute(
            "CREATE TABLE IF NOT EXISTS responses "
            "(key TEXT PRIMARY KEY, value BLOB NOT NULL) WITHOUT ROWID"
        )
        db.executemany(
            "INSERT OR REPLACE INTO responses (key, value) VALUES (?, ?)", entries.items()
        )


def format2_entry(text: str) -> bytes:
    entry = {"text": text, "model": "m", "prompt_tokens": 5, "completion_tokens": 2,
             "cached_tokens": 1, "finish_reason": "stop"}  # fmt: skip
    return dumps(entry)


def test_a_format2_entry_is_found_and_copied_forward(tmp_path: Path) -> None:
    format2_cache(tmp_path, {KEY: format2_entry("kept from format 2"), "b" * 64: b"{damaged"})
    record = tmp_path / "run" / RECORD_FILE
    cache = ResponseCache(tmp_path, record=record)
    assert len(cache) == 0
    got = cache.get(KEY)
    assert got is not None and (got.text, got.usage) == ("kept from format 2", Usage(5, 2, 1))
    assert got.finish_reason == "stop"
    assert cache.get("b" * 64) is None and cache.get("c" * 64) is None  # damaged, absent: misses
    assert len(cache) == 1 and KEY in cache  # copied into the diskcache store
    cache.close()
    (tmp_path / SQLITE_FILE).unlink()
    again = ResponseCache(tmp_path).get(KEY)
    assert again is not None and again.text == "kept from format 2"
    assert record.read_text().split() == [KEY]


def test_a_format2_file_that_is_not_a_database_is_a_miss(tmp_path: Path) -> None:
    (tmp_path / SQLITE_FILE).write_bytes(b"not SQLite" * 100)
    cache = ResponseCache(tmp_path)
    assert cache.get(KEY) is None
    cache.put(KEY, Completion(text="asked again", model="m"))
    assert (found := cache.get(KEY)) is not None and found.text == "asked again"


def test_values_and_keys_are_stored_as_plain_text(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path)
    cache.put(KEY, Completion(text="small", model="m"))
    cache.put("b" * 64, Completion(text="large " * 10_000, model="m"))  # a file beside the db
    cache.close()
    with contextlib.closing(sqlite3.connect(tmp_path / DB_FILE)) as db:
        rows = dict(db.execute("SELECT key, mode FROM Cache").fetchall())
    assert rows == {KEY: 1, "b" * 64: 3}  # diskcache's raw and text modes: never a pickle
    assert b'"text":"small"' in (tmp_path / DB_FILE).read_bytes() + b"".join(
        p.read_bytes() for p in tmp_path.glob("*.db-wal")
    )
    with pytest.raises(TypeError):  # the store takes text only: a dict would be pickled
        TextDisk(str(tmp_path)).store({"text": "t"}, read=False)
    with contextlib.closing(sqlite3.connect(tmp_path / DB_FILE)) as db:
        settings = dict(db.execute("SELECT key, value FROM Settings").fetchall())
    assert settings["eviction_policy"] == "none"  # never evicted: a resumed step finds them all


class Boom:
    def __init__(self, path: Path) -> None:
        self.path = path

    def __reduce__(self) -> tuple[object, ...]:
        return (open, (str(self.path), "w"))  # creates the file if it is ever unpickled


def test_a_pickled_entry_is_a_miss_and_never_loaded(tmp_path: Path) -> None:
    never = tmp_path / "unpickled"
    cache = ResponseCache(tmp_path)
    cache.put(KEY, Completion(text="fine", model="m"))
    cache.close()
    with contextlib.closing(sqlite3.connect(tmp_path / DB_FILE)) as db, db:
        db.execute("UPDATE Cache SET mode = 4, value = ?", (pickle.dumps(Boom(never)),))
    evil = diskcache.Cache(str(tmp_path / "other"))  # diskcache's default Disk pickles a dict
    evil.set(KEY, {"text": "pickled"})
    evil.close()
    for folder in (tmp_path, tmp_path / "other"):
        assert ResponseCache(folder).get(KEY) is None
    assert not never.exists()
    pickle.loads(pickle.dumps(Boom(never))).close()  # what loading it would have done
    assert never.exists()


WRITER = """
import sys
from pathlib import Path
from moscopt.lm.base import Completion
from moscopt.lm.cache import ResponseCache
cache = ResponseCache(Path(sys.argv[1]))
me = sys.argv[2]
for i in range(150):
    cache.put(f"{me}{i:063x}", Completion(text=f"{me} {i}", model="m"))
    assert cache.get(f"{me}{i:063x}") is not None
cache.close()
"""


def test_processes_writing_at_once_lose_nothing(tmp_path: Path) -> None:
    writers = [
        subprocess.Popen([sys.executable, "-c", WRITER, str(tmp_path / "c"), me]) for me in "abc"
    ]
    assert [w.wait(timeout=120) for w in writers] == [0, 0, 0]
    cache = ResponseCache(tmp_path / "c")
    assert len(cache) == 450
    assert all(
        (got := cache.get(f"{me}{i:063x}")) is not None and got.text == f"{me} {i}"
        for me in "abc"
        for i in range(150)
    )


def as_format2(folder: Path) -> int:
    """Rewrite the project's cache `folder` as format 2 wrote it (the diskcache store gone)."""
    store = diskcache.Cache(str(folder), disk=TextDisk)
    entries = {key: store.get(key).encode() for key in store}
    store.close()
    for path in folder.glob(DB_FILE + "*"):
        path.unlink()
    format2_cache(folder, entries)
    return len(entries)


def test_a_project_cached_by_format2_reruns_with_no_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed_dir: Path
) -> None:
    write_project(tmp_path, seed_dir)
    monkeypatch.chdir(tmp_path)
    folder = tmp_path / PROJECT_CACHE
    with FakeServer(responder=server_responder) as server:
        first = runner.invoke(app, train(server.url, "runs/a"))
        assert first.exit_code == 0, first.output
        made = server.count()
        assert as_format2(folder) == made > 0
        assert not (folder / DB_FILE).exists()
        again = runner.invoke(app, train(server.url, "runs/b"))
        assert again.exit_code == 0, again.output
        assert server.count() == made  # every answer came from the format-2 file
    assert len(ResponseCache(folder)) == made  # and is now in the diskcache store
