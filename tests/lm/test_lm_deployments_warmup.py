"""While litellm imports (seconds of CPU), the first calls over several deployments go out at
once, drawn as the Router's simple-shuffle draws; the Router takes over when it is loaded or at
the first failure."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import Future
from typing import Any

import pytest

from moscopt.config import Config, DeploymentConfig, LLMConfig, RoutingConfig
from moscopt.lm import build_lm
from moscopt.lm import deployments as deployments_module
from moscopt.lm.deployments import DeploymentsTransport, shuffle_before_the_router
from moscopt.testing import FakeServer


@pytest.fixture
def importing(monkeypatch: pytest.MonkeyPatch) -> Future[Any]:
    """litellm's import, still running for the transports built in the test (until set)."""
    pending: Future[Any] = Future()
    monkeypatch.setattr(deployments_module, "preload", lambda: pending)
    return pending


@pytest.fixture
def servers() -> Iterator[list[FakeServer]]:
    with FakeServer(latency=0.01) as a, FakeServer(latency=0.01) as b:
        yield [a, b]


def config(servers: list[FakeServer], routing: RoutingConfig | None = None) -> Config:
    deployments = [
        DeploymentConfig(model="hosted_vllm/fake", api_base=s.url, name=f"d{i}")
        for i, s in enumerate(servers)
    ]
    llm = LLMConfig(
        deployments=deployments,
        routing=routing or RoutingConfig(retries=3, allowed_fails=1, cooldown=60),
        backoff_base=0.0,
        backoff_max=0.0,
        cache=False,
    )
    return Config(model="hosted_vllm/fake", llm=llm)


def user(text: str) -> Any:
    return [{"role": "user", "content": text}]


def test_calls_go_out_while_litellm_imports_and_the_router_takes_over_when_it_is_loaded(
    servers: list[FakeServer], importing: Future[Any]
) -> None:
    events: list[dict[str, Any]] = []
    lm = build_lm(config(servers), events=events.append)
    transport = lm.transport
    assert isinstance(transport, DeploymentsTransport)

    async def ask(tag: str, n: int) -> list[str]:
        done = await asyncio.gather(*(lm.acomplete(user(f"{tag}{i}")) for i in range(n)))
        return [d.text for d in done]

    assert asyncio.run(ask("w", 40)) == [f"echo: w{i}" for i in range(40)]
    assert not transport._routers  # no Router was waited for
    assert all(s.count("ok") >= 5 for s in servers)  # spread over both, as simple-shuffle does
    labels = Counter(e["deployment"] for e in events if e.get("type") != "deployment")
    assert labels == Counter({"d0": servers[0].count("ok"), "d1": servers[1].count("ok")})

    importing.set_result(None)  # loaded: from now on the Router chooses
    assert asyncio.run(ask("r", 4)) == [f"echo: r{i}" for i in range(4)]
    assert transport._routers and sum(s.count() for s in servers) == 44
    lm.close()


def test_the_router_takes_over_at_the_first_failure(
    servers: list[FakeServer], importing: Future[Any]
) -> None:
    for s in servers:
        s.script("500")  # each deployment fails its first request
    routing = RoutingConfig(retries=3, allowed_fails=5, cooldown=60)
    lm = build_lm(config(servers, routing))
    transport = lm.transport
    assert isinstance(transport, DeploymentsTransport)

    assert lm.complete(user("x")).text == "echo: x"
    assert transport._shuffle is None and transport._routers  # the Router has the rest
    assert sum(s.count("500") for s in servers) >= 1
    # the failed attempt was the first of the call's retries + 1, not one more
    assert sum(s.count() for s in servers) <= routing.retries + 1
    assert lm.complete(user("y")).text == "echo: y"
    lm.close()


def deployment(name: str, **fields: Any) -> DeploymentConfig:
    fields.setdefault("api_base", f"http://127.0.0.1:9/{name}")
    return DeploymentConfig(model="hosted_vllm/m", name=name, **fields)


def test_only_a_choice_the_router_would_make_the_same_way_is_made_without_it() -> None:
    plain = RoutingConfig()
    two = [deployment("a"), deployment("b"), deployment("spare", fallback=True)]
    assert shuffle_before_the_router(two, plain) == (["a", "b"], [1, 1])  # fallbacks wait
    weighted = [deployment("a", weight=3), deployment("b")]
    assert shuffle_before_the_router(weighted, plain) == (["a", "b"], [3, 0])  # as litellm draws
    assert shuffle_before_the_router(two, RoutingConfig(strategy="least-busy")) is None
    assert shuffle_before_the_router([deployment("a", rpm=60)], plain) is None  # a limit
    assert shuffle_before_the_router([deployment("a", tpm=1000)], plain) is None
    assert shuffle_before_the_router(two, plain, direct=False) is None  # litellm sends
    assert shuffle_before_the_router([deployment("a", api_base=None)], plain) is None
    other = DeploymentConfig(model="anthropic/claude", name="c", api_base="http://127.0.0.1:9")
    assert shuffle_before_the_router([other], plain) is None


def test_litellm_starts_importing_with_the_run_only_where_the_first_calls_need_the_router(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    started: list[str] = []
    monkeypatch.setattr(deployments_module, "preload", lambda: started.append("import"))
    two = [deployment("a"), deployment("b")]
    deployments_module.preload_router(LLMConfig(deployments=two))
    assert started == []  # it starts with the first call
    busy = LLMConfig(deployments=two, routing=RoutingConfig(strategy="least-busy"))
    deployments_module.preload_router(busy)
    assert started == ["import"]
