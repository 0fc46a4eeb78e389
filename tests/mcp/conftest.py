"""Fixtures of the MCP tests: the loopback world and a `moscopt mcp` session in the project."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("mcp")

from mcp_env import Session, server_params

from moscopt.testing import FakeServer
from moscopt.testing.scripted import server_responder


@pytest.fixture
def loopback() -> Iterator[FakeServer]:
    with FakeServer(responder=server_responder) as server:
        yield server


@pytest.fixture
def session(project: Path, loopback: FakeServer) -> Iterator[Session]:
    s = Session(server_params(project), loopback.url)
    try:
        yield s
    finally:
        s.close()
