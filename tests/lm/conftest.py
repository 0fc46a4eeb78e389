from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from moscopt.config import LLMConfig, SamplingConfig
from moscopt.lm import LiteLLMClient, ResponseCache
from moscopt.testing import FakeServer

MakeClient = Callable[..., LiteLLMClient]


@pytest.fixture
def server() -> Iterator[FakeServer]:
    with FakeServer() as s:
        yield s


@pytest.fixture
def make_client(tmp_path: Path, server: FakeServer) -> Iterator[MakeClient]:
    """Clients of the fake server: fast backoff, a cache in tmp_path, events into a list."""
    made: list[LiteLLMClient] = []

    def make(
        *,
        model: str = "openai/fake-model",
        cache: bool = True,
        events: list[dict[str, Any]] | None = None,
        api_base: str | None = None,
        **llm: Any,
    ) -> LiteLLMClient:
        llm.setdefault("backoff_base", 0.0)
        llm.setdefault("backoff_max", 0.0)
        llm.setdefault("timeout", 5.0)
        client = LiteLLMClient(
            model,
            sampling=SamplingConfig(temperature=0.5, top_p=0.9, max_tokens=32),
            llm=LLMConfig(**llm),
            seed=42,
            api_base=api_base or server.url,
            cache=ResponseCache(tmp_path / "cache") if cache else None,
            events=events.append if events is not None else None,
        )
        made.append(client)
        return client

    yield make
    for client in made:
        client.close()
