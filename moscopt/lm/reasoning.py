"""Which OpenAI models take `max_completion_tokens` instead of `max_tokens` on the direct path.

OpenAI's reasoning models refuse `max_tokens`. litellm renames it for them; the direct transport
(`moscopt.lm.transport`) does the same, by litellm's own rule (litellm 1.8x,
`ProviderConfigManager` for provider `openai`): an o-series model (`o` and a digit, e.g. `o3-mini`)
that litellm's catalog lists as an OpenAI model (its bundled price map, read as data by
`moscopt.lm.pricing`: a served model that merely looks like one keeps `max_tokens`), or a model
whose name holds `gpt-5` or `gpt-6`, except `gpt-5-chat`. `hosted_vllm/...` models always keep
`max_tokens`.
"""

from __future__ import annotations

REASONING_MARKERS = ("gpt-5", "gpt-6")


def tokens_field(model: str) -> str:
    """The body field of the answer's token bound for `model` (`provider/name`)."""
    provider, _, name = model.partition("/")
    if provider != "openai":
        return "max_tokens"
    last = name.split("/")[-1]
    if any(marker in name for marker in REASONING_MARKERS) and "gpt-5-chat" not in last:
        return "max_completion_tokens"
    if len(last) > 1 and last[0] == "o" and last[1].isdigit() and _in_catalog(last):
        return "max_completion_tokens"
    return "max_tokens"


def _in_catalog(name: str) -> bool:
    """Whether litellm's price map lists `name` as an OpenAI model (read once per process)."""
    from moscopt.lm.pricing import load_price_map

    entry = load_price_map().result().get(name)
    return isinstance(entry, dict) and entry.get("litellm_provider") == "openai"
