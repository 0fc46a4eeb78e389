"""Options shared by the commands that call models, and their mapping onto config keys."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

MODEL = typer.Option(None, "--model", help="litellm model string (default: local/smollm2).")
OPTIMIZER_MODEL = typer.Option(
    None, "--optimizer-model", help="Model that reflects and edits (default: --model)."
)
API_BASE = typer.Option(None, "--api-base", help="OpenAI-compatible endpoint URL.")
CONFIG = typer.Option(None, "--config", help="Project config (default: nearest moscopt.yaml).")
SEED = typer.Option(None, "--seed", help="Random seed.")
CONCURRENCY = typer.Option(None, "--concurrency", help="LLM requests in flight.")
MAX_CALLS = typer.Option(None, "--max-calls", help="Hard budget: LLM calls.")
MAX_COST = typer.Option(None, "--max-cost", help="Hard budget: US dollars.")
DATA = typer.Option(None, "--data", help="Local JSONL file or folder instead of the hub.")
LIMIT = typer.Option(None, "--limit", help="Use only the first N tasks of each split.")
MAX_TOKENS = typer.Option(None, "--max-tokens", help="Longest answer per LLM call, in tokens.")
NO_CACHE = typer.Option(False, "--no-cache", help="Do not reuse cached LLM responses.")
JSON = typer.Option(False, "--json", help="Machine-readable output.")


def overrides(
    *,
    model: str | None = None,
    optimizer_model: str | None = None,
    api_base: str | None = None,
    seed: int | None = None,
    concurrency: int | None = None,
    max_calls: int | None = None,
    max_cost: float | None = None,
    data: Path | None = None,
    limit: int | None = None,
    max_tokens: int | None = None,
    no_cache: bool = False,
    **extra: Any,
) -> dict[str, Any]:
    """Flags as dotted config keys (None: not given)."""
    out: dict[str, Any] = {
        "model": model,
        "optimizer_model": optimizer_model,
        "api_base": api_base,
        "seed": seed,
        "llm.concurrency": concurrency,
        "llm.max_calls": max_calls,
        "llm.max_cost": max_cost,
        "data.path": str(data) if data is not None else None,
        "data.limit": limit,
        "sampling.max_tokens": max_tokens,
        "llm.cache": False if no_cache else None,
    }
    out.update(extra)
    return {k: v for k, v in out.items() if v is not None}
