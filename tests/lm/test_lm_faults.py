"""Only a named set of failures is retried; a bug surfaces at once, with its traceback."""

from __future__ import annotations

import traceback
from typing import Any

import pytest

from moscopt.lm import LMRequestError, LMUnavailableError
from moscopt.lm import transport as http_transport
from moscopt.lm.litellm_env import litellm
from moscopt.lm.litellm_transport import litellm_fault
from moscopt.lm.retry import Fault
from moscopt.testing import FakeServer

TRANSPORTS = ["auto", "litellm"]


def user(text: str) -> Any:
    return [{"role": "user", "content": text}]


def test_a_type_error_in_our_code_surfaces_at_once(
    make_client: Any, server: FakeServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken_parse(data: Any, **_: Any) -> Any:
        return data["choices"][0] + 1  # a bug: dict + int

    monkeypatch.setattr(http_transport, "raw_answer", broken_parse)
    lm = make_client(max_retries=5)
    with pytest.raises(TypeError) as info:
        lm.complete(user("x"))
    assert server.count() == 1  # not retried
    frames = [f.name for f in traceback.extract_tb(info.value.__traceback__)]
    assert frames[-1] == "broken_parse"  # the traceback points at the bug
    assert lm.stats.retries == 0
    assert lm.budget._reserved_calls == 0  # its budget reservation was released


def test_an_unknown_exception_of_a_transport_is_not_retried(make_client: Any) -> None:
    class Exploding:
        attempts = 0

        async def asend(self, request: Any) -> Any:
            self.attempts += 1
            raise RuntimeError("something nobody named")

        async def aclose(self) -> None:
            return None

        def close(self) -> None:
            return None

    lm = make_client(max_retries=5)
    lm.transport = Exploding()
    with pytest.raises(RuntimeError, match="nobody named"):
        lm.complete(user("x"))
    assert lm.transport.attempts == 1


def test_a_bug_raised_inside_litellm_call_is_not_retried(
    make_client: Any, server: FakeServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    module = litellm()
    calls = []

    async def acompletion(**kwargs: Any) -> Any:
        calls.append(kwargs)
        raise TypeError("unexpected keyword")

    monkeypatch.setattr(module, "acompletion", acompletion)
    lm = make_client(transport="litellm", max_retries=5)
    with pytest.raises(TypeError, match="unexpected keyword"):
        lm.complete(user("x"))
    assert len(calls) == 1


def test_a_bug_that_litellm_wrapped_as_a_connection_error_is_raised_as_the_bug(
    make_client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    module = litellm()
    calls = []

    def buggy_helper() -> None:
        raise AttributeError("'NoneType' object has no attribute 'choices'")

    async def acompletion(**kwargs: Any) -> Any:
        calls.append(kwargs)
        try:
            buggy_helper()
        except AttributeError as e:  # what litellm's exception mapping does with any exception
            raise module.APIConnectionError(
                message=f"APIConnectionError: {e}", llm_provider="openai", model="fake-model"
            ) from None

    monkeypatch.setattr(module, "acompletion", acompletion)
    lm = make_client(transport="litellm", max_retries=5)
    with pytest.raises(AttributeError, match="no attribute 'choices'") as info:
        lm.complete(user("x"))
    assert len(calls) == 1
    assert "buggy_helper" in [f.name for f in traceback.extract_tb(info.value.__traceback__)]


def test_the_named_litellm_failures() -> None:
    module = litellm()
    connection = module.APIConnectionError(message="refused", llm_provider="openai", model="m")
    try:
        raise OSError("connection refused")
    except OSError:
        try:
            raise connection
        except module.APIConnectionError as e:
            network = e
    cases: list[tuple[BaseException, str | None]] = [
        (module.RateLimitError("slow down", "openai", "m"), "transient"),
        (module.InternalServerError("oops", "openai", "m"), "transient"),
        (module.AuthenticationError("bad key", "openai", "m"), "auth"),
        (module.NotFoundError("no such model", "openai", "m"), "not_found"),
        (module.ContextWindowExceededError("too long", "m", "openai"), "request"),
        (module.Timeout("slow", "m", "openai"), "transient"),
        (network, "transient"),
        (TimeoutError(), "transient"),
        (ValueError("not litellm's"), None),
        (KeyError("ours"), None),
    ]
    for error, kind in cases:
        found = litellm_fault(error, [])
        if kind is None:
            assert found is None, error
        else:
            assert isinstance(found, Fault) and found.kind == kind, (error, found)


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_lone_surrogates_in_a_reply_are_replaced_at_the_boundary(
    make_client: Any, server: FakeServer, transport: str
) -> None:
    server.responder = lambda body: "bad \ud800 half, good \U0001f600"
    events: list[dict[str, Any]] = []
    lm = make_client(transport=transport, events=events)
    done = lm.complete(user("x"))
    assert done.text == "bad \ufffd half, good \U0001f600"
    done.text.encode("utf-8")  # writable anywhere
    again = lm.complete(user("x"))  # it was cached without trouble
    assert again.cache_hit and again.text == done.text
    assert len(events) == 2


def test_an_empty_choice_list_is_a_request_error_and_garbage_is_transient(
    make_client: Any, server: FakeServer
) -> None:
    lm = make_client(max_retries=1)
    server.script("empty")
    with pytest.raises(LMRequestError):
        lm.complete(user("e"))
    server.script("garbage", "garbage")
    with pytest.raises(LMUnavailableError, match="not JSON"):
        lm.complete(user("g"))


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_lone_surrogate_in_a_prompt_is_sent_as_u_fffd(
    make_client: Any, server: FakeServer, transport: str
) -> None:
    lm = make_client(transport=transport, max_retries=0)
    done = lm.complete(user("half \ud800 a pair"))
    assert done.text == "echo: half \ufffd a pair"
    assert server.log[0].body["messages"][0]["content"] == "half \ufffd a pair"
