"""Test kit: fakes at the `LM` seam and a loopback OpenAI-compatible server.

`FakeLM` drives LLM behaviour in unit tests (a queue of answers and a history of requests);
`FakeServer` stands in for a real endpoint in end-to-end, concurrency and fault tests. Neither
imports litellm, and neither touches the network beyond 127.0.0.1.
"""

from __future__ import annotations

from moscopt.testing.fake_lm import FakeLM
from moscopt.testing.fake_server import FakeServer, ServerRequest

__all__ = ["FakeLM", "FakeServer", "ServerRequest"]
