"""Prompt caching: the stable system message is marked for Anthropic, cached prompt tokens are
recorded per call and billed at the cache-read price."""

from __future__ import annotations

from typing import Any

import pytest

from moscopt.config import LLMConfig
from moscopt.lm import LiteLLMClient
from moscopt.lm.base import LMRequest
from moscopt.lm.litellm_env import litellm
from moscopt.lm.litellm_transport import litellm_fields
from moscopt.lm.pricing import Pricing
from moscopt.testing import FakeServer

SKILLS = "## Skills\n" + "Check every step twice. " * 40


def request(model: str) -> LMRequest:
    return LMRequest(
        model=model,
        messages=({"role": "system", "content": SKILLS}, {"role": "user", "content": "2 + 2?"}),
        temperature=0.0,
        top_p=1.0,
        max_tokens=8,
    )


def test_the_system_message_is_marked_for_anthropic_models_only() -> None:
    marked = litellm_fields(request("anthropic/claude-sonnet-4-5"), "anthropic/claude-sonnet-4-5")
    system, task = marked["messages"]
    assert system == {
        "role": "system",
        "content": [{"type": "text", "text": SKILLS, "cache_control": {"type": "ephemeral"}}],
    }
    assert task == {"role": "user", "content": "2 + 2?"}  # the task is not cached
    plain = litellm_fields(request("openai/gpt-4.1-mini"), "openai/gpt-4.1-mini")
    assert plain["messages"][0] == {"role": "system", "content": SKILLS}


def test_cached_tokens_from_litellm_are_recorded(monkeypatch: pytest.MonkeyPatch) -> None:
    module = litellm()
    sent: list[dict[str, Any]] = []

    async def acompletion(**kwargs: Any) -> Any:
        sent.append(kwargs)
        return module.ModelResponse(
            choices=[{"message": {"role": "assistant", "content": "4"}, "finish_reason": "stop"}],
            usage={
                "prompt_tokens": 300,
                "completion_tokens": 1,
                "total_tokens": 301,
                "prompt_tokens_details": {"cached_tokens": 280},
            },
        )

    monkeypatch.setattr(module, "acompletion", acompletion)
    events: list[dict[str, Any]] = []
    lm = LiteLLMClient(
        "anthropic/claude-sonnet-4-5", llm=LLMConfig(cache=False), events=events.append
    )
    done = lm.complete(list(request("anthropic/claude-sonnet-4-5").messages))
    assert sent[0]["messages"][0]["content"][0]["cache_control"] == {"type": "ephemeral"}
    assert done.usage.cached_tokens == 280 and lm.stats.cached_tokens == 280
    assert events[0]["cached_tokens"] == 280
    lm.close()


def test_a_repeated_skills_block_is_read_from_the_servers_prefix_cache() -> None:
    events: list[dict[str, Any]] = []
    with FakeServer(prompt_cache=True) as server:
        lm = LiteLLMClient(
            "openai/gpt-4.1-mini",  # priced in litellm's map, with a cache-read price
            llm=LLMConfig(cache=False),
            api_base=server.url,
            events=events.append,
        )
        messages = list(request("openai/gpt-4.1-mini").messages)
        first = lm.complete(messages)
        second = lm.complete([messages[0], {"role": "user", "content": "3 + 3?"}])
        lm.close()
    assert first.usage.cached_tokens == 0
    assert second.usage.cached_tokens == len(SKILLS.split()) > 0
    assert [e["cached_tokens"] for e in events] == [0, second.usage.cached_tokens]
    pricing = Pricing()
    usage = second.usage
    full = pricing.cost("openai/gpt-4.1-mini", usage.prompt_tokens, usage.completion_tokens)
    assert second.cost < full
    saving = pricing.saving("openai/gpt-4.1-mini", second.usage.cached_tokens)
    assert saving > 0 and second.cost == pytest.approx(full - saving)
    assert [e["saving"] for e in events] == [0.0, pytest.approx(saving)]  # recorded per call
    assert lm.stats.saving == pytest.approx(saving)
