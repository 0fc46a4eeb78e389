"""`make_transport`: which transport carries one endpoint's requests."""

from __future__ import annotations

from typing import TYPE_CHECKING

from moscopt.lm.local import PROVIDER as LOCAL_PROVIDER
from moscopt.lm.transport import HTTPTransport, Transport, uses_direct_transport

if TYPE_CHECKING:
    from moscopt.config import LLMConfig


def make_transport(
    model: str, api_base: str | None, llm: LLMConfig, *, api_key: str | None = None
) -> Transport:
    """The transport for one endpoint: the embedded model in process, an OpenAI-compatible
    `api_base` over plain HTTP (unless `llm.transport` is `litellm`), else litellm."""
    if model.partition("/")[0] == LOCAL_PROVIDER:
        from moscopt.lm.local import LocalTransport

        return LocalTransport(threads=llm.threads)
    if model == "mcp/client":  # the MCP client's model, through sampling
        from moscopt.lm.mcp_client import SamplingTransport

        return SamplingTransport()
    if llm.transport == "auto" and uses_direct_transport(model, api_base):
        assert api_base is not None
        return HTTPTransport(
            model,
            api_base,
            timeout=llm.timeout,
            max_connections=llm.concurrency,
            api_key=api_key,
            max_response_bytes=llm.max_response_bytes,
        )
    from moscopt.lm.litellm_transport import LiteLLMTransport

    return LiteLLMTransport(
        model,
        api_base=api_base,
        timeout=llm.timeout,
        api_key=api_key,
        max_response_bytes=llm.max_response_bytes,
    )
