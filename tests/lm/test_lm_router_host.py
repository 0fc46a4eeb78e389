"""litellm's Router chooses, moscopt sends (`moscopt.lm.router_host`): with a strategy that needs
the Router (here `least-busy`), its attempts on OpenAI-compatible deployments go over the direct
transport, never through `litellm.acompletion`, and their outcomes still rest a failing
deployment, retry elsewhere, fall back and report down/up events.

The first test is the guard on litellm's internals: if a litellm release moves the Router's host
(`Router.from_config`, `PythonHost.invoke`) or the attempt's arguments, it fails here, by name."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from moscopt.config import Config, DeploymentConfig, LLMConfig, RoutingConfig
from moscopt.lm import build_lm
from moscopt.lm.deployments import DeploymentsTransport, model_list
from moscopt.lm.litellm_env import litellm
from moscopt.lm.retry import Fault
from moscopt.lm.router_host import deployment_of, fault_of, litellm_error, routed_router
from moscopt.testing import FakeServer


@pytest.fixture
def acompletions(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The models `litellm.acompletion` was called for (it still answers)."""
    module = litellm()
    seen: list[str] = []
    original = module.acompletion

    async def counting(*args: Any, **kwargs: Any) -> Any:
        seen.append(str(kwargs.get("model")))
        return await original(*args, **kwargs)

    monkeypatch.setattr(module, "acompletion", counting)
    yield seen


def config(deployments: list[DeploymentConfig], **llm: Any) -> Config:
    llm.setdefault("routing", RoutingConfig(strategy="least-busy", retries=3, allowed_fails=0))
    return Config(
        model="hosted_vllm/fake",
        llm=LLMConfig(deployments=deployments, backoff_base=0.0, backoff_max=0.0, **llm),
    )


def deployment(server: FakeServer, name: str, **kw: Any) -> DeploymentConfig:
    return DeploymentConfig(model="hosted_vllm/fake", api_base=server.url, name=name, **kw)


def user(text: str) -> Any:
    return [{"role": "user", "content": text}]


def test_the_router_runs_its_attempts_through_moscopts_host() -> None:
    module = litellm()
    deployments = [DeploymentConfig(model="openai/x", api_base="http://127.0.0.1:9/v1", name="a")]
    seen: list[tuple[str | None, str]] = []

    async def send(endpoint: Any, kwargs: dict[str, Any]) -> Any:
        seen.append((deployment_of(kwargs), kwargs["api_base"]))
        return module.ModelResponse(
            choices=[{"index": 0, "message": {"role": "assistant", "content": "hi"}}]
        )

    arguments = {"model_list": model_list("g", deployments, 5.0), "num_retries": 0}
    router = routed_router(module, arguments, send)
    assert router is not None, f"litellm {module.__version__}: Router.from_config/PythonHost gone?"
    response = asyncio.run(router.acompletion(model="g", messages=user("x")))
    assert seen == [("a", "http://127.0.0.1:9/v1")]
    assert response._hidden_params["model_id"] == "a"


def test_a_fault_crosses_the_router_as_its_own_status() -> None:
    module = litellm()
    for fault, name in [
        (Fault("transient", "HTTP 503: busy", 503), "ServiceUnavailableError"),
        (Fault("transient", "timed out after 1s"), "Timeout"),
        (Fault("transient", "connection failed: refused"), "APIConnectionError"),
        (Fault("request", "too large"), "BadRequestError"),
        (Fault("auth", "HTTP 401: no", 401), "AuthenticationError"),
    ]:
        error = litellm_error(module, fault, "openai/x")
        assert type(error).__name__ == name and fault_of(error) is fault


def test_least_busy_sends_directly_rests_the_failing_one_and_reports_it(
    tmp_path: Path, acompletions: list[str]
) -> None:
    records: list[dict[str, Any]] = []
    with FakeServer() as a, FakeServer() as b, FakeServer(fault_rate=1.0, faults=("500",)) as bad:
        cfg = config([deployment(a, "a"), deployment(b, "b"), deployment(bad, "bad")])
        lm = build_lm(cfg, cache_dir=tmp_path / "c", events=records.append)
        assert isinstance(lm.transport, DeploymentsTransport)

        async def run(tag: str, n: int) -> list[str]:
            done = await asyncio.gather(*(lm.acomplete(user(f"{tag}{i}")) for i in range(n)))
            return [d.text for d in done]

        async def both() -> int:
            assert await run("t", 30) == [f"echo: t{i}" for i in range(30)]
            tried = bad.count()  # the calls in flight before its first failure was counted
            assert await run("u", 10) == [f"echo: u{i}" for i in range(10)]
            return tried

        tried = asyncio.run(both())  # one loop: one Router (the Router is per loop)
        assert 1 <= tried < 30 and bad.count("ok") == 0
        assert bad.count() == tried  # allowed_fails 0: resting since its first failure
        lm.close()
        assert acompletions == []  # every attempt over the direct transport
        assert a.count("ok") + b.count("ok") == 40
    assert lm.stats.failures == 0
    changes = [(r["deployment"], r["state"]) for r in records if r.get("type") == "deployment"]
    assert changes == [("bad", "down")]
    calls = [r for r in records if r.get("type") != "deployment"]
    assert {r["deployment"] for r in calls} <= {"a", "b"}


def test_a_fallback_deployment_answers_through_the_router(
    tmp_path: Path, acompletions: list[str]
) -> None:
    with FakeServer(fault_rate=1.0, faults=("503",)) as down, FakeServer() as spare:
        routing = RoutingConfig(strategy="least-busy", retries=0, allowed_fails=1)
        cfg = config([deployment(down, "down"), deployment(spare, "spare", fallback=True)],
                     routing=routing)  # fmt: skip
        lm = build_lm(cfg, cache_dir=tmp_path / "c")
        answer = lm.complete(user("help"))
        assert answer.text == "echo: help" and answer.deployment == "spare"
        assert down.count() == 1 and spare.count("ok") == 1 and acompletions == []
        lm.close()


def test_the_response_bound_and_a_request_fault_keep_their_own_fault(tmp_path: Path) -> None:
    big = "x" * 5000
    with FakeServer(responder=lambda body: big) as a, FakeServer(responder=lambda body: big) as b:
        cfg = config([deployment(a, "a"), deployment(b, "b")], max_response_bytes=1024,
                     max_retries=0)  # fmt: skip
        lm = build_lm(cfg, cache_dir=tmp_path / "c")
        with pytest.raises(Exception, match=r"llm\.max_response_bytes"):
            lm.complete(user("long"))
        lm.close()


def test_other_providers_still_go_through_litellm(tmp_path: Path, acompletions: list[str]) -> None:
    records: list[dict[str, Any]] = []
    with FakeServer() as a, FakeServer(fault_rate=1.0, faults=("500",)) as bad:
        # `transport: litellm` sends every deployment's attempts through litellm.acompletion
        cfg = config([deployment(a, "a"), deployment(bad, "bad")], transport="litellm")
        lm = build_lm(cfg, cache_dir=tmp_path / "c", events=records.append)
        assert not lm.transport.direct  # type: ignore[attr-defined]
        texts = [lm.complete(user(f"q{i}")).text for i in range(6)]
        assert texts == [f"echo: q{i}" for i in range(6)]
        assert len(acompletions) == a.count() + bad.count() and a.count("ok") == 6
        lm.close()
    if bad.count():
        assert ("bad", "down") in [(r["deployment"], r["state"]) for r in records if "state" in r]
