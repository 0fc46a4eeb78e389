"""Simple-shuffle over OpenAI-compatible deployments, in process, without litellm.

When every deployment of `llm.deployments` is an OpenAI-compatible endpoint (`openai/...` or
`hosted_vllm/...` at an `api_base`), none sets `rpm` or `tpm`, and the strategy is the default
`simple-shuffle`, litellm's Router would do nothing here that needs litellm: pick a deployment at
random (by `weight`), retry a failed attempt on another one, rest a deployment that failed more
than `allowed_fails` times in a minute for `cooldown` seconds (never the only one of its group),
and turn to the `fallback: true` deployments when the others fail. `Spread` does that itself,
over the direct transport, so such a run never imports litellm (seconds of CPU before its first
request) nor pays its Router's per-call work. Any other configuration goes through litellm's
Router (`moscopt.lm.deployments`).

A failure the request itself caused (`Fault` kind `request`: a 400, an answer too large) is
raised at once: another deployment of the same model would refuse it too.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from moscopt.lm.base import LMRequest
from moscopt.lm.health import DeploymentHealth
from moscopt.lm.retry import Fault
from moscopt.lm.transport import Transport, uses_direct_transport
from moscopt.lm.wire import RawAnswer

if TYPE_CHECKING:
    from moscopt.config import DeploymentConfig, LLMConfig, RoutingConfig

WINDOW = 60.0  # seconds over which failures count towards a rest (litellm's: the minute)


def spreads(llm: LLMConfig) -> bool:
    """Whether `llm.deployments` are served by `Spread` (see the module), not litellm's Router."""
    return llm.transport == "auto" and spreadable(llm.deployments, llm.routing)


def spreadable(deployments: Sequence[DeploymentConfig], routing: RoutingConfig) -> bool:
    """Simple-shuffle over direct endpoints without rpm/tpm (see the module)."""
    return routing.strategy == "simple-shuffle" and all(
        not d.rpm and not d.tpm and uses_direct_transport(d.model, d.api_base) for d in deployments
    )


@dataclass
class Member:
    """One deployment: its label, its transport, its share of the traffic, its group."""

    label: str
    transport: Transport
    weight: int = 1
    fallback: bool = False
    failures: list[float] = field(default_factory=list)  # when it failed, within WINDOW
    rests_until: float = 0.0


class Spread:
    """Weighted random choice among the deployments that are not resting; see the module."""

    def __init__(
        self,
        members: Sequence[Member],
        *,
        retries: int,
        allowed_fails: int,
        cooldown: float,
        health: DeploymentHealth,
        clock: Callable[[], float] = time.monotonic,
        rng: random.Random | None = None,
    ) -> None:
        self.groups = [[m for m in members if not m.fallback], [m for m in members if m.fallback]]
        self._retries = retries
        self._allowed_fails = allowed_fails
        self._cooldown = cooldown
        self._health = health
        self._clock = clock
        self._rng = rng or random.Random()

    def resting(self) -> list[str]:
        now = self._clock()
        return sorted(m.label for g in self.groups for m in g if m.rests_until > now)

    async def asend(self, request: LMRequest) -> RawAnswer:
        last: Fault | None = None
        for group in self.groups:
            tried: set[str] = set()
            for _ in range(self._retries + 1):
                member = self._pick(group, tried)
                if member is None:
                    break
                try:
                    raw = await member.transport.asend(request)
                except Fault as fault:
                    self._failed(member, group, fault)
                    if fault.kind == "request":
                        raise
                    last = fault
                    tried.add(member.label)
                    continue
                self._health.answered(member.label)
                return replace(raw, deployment=member.label)
        if last is not None:
            raise last
        wait = min((m.rests_until for g in self.groups for m in g), default=0.0) - self._clock()
        raise Fault(
            "transient",
            "no deployment available: every one is resting after its failures "
            f"(routing.cooldown), the first back in {max(wait, 0.0):.1f}s",
            retry_after=max(wait, 0.0),
        )

    def _pick(self, group: list[Member], tried: set[str]) -> Member | None:
        now = self._clock()
        ready = [m for m in group if m.rests_until <= now]
        fresh = [m for m in ready if m.label not in tried] or ready  # another one, if any
        if not fresh:
            return None
        return self._rng.choices(fresh, weights=[m.weight for m in fresh])[0]

    def _failed(self, member: Member, group: list[Member], fault: Fault) -> None:
        self._health.failed(member.label, " ".join(fault.message.split())[:300])
        if fault.kind == "request" or len(group) < 2:
            return  # its request's fault; or the only one of its group, never rested
        now = self._clock()
        member.failures = [t for t in member.failures if now - t < WINDOW] + [now]
        if len(member.failures) > self._allowed_fails:
            member.rests_until = now + self._cooldown
            member.failures = []
