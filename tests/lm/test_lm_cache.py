from __future__ import annotations

from pathlib import Path

import pytest

from moscopt.lm.base import Completion, Usage
from moscopt.lm.cache import ResponseCache, default_cache_dir


def test_round_trip_keeps_the_answer_only(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / "c")
    done = Completion(
        text="hi", model="m", usage=Usage(3, 1), cost=0.5, latency=2.0, finish_reason="stop"
    )
    cache.put("k", done)
    got = cache.get("k")
    assert got is not None
    assert (got.text, got.model, got.usage, got.finish_reason) == ("hi", "m", Usage(3, 1), "stop")
    assert got.cost == 0.0 and got.latency == 0.0
    assert cache.get("other") is None
    assert "k" in cache and len(cache) == 1


def test_entries_survive_reopening(tmp_path: Path) -> None:
    ResponseCache(tmp_path).put("k", Completion(text="kept", model="m"))
    got = ResponseCache(tmp_path).get("k")
    assert got is not None and got.text == "kept"


def test_a_damaged_entry_is_a_miss(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path)
    cache._cache.set("k", "{not json")
    cache._cache.set("j", '{"text": "no model"}')
    assert cache.get("k") is None
    assert cache.get("j") is None


def test_default_cache_dir_precedence(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("MOSCOPT_CACHE_DIR", str(tmp_path / "a"))
    assert default_cache_dir() == tmp_path / "a"
    monkeypatch.delenv("MOSCOPT_CACHE_DIR")
    monkeypatch.setenv("MOSCOPT_HOME", str(tmp_path / "home"))
    assert default_cache_dir() == tmp_path / "home" / "cache"
    monkeypatch.delenv("MOSCOPT_HOME")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_cache_dir() == tmp_path / "xdg" / "moscopt"
