"""The response cache: diskcache in a directory, keyed by `LMRequest.key()`.

Values are JSON text (never pickle) holding only the answer: text, token counts, finish reason,
the model that produced it. Requests, keys and headers are not stored. Entries never expire or
get evicted: a resumed or repeated step must find every answer it got before.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from moscopt.lm.base import Completion, Usage

CACHE_ENV = "MOSCOPT_CACHE_DIR"
HOME_ENV = "MOSCOPT_HOME"


def default_cache_dir() -> Path:
    """The user-level cache for ad-hoc evals.

    `$MOSCOPT_CACHE_DIR`, else `$MOSCOPT_HOME/cache`, else `$XDG_CACHE_HOME/moscopt`, else
    `~/.cache/moscopt`. A run uses its own `runs/<name>/cache/` instead.
    """
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV]).expanduser()
    if os.environ.get(HOME_ENV):
        return Path(os.environ[HOME_ENV]).expanduser() / "cache"
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "moscopt"


class ResponseCache:
    """A directory of cached answers; safe across threads and processes (SQLite underneath)."""

    def __init__(self, directory: str | Path) -> None:
        import diskcache  # deferred: keeps `import moscopt.lm` light

        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self._cache = diskcache.Cache(str(self.directory), eviction_policy="none", size_limit=2**62)

    def get(self, key: str) -> Completion | None:
        raw = self._cache.get(key)
        if not isinstance(raw, str):
            return None
        try:
            entry = json.loads(raw)
            return Completion(
                text=entry["text"],
                model=entry["model"],
                usage=Usage(int(entry["prompt_tokens"]), int(entry["completion_tokens"])),
                finish_reason=entry.get("finish_reason"),
            )
        except (ValueError, KeyError, TypeError):
            return None  # a damaged entry is a miss, never a crash

    def put(self, key: str, completion: Completion) -> None:
        entry: dict[str, Any] = {
            "text": completion.text,
            "model": completion.model,
            "prompt_tokens": completion.usage.prompt_tokens,
            "completion_tokens": completion.usage.completion_tokens,
            "finish_reason": completion.finish_reason,
        }
        self._cache.set(key, json.dumps(entry, sort_keys=True, ensure_ascii=False))

    def __len__(self) -> int:
        return len(self._cache)

    def __contains__(self, key: str) -> bool:
        return key in self._cache

    def close(self) -> None:
        self._cache.close()
