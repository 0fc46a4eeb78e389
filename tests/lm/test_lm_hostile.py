"""A hostile endpoint (issue 25): a body past any size, JSON nested 100,000 deep, usage counts
that are negative or 1e400, an answer that echoes the request's key (in clear, base64,
reversed, upper-cased), terminal escape sequences in the answer. Every one is a bounded, clear
failure or a cleaned answer; none is a traceback, a blown budget or a secret on disk."""

from __future__ import annotations

import base64
import contextlib
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from moscopt.config import LLMConfig, SamplingConfig
from moscopt.core.jsonio import loads
from moscopt.lm import LiteLLMClient, ResponseCache
from moscopt.lm.cache import DB_FILE
from moscopt.lm.errors import BudgetExceeded, LMRequestError, LMUnavailableError
from moscopt.lm.structured import OutputInvalid, parse_structured
from moscopt.lm.wire import strip_controls
from moscopt.testing.hostile_server import HostileServer, completion, endless_chunks, response

KEY = "sk-HOSTILE-7c1d2e3f4a5b6c7d"
USER = [{"role": "user", "content": "hello"}]


def client(url: str, tmp_path: Path, model: str = "openai/fake", **llm: Any) -> LiteLLMClient:
    llm = {"max_retries": 0, "backoff_base": 0.0, "timeout": 10.0, **llm}
    return LiteLLMClient(
        model,
        sampling=SamplingConfig(max_tokens=32),
        llm=LLMConfig(**llm),
        api_base=url,
        api_key=KEY,
        cache=ResponseCache(tmp_path / "cache"),
    )


# -- item 3: the size of a reply is bounded at the transport ------------------------------------


def test_an_endless_chunked_body_stops_at_the_bound_with_the_key_named(tmp_path: Path) -> None:
    with HostileServer(lambda body, headers: endless_chunks()) as server:
        lm = client(server.url, tmp_path, max_response_bytes=1 << 20)
        with pytest.raises(LMRequestError, match=r"llm\.max_response_bytes") as info:
            lm.complete(USER)
        lm.close()
    assert "1048576 bytes" in str(info.value)


def test_an_announced_huge_body_fails_before_it_is_read(tmp_path: Path) -> None:
    def reply(body: dict[str, Any], headers: dict[str, str]) -> Any:
        yield b"HTTP/1.1 200 OK\r\nContent-Length: 200000000\r\n\r\n" + b"x" * 1000

    with HostileServer(reply) as server:
        lm = client(server.url, tmp_path, max_response_bytes=1 << 20)
        with pytest.raises(LMRequestError, match=r"llm\.max_response_bytes"):
            lm.complete(USER)
        lm.close()


def test_the_litellm_path_refuses_an_answer_past_the_bound(tmp_path: Path) -> None:
    big = completion("y" * (2 << 20))
    with HostileServer(lambda body, headers: response(big)) as server:
        lm = client(server.url, tmp_path, transport="litellm", max_response_bytes=1 << 20)
        with pytest.raises(LMRequestError, match=r"llm\.max_response_bytes"):
            lm.complete(USER)
        lm.close()
    assert len(ResponseCache(tmp_path / "cache")) == 0  # nothing of it was cached


# -- item 5: nesting and absurd numbers are bad answers, not tracebacks -------------------------


@pytest.mark.parametrize("transport", ["auto", "litellm"])
def test_an_envelope_nested_100000_deep_is_a_handled_bad_answer(
    tmp_path: Path, transport: str
) -> None:
    with HostileServer(lambda body, headers: response(b"[" * 100_000)) as server:
        lm = client(server.url, tmp_path, transport=transport)
        with pytest.raises((LMUnavailableError, LMRequestError)):
            lm.complete(USER)
        lm.close()


def test_a_structured_answer_nested_100000_deep_is_output_invalid() -> None:
    with pytest.raises(OutputInvalid):
        parse_structured("[" * 100_000 + "]" * 100_000, {"type": "array"})
    with pytest.raises(ValueError, match="nested deeper than 100 levels"):
        loads("[" * 100_000 + "]" * 100_000)


@given(st.text(alphabet='[]{}":,0123456789.e-tfnul ', max_size=3000))
def test_parse_structured_raises_only_output_invalid(text: str) -> None:
    with contextlib.suppress(OutputInvalid):
        parse_structured(text, {"type": "object"})


@pytest.mark.parametrize(
    "value",
    [
        b"[" * 100_000,
        b'{"text": "a", "model": "m", "prompt_tokens": 1e400, "completion_tokens": 1}',
        b'{"text": "a", "model": "m", "prompt_tokens": -5, "completion_tokens": 1}',
        b'{"text": "a", "model": "m", "prompt_tokens": 1.5, "completion_tokens": 1}',
    ],
)
def test_a_damaged_cache_entry_is_a_miss(tmp_path: Path, value: bytes) -> None:
    cache = ResponseCache(tmp_path)
    cache.put("k" * 64, _completion())
    cache.close()
    with sqlite3.connect(tmp_path / DB_FILE) as db:
        db.execute("UPDATE Cache SET value = ?", (value,))
    assert ResponseCache(tmp_path).get("k" * 64) is None


def _completion() -> Any:
    from moscopt.lm.base import Completion

    return Completion(text="a", model="m")


# -- item 6: usage cannot bypass the budget -----------------------------------------------------


@pytest.mark.parametrize(
    "usage",
    [
        {"prompt_tokens": -1_000_000, "completion_tokens": -1_000_000},
        {"prompt_tokens": 1e400, "completion_tokens": 5},
        {"prompt_tokens": True, "completion_tokens": "9"},
        {},
    ],
)
def test_implausible_usage_is_estimated_and_never_negative(
    tmp_path: Path, usage: dict[str, Any]
) -> None:
    body = (
        json.dumps({"choices": [{"message": {"content": "z" * 300}}], "usage": usage})
        .encode()
        .replace(b"Infinity", b"1e400")
    )
    with HostileServer(lambda b, h: response(body)) as server:
        lm = client(server.url, tmp_path, model="openai/gpt-4o-mini")
        done = lm.complete(USER)
        lm.close()
    assert done.usage.prompt_tokens >= 1 and done.usage.completion_tokens == 32  # max_tokens
    assert done.cost > 0 and lm.stats.cost > 0 and lm.budget.cost > 0


def test_negative_usage_cannot_pass_max_cost(tmp_path: Path) -> None:
    body = completion("z" * 3000, {"prompt_tokens": -(10**8), "completion_tokens": -(10**8)})
    with HostileServer(lambda b, h: response(body)) as server:
        lm = client(server.url, tmp_path, model="openai/gpt-4o-mini", max_cost=0.002, cache=False)
        lm.cache = None
        with pytest.raises(BudgetExceeded):
            for i in range(200):
                lm.complete(USER, sample=i)
        lm.close()
    assert 0 < lm.budget.cost <= 0.002


# -- item 1: a key echoed in an answer never reaches the cache ----------------------------------


def echoes(body: dict[str, Any], headers: dict[str, str]) -> Any:
    auth = headers["authorization"]  # "Bearer sk-..."
    text = " | ".join(
        [
            auth,
            base64.b64encode(auth.encode()).decode(),
            auth[::-1],
            auth.upper(),
            base64.b64encode(b"Authorization: " + auth.encode()).decode(),
        ]
    )
    return response(completion(text))


@pytest.mark.parametrize("transport", ["auto", "litellm"])
def test_an_echoed_key_is_masked_before_the_cache_in_every_encoding(
    tmp_path: Path, transport: str
) -> None:
    with HostileServer(echoes) as server:
        lm = client(server.url, tmp_path, transport=transport)
        done = lm.complete(USER)
        lm.close()
    assert server.requests[0]["authorization"] == f"Bearer {KEY}"  # the key was sent
    assert "***" in done.text
    forms = [KEY, KEY[::-1], KEY.upper(), KEY.upper()[::-1]]
    forms += [base64.b64encode(f"Bearer {KEY}".encode()).decode()[4:-4]]
    for path in (tmp_path / "cache").rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            assert not any(f.encode() in data for f in forms), path
    assert not any(f in done.text for f in forms)


# -- item 7: terminal controls never leave the wire ---------------------------------------------

OSC52 = "\x1b]52;c;ZWNobyBwd25lZA==\x07"
OSC8 = "\x1b]8;;http://evil.example\x1b\\click\x1b]8;;\x1b\\"


def test_terminal_controls_are_stripped_from_answers(tmp_path: Path) -> None:
    text = f"a{OSC52}b{OSC8}\x1b[2J\x1b[H\r\nc\td\x9b31m\x08"
    with HostileServer(lambda b, h: response(completion(text))) as server:
        lm = client(server.url, tmp_path)
        done = lm.complete(USER)
        lm.close()
    assert "\x1b" not in done.text and "\x07" not in done.text and "\x9b" not in done.text
    assert "\r" not in done.text and "\x08" not in done.text
    assert "\nc\td" in done.text  # newlines and tabs are kept


@given(st.text())
def test_strip_controls_leaves_no_control_but_newline_and_tab(text: str) -> None:
    out = strip_controls(text)
    assert all(c in "\n\t" or not (ord(c) < 32 or 127 <= ord(c) < 160) for c in out)


def test_the_router_path_refuses_an_answer_past_the_bound(tmp_path: Path) -> None:
    from moscopt.config import Config, DeploymentConfig, RoutingConfig
    from moscopt.lm import build_lm

    big = completion("y" * (2 << 20))
    with HostileServer(lambda body, headers: response(big)) as server:
        deployment = DeploymentConfig(model="hosted_vllm/fake", api_base=server.url, name="d0")
        cfg = Config(
            model="hosted_vllm/fake",
            llm=LLMConfig(
                deployments=[deployment],
                routing=RoutingConfig(retries=0),
                max_retries=0,
                max_response_bytes=1 << 20,
            ),
        )
        lm = build_lm(cfg, cache_dir=tmp_path / "c")
        with pytest.raises(LMRequestError, match=r"llm\.max_response_bytes"):
            lm.complete(USER)
        lm.close()
