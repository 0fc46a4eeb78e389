"""What a configuration spent in LLM calls, counted from its ledger, kills and resumes included.

A call is what the budget counts (`moscopt.lm.budget`): a request that reached the provider; a
cache hit is not one. Every call of a run is an `llm_call` event in its `events.jsonl`, so the
run's spending is the number of those events that are not cache hits (with their tokens and
cost).

A resumed run rewinds its ledger to its last save (`RunDir.rewind_events`) and replays what it
had done since from its response cache, free. The calls in the rewound part were made all the
same, and the resumed run's budget does not know them. So before a study resumes a run it keeps
what that part held (`RewoundCalls`: each part counted once however often the study is killed),
cuts it itself, and gives the resumed run only the calls left. A configuration thus makes as
many calls, and ends with the pool, of an uninterrupted run: the calls in flight at the kill are
made again (and counted once), and the one exception is a kill in the instant between a call's
answer reaching the cache and its event reaching the ledger, which leaves that one call out of
the count (and lets the resumed run make one more).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from moscopt.core import jsonio
from moscopt.run.fsio import atomic_write_json, iter_jsonl


@dataclass
class Spending:
    """Calls, tokens and cost (cache hits are not calls and cost nothing)."""

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float = 0.0
    cache_hits: int = 0
    failures: int = 0  # calls that got no answer (also in `calls`)

    def add(self, other: Spending) -> Spending:
        return Spending(
            self.calls + other.calls,
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
            self.cost + other.cost,
            self.cache_hits + other.cache_hits,
            self.failures + other.failures,
        )

    def count(self, event: dict[str, Any]) -> None:
        if event.get("type") != "llm_call":
            return
        if event.get("cache_hit", False):
            self.cache_hits += 1
            return
        self.calls += 1
        self.failures += not event.get("ok", True)
        self.prompt_tokens += int(event.get("prompt_tokens", 0))
        self.completion_tokens += int(event.get("completion_tokens", 0))
        self.cost += float(event.get("cost", 0.0))

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "cost": round(self.cost, 10)}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Spending:
        return cls(**{k: data[k] for k in asdict(cls()) if k in data})


def run_spending(events: Path, rewound: RewoundCalls) -> Spending:
    """A run's calls so far: its ledger plus the parts of it that resumes rewound."""
    return ledger_spending(events).add(rewound.total())


def ledger_spending(events: Path) -> Spending:
    """The calls logged in a whole ledger (torn last line skipped)."""
    total = Spending()
    for event in iter_jsonl(events):
        total.count(event)
    return total


def unsaved(events: Path, saved_bytes: int) -> tuple[Spending, str]:
    """The calls logged after byte `saved_bytes` (what a resume rewinds) and a digest of that
    part of the file (so that the same part is never counted twice)."""
    if not events.exists():
        return Spending(), ""
    data = events.read_bytes()[saved_bytes:]
    total = Spending()
    for line in data.splitlines():
        try:
            event = jsonio.loads(line)
        except json.JSONDecodeError:
            continue  # a torn last line: the process died mid-append
        if isinstance(event, dict):
            total.count(event)
    return total, hashlib.sha256(data).hexdigest()


class RewoundCalls:
    """The sidecar file of one run: the segments of its ledger that resumes rewound."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def _segments(self) -> list[dict[str, Any]]:
        if not self.path.exists():
            return []
        data = jsonio.loads(self.path.read_text(encoding="utf-8"))
        return list(data.get("segments", []))

    def total(self) -> Spending:
        out = Spending()
        for seg in self._segments():
            out = out.add(Spending.from_json(seg["spending"]))
        return out

    def note(self, events: Path, saved_bytes: int) -> Spending:
        """Record the part after `saved_bytes` before a resume rewinds it; the total so far."""
        spent, digest = unsaved(events, saved_bytes)
        segments = self._segments()
        known = {(s["offset"], s["digest"]) for s in segments}
        if spent.calls and (saved_bytes, digest) not in known:
            segments.append({"offset": saved_bytes, "digest": digest, "spending": spent.to_json()})
            atomic_write_json(self.path, {"segments": segments})
        return self.total()
