"""A deployment that dies mid-run is survived and seen: a `deployment` record when it goes
down and when it comes back (`moscopt.lm.health`), through the Router and the client's sink."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

from moscopt.config import Config, DeploymentConfig, LLMConfig, RoutingConfig
from moscopt.lm import build_lm
from moscopt.lm.health import DeploymentHealth
from moscopt.testing import FakeServer


def test_down_past_allowed_fails_in_a_row_and_up_at_the_next_answer() -> None:
    records: list[dict[str, Any]] = []
    now = [100.0]
    health = DeploymentHealth(2, records.append, clock=lambda: now[0])
    health.failed("a", "e1")
    health.failed("a", "e2")
    health.answered("a")  # two in a row, then an answer: never down
    assert records == [] and health.down == []
    for i in range(4):
        health.failed("a", f"boom {i}")
    assert health.down == ["a"]
    now[0] = 107.5
    health.answered("b")  # another deployment's answer changes nothing
    health.answered("a")
    health.answered("a")
    assert records == [
        {
            "type": "deployment",
            "deployment": "a",
            "state": "down",
            "failures": 3,
            "error": "boom 2",
        },
        {"type": "deployment", "deployment": "a", "state": "up", "down_for": 7.5},
    ]
    assert health.down == []


def test_a_deployment_stopped_mid_run_is_reported_down_then_up(tmp_path: Path) -> None:
    records: list[dict[str, Any]] = []
    with FakeServer(latency=0.005) as a, FakeServer(latency=0.005) as b:
        deployments = [
            DeploymentConfig(model="hosted_vllm/fake", api_base=s.url, name=n)
            for n, s in (("a", a), ("b", b))
        ]
        routing = RoutingConfig(retries=3, allowed_fails=0, cooldown=0.3)
        config = Config(
            model="hosted_vllm/fake",
            llm=LLMConfig(
                deployments=deployments, routing=routing, backoff_base=0.0, backoff_max=0.0
            ),
        )
        lm = build_lm(config, cache_dir=tmp_path / "c", events=records.append)

        async def calls(tag: str, n: int) -> list[str]:
            done = await asyncio.gather(
                *(lm.acomplete([{"role": "user", "content": f"{tag}{i}"}]) for i in range(n))
            )
            return [d.text for d in done]

        async def run() -> None:
            assert await calls("before", 10) == [f"echo: before{i}" for i in range(10)]
            b.stop()
            assert await calls("while", 20) == [f"echo: while{i}" for i in range(20)]
            b.start()  # the same port: the deployment is back
            deadline = time.monotonic() + 20
            i = 0
            while not any(r.get("state") == "up" for r in records):
                assert time.monotonic() < deadline, records
                await asyncio.sleep(0.05)
                await calls(f"after{i}-", 4)
                i += 1

        asyncio.run(run())
        lm.close()
    changes = [r for r in records if r.get("type") == "deployment"]
    assert [(r["deployment"], r["state"]) for r in changes] == [("b", "down"), ("b", "up")]
    assert changes[0]["failures"] >= 1 and "connect" in changes[0]["error"].lower()
    assert changes[1]["down_for"] > 0
    assert lm.stats.failures == 0  # every call was answered: the Router went to `a`
