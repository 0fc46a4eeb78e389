"""Several deployments behind litellm's Router: load spread, failures absorbed, cache and budget
as for one endpoint."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from moscopt.config import Config, DeploymentConfig, LLMConfig, RoutingConfig
from moscopt.errors import UserError
from moscopt.lm import BudgetExceeded, build_lm
from moscopt.lm.deployments import DeploymentsTransport, deployment_label
from moscopt.testing import FakeServer


@pytest.fixture
def servers() -> Iterator[list[FakeServer]]:
    healthy = [FakeServer(latency=0.01), FakeServer(latency=0.01)]
    failing = FakeServer(fault_rate=1.0, faults=("500",))
    with healthy[0], healthy[1], failing:
        yield [*healthy, failing]


def config(servers: list[FakeServer], **llm: Any) -> Config:
    deployments = [
        DeploymentConfig(model="hosted_vllm/fake", api_base=s.url, name=f"d{i}")
        for i, s in enumerate(servers)
    ]
    llm.setdefault("routing", RoutingConfig(retries=3, allowed_fails=1, cooldown=60))
    return Config(
        model="hosted_vllm/fake",
        llm=LLMConfig(deployments=deployments, backoff_base=0.0, backoff_max=0.0, **llm),
    )


def user(text: str) -> Any:
    return [{"role": "user", "content": text}]


def test_three_servers_one_failing_spread_the_load_and_lose_no_task(
    servers: list[FakeServer], tmp_path: Path
) -> None:
    events: list[dict[str, Any]] = []
    lm = build_lm(config(servers, concurrency=8), cache_dir=tmp_path / "c", events=events.append)
    assert isinstance(lm.transport, DeploymentsTransport)
    n = 60

    async def run() -> list[Any]:
        return list(await asyncio.gather(*(lm.acomplete(user(f"t{i}")) for i in range(n))))

    done = asyncio.run(run())
    assert [d.text for d in done] == [f"echo: t{i}" for i in range(n)]  # none lost
    healthy, failing = servers[:2], servers[2]
    answered = Counter(r.body["messages"][0]["content"] for s in healthy for r in s.log)
    assert answered == Counter({f"t{i}": 1 for i in range(n)})  # each answered exactly once
    assert all(s.count("ok") >= n // 5 for s in healthy)  # spread over both healthy servers
    assert failing.count() >= 1 and failing.count("ok") == 0
    assert lm.stats.calls == n and lm.stats.failures == 0
    calls = [e for e in events if e.get("type") != "deployment"]
    assert Counter(e["deployment"] for e in calls) == Counter(
        {"d0": healthy[0].count("ok"), "d1": healthy[1].count("ok")}
    )
    lm.close()


def test_the_router_shares_the_cache_and_the_budget(
    servers: list[FakeServer], tmp_path: Path
) -> None:
    cfg = config(servers[:2], max_calls=3)
    lm = build_lm(cfg, cache_dir=tmp_path / "c")
    first = [lm.complete(user(f"q{i}")) for i in range(3)]
    again = [lm.complete(user(f"q{i}")) for i in range(3)]  # hits, not calls
    assert all(a.cache_hit and a.text == f.text for a, f in zip(again, first, strict=True))
    with pytest.raises(BudgetExceeded):
        lm.complete(user("one more"))
    assert sum(s.count() for s in servers[:2]) == 3
    lm.close()
    # another client on the same cache, with its deployments moved to other ports: still hits
    with FakeServer() as moved:
        other = build_lm(config([moved]), cache_dir=tmp_path / "c")
        assert other.complete(user("q0")).cache_hit and moved.count() == 0
        other.close()


def test_fallback_deployments_answer_when_the_others_fail(tmp_path: Path) -> None:
    with FakeServer(fault_rate=1.0, faults=("503",)) as down, FakeServer() as spare:
        cfg = config([down], routing=RoutingConfig(retries=0, allowed_fails=1, cooldown=60))
        fallback = DeploymentConfig(model="hosted_vllm/fake", api_base=spare.url, fallback=True)
        llm = cfg.llm.model_copy(update={"deployments": [*cfg.llm.deployments, fallback]})
        lm = build_lm(cfg.model_copy(update={"llm": llm}), cache_dir=tmp_path / "c")
        assert lm.complete(user("help")).text == "echo: help"
        assert down.count() >= 1 and spare.count("ok") == 1
        lm.close()


def test_deployment_config_is_checked() -> None:
    with pytest.raises(ValueError, match="at least one deployment"):
        LLMConfig(deployments=[DeploymentConfig(model="openai/x", fallback=True)])
    with pytest.raises(UserError):
        build_lm(
            Config(
                model="openai/x",
                llm=LLMConfig(deployments=[DeploymentConfig(model="openai/x", api_base="nope")]),
            )
        )
    labelled = DeploymentConfig(model="openai/x", api_base="http://H:8000/v1/?token=t")
    assert deployment_label(labelled) == "openai/x@http://h:8000/v1"


def test_eval_through_the_command_line_spreads_over_the_deployments(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed_dir: Path
) -> None:
    from typer.testing import CliRunner

    from moscopt.cli import app
    from moscopt.testing.scripted import server_responder, write_project

    with FakeServer(responder=server_responder) as a, FakeServer(responder=server_responder) as b:
        config = (
            "model: hosted_vllm/scripted\n"
            "llm:\n"
            "  deployments:\n"
            f"    - {{model: hosted_vllm/scripted, api_base: '{a.url}', name: a}}\n"
            f"    - {{model: hosted_vllm/scripted, api_base: '{b.url}', name: b}}\n"
        )
        write_project(tmp_path, seed_dir, config)
        monkeypatch.chdir(tmp_path)
        args = ["eval", "--benchmark", "addition.yaml", "--data", "addition.jsonl"]
        result = CliRunner().invoke(app, [*args, "--mode", "none", "--split", "all", "--json"])
        assert result.exit_code == 0, result.output
        assert a.count() > 0 and b.count() > 0
        assert a.count() + b.count() == 14  # every task of the addition data, once
