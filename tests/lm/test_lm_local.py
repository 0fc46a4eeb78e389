"""The embedded model. The `slow` tests load the real SmolLM2 (a second or two, then fast)."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import pytest

from moscopt.config import Config, LLMConfig, SamplingConfig, load_config
from moscopt.errors import UserError
from moscopt.lm import build_lm, local
from moscopt.lm.base import LMRequest
from moscopt.lm.errors import LMSetupError
from moscopt.lm.local import gguf_path
from moscopt.lm.retry import Fault
from moscopt.lm.wire import chat_body


class FakeEngine:
    """Stands in for the loaded model: records bodies, plays answers."""

    def __init__(self, *answers: dict[str, Any]) -> None:
        self.answers = list(answers)
        self.bodies: list[dict[str, Any]] = []
        self.preloaded = 0

    def preload(self) -> None:
        self.preloaded += 1

    async def achat(self, body: dict[str, Any]) -> dict[str, Any]:
        self.bodies.append(body)
        return self.answers.pop(0)


def reply(text: str) -> dict[str, Any]:
    return {
        "choices": [{"message": {"content": text}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 4, "completion_tokens": 2},
    }


def test_the_embedded_model_gets_the_shared_wire_body(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeEngine(reply("hi \ud800there"), {"error": {"code": 400, "message": "too long"}})
    monkeypatch.setattr(local, "engine", lambda threads=None: fake)
    transport = local.LocalTransport()
    assert fake.preloaded == 1  # loading starts when the client is built
    request = LMRequest(
        model="local/smollm2",
        messages=({"role": "user", "content": "x"},),
        temperature=0.2,
        top_p=0.5,
        max_tokens=9,
        seed=3,
        schema={"type": "object"},
        sample=1,
    )
    answer = asyncio.run(transport.asend(request))
    expected = chat_body(request, "local/smollm2")
    del expected["model"]
    assert fake.bodies == [expected] and expected["seed"] == 4
    assert answer.text == "hi \ufffdthere" and answer.prompt_tokens == 4
    with pytest.raises(Fault) as info:
        asyncio.run(transport.asend(request))
    assert info.value.kind == "request" and "too long" in info.value.message


def test_the_model_file_is_found_without_importing_its_package() -> None:
    assert gguf_path().name == "SmolLM2-135M-Instruct.Q4_1.gguf"


@pytest.mark.slow
def test_a_short_completion(tmp_path: Path) -> None:
    config = Config(sampling=SamplingConfig(temperature=0.0, max_tokens=24))
    lm = build_lm(config, cache_dir=tmp_path / "cache")
    done = lm.complete([{"role": "user", "content": "Say hello."}])
    assert done.text.strip() and done.model == "local/smollm2"
    assert done.usage.prompt_tokens > 0 and 0 < done.usage.completion_tokens <= 24
    assert done.cost == 0.0
    assert lm.complete([{"role": "user", "content": "Say hello."}]).cache_hit


@pytest.mark.slow
def test_a_schema_call_parses(tmp_path: Path) -> None:
    schema = {
        "type": "object",
        "properties": {
            "answer": {"type": "integer"},
            "reason": {"type": "string", "maxLength": 40},
        },
        "required": ["answer", "reason"],
        "additionalProperties": False,
    }
    config = Config(sampling=SamplingConfig(temperature=0.0, max_tokens=64))
    lm = build_lm(config, cache_dir=tmp_path / "cache")
    done = lm.complete(
        [{"role": "user", "content": "What is 2 + 3? Reply in JSON."}], schema=schema
    )
    assert isinstance(done.data, dict) and set(done.data) == {"answer", "reason"}
    assert isinstance(done.data["answer"], int) and len(done.data["reason"]) <= 40


@pytest.mark.slow
def test_concurrent_async_calls_share_one_model(tmp_path: Path) -> None:
    config = Config(
        sampling=SamplingConfig(temperature=0.8, max_tokens=8), llm=LLMConfig(concurrency=4)
    )
    lm = build_lm(config, cache_dir=tmp_path / "cache")

    async def run() -> list[str]:
        calls = [
            lm.acomplete([{"role": "user", "content": "Name a color."}], sample=i) for i in range(4)
        ]
        return [c.text for c in await asyncio.gather(*calls)]

    texts = asyncio.run(run())
    assert len(texts) == 4 and all(t.strip() for t in texts)
    assert lm.stats.calls == 4


def test_threads_as_given_or_from_the_idle_cores(monkeypatch: pytest.MonkeyPatch) -> None:
    assert local.resolve_threads(3) == 3
    cores = len(os.sched_getaffinity(0))
    monkeypatch.setattr(local, "_idle_share", lambda: 1.0)
    assert local.resolve_threads("auto") == cores
    monkeypatch.setattr(local, "_idle_share", lambda: 0.0)  # a busy machine: one thread
    assert local.resolve_threads("auto") == 1


def test_the_idle_share_is_a_fraction() -> None:
    assert 0.0 <= local._idle_share(window=0.05) <= 1.0


def test_this_processes_own_work_does_not_make_the_machine_busy(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # 200 ticks over 2 cores: 100 idle, 100 busy, of which this process (importing) used 60
    samples = iter([(1000, 4000, 500), (1100, 4200, 560)])
    monkeypatch.setattr(local, "_cpu_sample", lambda: next(samples))
    monkeypatch.setattr(local.time, "sleep", lambda s: None)
    assert local._idle_share() == pytest.approx(0.8)  # others kept 40 of the 200 busy


@pytest.mark.parametrize("bad", [0, -1, True, "two"])
def test_bad_thread_counts_are_refused(bad: Any) -> None:
    with pytest.raises(LMSetupError, match=r"llm\.threads"):
        local.resolve_threads(bad)


def test_llm_threads_reaches_an_engine_not_loaded_yet(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(local, "_engines", {})
    engine = local.engine(threads=1)
    assert engine.setting == 1 and engine._server is None
    assert local.engine(threads="auto").setting == "auto"  # still unloaded: the newest wins
    with pytest.raises(UserError, match=r"llm\.threads"):
        load_config(overrides={"llm.threads": 0})
    assert load_config(overrides={"llm.threads": 2}).llm.threads == 2


@pytest.mark.slow
def test_the_embedded_gate_answers_k_distinct_ids(tmp_path: Path) -> None:
    """Under the K-set enum the real model cannot repeat an id (it did in most array answers)."""
    from moscopt.core.resources import seed_skills_dir
    from moscopt.core.skills import Pool
    from moscopt.routing.gate import GateStats, LLMGate

    pool = Pool.load(seed_skills_dir(), require_gate=True)
    lm = build_lm(Config(llm=LLMConfig(cache=False)))
    try:
        gate = LLMGate(lm, pool, 3, GateStats(), constrained=True)
        picked = asyncio.run(gate.select("What is 17 * 23? End with FINAL ANSWER: <n>."))
    finally:
        lm.close()
    assert picked.source == "gate" and len(set(picked.skills)) == 3
