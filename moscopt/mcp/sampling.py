"""The connected client's model as moscopt's `mcp/client` (`moscopt.lm.mcp_client`).

A training run goes on in a thread of its own, after the `train` call that started it has
returned, so its requests go out on the connection's own channel (a server-to-client
`sampling/createMessage`), from the server's event loop: the run's loop hands each one over and
waits for its answer. That channel exists on the protocol versions with an `initialize`
handshake (2025-11-25 and before, what clients speak today); on a 2026-07-28 connection, where
sampling is deprecated, the model says it cannot be asked.
"""

from __future__ import annotations

import asyncio
import warnings
from typing import Any

from mcp.server.mcpserver import Context
from mcp.shared.exceptions import MCPError, NoBackChannelError
from mcp.types import ClientCapabilities, SamplingCapability, SamplingMessage, TextContent
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from moscopt.lm import mcp_client
from moscopt.lm.retry import Fault

# seconds a person may take to approve a sampling request in the client
ANSWER_TIMEOUT = 600.0


class ClientSampler:
    """The sampler of one connected client (its session, on the server's loop)."""

    def __init__(self, session: Any, loop: asyncio.AbstractEventLoop) -> None:
        self.session = session
        self.loop = loop

    def available(self) -> str | None:
        if self.loop.is_closed():
            return "the MCP client has disconnected"
        if self.session.protocol_version in MODERN_PROTOCOL_VERSIONS:
            return (
                f"this connection speaks MCP {self.session.protocol_version}, where a server "
                "cannot ask the client's model outside a request (sampling is deprecated there)"
            )
        if not self.session.check_client_capability(
            ClientCapabilities(sampling=SamplingCapability())
        ):
            return (
                "this MCP client does not offer sampling (sampling/createMessage); give "
                "train a model of your own (model, api_base) instead"
            )
        return None

    async def sample(
        self, system: str, messages: list[tuple[str, str]], *, temperature: float, max_tokens: int
    ) -> tuple[str, str | None]:
        asked = asyncio.run_coroutine_threadsafe(
            self._ask(system, messages, temperature, max_tokens), self.loop
        )
        try:
            result = await asyncio.wait_for(asyncio.wrap_future(asked), ANSWER_TIMEOUT)
        except TimeoutError:
            raise Fault("transient", f"the client gave no answer in {ANSWER_TIMEOUT:g} s") from None
        except NoBackChannelError as e:
            raise Fault("not_found", f"the MCP client cannot be asked: {e}") from None
        except MCPError as e:  # the client (or its user) declined this request
            raise Fault("request", f"the MCP client refused the request: {e}") from None
        except RuntimeError as e:  # no back channel, or the connection closed
            raise Fault("not_found", f"the MCP client cannot be asked: {e}") from None
        content = result.content
        text = content.text if isinstance(content, TextContent) else ""
        return text, result.stop_reason

    async def _ask(
        self, system: str, messages: list[tuple[str, str]], temperature: float, max_tokens: int
    ) -> Any:
        turns = [
            SamplingMessage(role=role, content=TextContent(type="text", text=text))
            for role, text in messages
        ]
        with warnings.catch_warnings():  # deprecated only from protocol 2026-07-28 on
            warnings.simplefilter("ignore")
            return await self.session.create_message(
                turns,
                max_tokens=max_tokens,
                system_prompt=system or None,
                temperature=temperature,
                metadata={"origin": "moscopt"},
            )


def remember_client(ctx: Context) -> None:
    """Make the client of this call the one `mcp/client` asks (one client per stdio server)."""
    mcp_client.register(ClientSampler(ctx.session, asyncio.get_running_loop()))
