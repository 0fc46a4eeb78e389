"""A third red team (issue 38), the endpoint's side: a `Retry-After` that cannot be read (an HTTP
date with a `-0000` zone, garbage), compressed replies that inflate past the bound, and a key
echoed in encodings the scrubber has no list for. Each is a bounded, clear outcome on both
transports: never a traceback, never memory past `llm.max_response_bytes`, never the key on disk."""

from __future__ import annotations

import base64
import codecs
import gzip
import random
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from moscopt.config import LLMConfig, SamplingConfig
from moscopt.lm import LiteLLMClient, ResponseCache
from moscopt.lm.body_guard import BodyRefused
from moscopt.lm.errors import LMError, LMRequestError
from moscopt.lm.redact import leak_forms, leaks, normalized, scrub_secrets
from moscopt.lm.retry import RETRY_AFTER_CAP, Fault, RetryPolicy, parse_retry_after
from moscopt.testing.hostile_server import HostileServer, completion, endless_chunks, response

KEY = "sk-HOSTILE-7c1d2e3f4a5b6c7d"
USER = [{"role": "user", "content": "hello"}]


def client(url: str, tmp_path: Path, **llm: Any) -> LiteLLMClient:
    llm = {"max_retries": 0, "backoff_base": 0.0, "timeout": 10.0, **llm}
    return LiteLLMClient(
        "openai/fake",
        sampling=SamplingConfig(max_tokens=32),
        llm=LLMConfig(**llm),
        api_base=url,
        api_key=KEY,
        cache=ResponseCache(tmp_path / "cache"),
    )


# -- item 2: a Retry-After that cannot be read is ignored ---------------------------------------

DATES = [
    "Wed, 21 Oct 2015 07:28:00 -0000",  # RFC 5322: UTC, source unknown (parses without a zone)
    "Wed, 21 Oct 2015 07:28:00",  # no zone at all
    "Wed, 21 Oct 99999 07:28:00 GMT",
    "Wed, 32 Oct 2015 07:28:00 GMT",
    "1e400",
    "nan",
    "-inf",
    "\x00",
]


@pytest.mark.parametrize("value", DATES)
def test_an_unreadable_retry_after_is_none_or_a_bounded_wait(value: str) -> None:
    seconds = parse_retry_after(value)
    assert seconds is None or seconds >= 0.0
    fault = Fault("transient", "429", 429, seconds)
    assert 0.0 <= RetryPolicy().delay(1, fault, random.Random(0)) <= RETRY_AFTER_CAP


@given(st.one_of(st.text(), st.sampled_from(DATES).map(lambda d: d + " ")))
def test_parse_retry_after_never_raises(value: str) -> None:
    seconds = parse_retry_after(value)
    assert seconds is None or seconds >= 0.0


@pytest.mark.parametrize("transport", ["auto", "litellm"])
def test_a_429_with_a_minus_0000_date_backs_off_and_succeeds(
    tmp_path: Path, transport: str
) -> None:
    calls: list[int] = []

    def reply(body: dict[str, Any], headers: dict[str, str]) -> Any:
        calls.append(1)
        if len(calls) == 1:
            return response(
                b'{"error": {"message": "slow down"}}',
                status=429,
                extra="Retry-After: Wed, 21 Oct 2015 07:28:00 -0000\r\n",
            )
        return response(completion("fine"))

    with HostileServer(reply) as server:
        lm = client(server.url, tmp_path, transport=transport, max_retries=2)
        done = lm.complete(USER)
        lm.close()
    assert done.text == "fine" and len(calls) == 2


# -- item 4: the key in encodings the scrubber has no list for ----------------------------------


def _fullwidth(text: str) -> str:
    return "".join(chr(ord(c) + 0xFEE0) if 33 <= ord(c) <= 126 else c for c in text)


ENCODINGS: dict[str, Callable[[str], str]] = {
    "base32": lambda a: base64.b32encode(a.encode()).decode(),
    "rot13": lambda a: codecs.encode(a, "rot13"),
    "percent": lambda a: "".join(f"%{b:02X}" for b in a.encode()),
    "ascii85": lambda a: base64.a85encode(a.encode()).decode(),
    "base85": lambda a: base64.b85encode(a.encode()).decode(),
    "base64-reversed": lambda a: base64.b64encode(a[::-1].encode()).decode(),
    "colon-hex": lambda a: ":".join(f"{b:02x}" for b in a.encode()),
    "spaced": lambda a: " ".join(a),
    "zero-width": lambda a: "\u200b".join(a),
    "full-width": _fullwidth,
    "dotted-upper-reversed": lambda a: ".".join(a.upper()[::-1]),
}


def echo_as(encode: Callable[[str], str]) -> Any:
    def reply(body: dict[str, Any], headers: dict[str, str]) -> Any:
        return response(completion(f"sure: {encode(headers['authorization'])} done"))

    return reply


@pytest.mark.parametrize("transport", ["auto", "litellm"])
@pytest.mark.parametrize("encoding", sorted(ENCODINGS))
def test_an_echoed_key_in_any_encoding_is_never_stored(
    tmp_path: Path, transport: str, encoding: str
) -> None:
    with HostileServer(echo_as(ENCODINGS[encoding])) as server:
        lm = client(server.url, tmp_path, transport=transport)
        with pytest.raises(LMError, match="cannot be masked"):
            lm.complete(USER)
        lm.close()
    assert len(ResponseCache(tmp_path / "cache")) == 0
    for path in (tmp_path / "cache").rglob("*"):
        if path.is_file():
            assert not leaks(path.read_bytes().decode("utf-8", "replace"), [KEY]), path


@given(st.sampled_from(sorted(ENCODINGS)), st.text(max_size=40), st.text(max_size=40))
def test_the_leak_check_finds_the_key_wherever_it_is_put(
    encoding: str, before: str, after: str
) -> None:
    text = scrub_secrets(before + ENCODINGS[encoding](f"Bearer {KEY}") + after, [KEY])
    assert leaks(text, [KEY])


@given(st.text(max_size=2000))
def test_text_without_the_key_is_not_a_leak(text: str) -> None:
    assert not leaks(text, [KEY])


def test_every_form_is_distinctive() -> None:
    forms = leak_forms(KEY)
    assert len(forms) >= 30 and all(len(f) >= 8 and f == normalized(f) for f in forms)
    assert normalized("\uff53\uff4b-\u200bHO STILE") == "skhostile"


def test_an_answer_without_the_key_is_stored(tmp_path: Path) -> None:
    with HostileServer(lambda b, h: response(completion("The answer is 42."))) as server:
        lm = client(server.url, tmp_path)
        assert lm.complete(USER).text == "The answer is 42."
        lm.close()
    assert len(ResponseCache(tmp_path / "cache")) == 1


# -- item 1: compressed replies on the litellm path ---------------------------------------------


def gzip_bomb(body: dict[str, Any], headers: dict[str, str]) -> Any:
    """A completion whose content is 64 MiB of spaces, sent as 64 KiB of gzip."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)
    parts = [packer.compress(b'{"choices": [{"message": {"role": "assistant", "content": "')]
    parts += [packer.compress(b" " * (1 << 20)) for _ in range(64)]
    parts += [packer.compress(b'"}, "finish_reason": "stop"}]}'), packer.flush()]
    data = b"".join(parts)
    assert len(data) < 1 << 17
    return response(data, extra="Content-Encoding: gzip\r\n")


def test_litellm_asks_for_an_uncompressed_answer_and_refuses_a_compressed_one(
    tmp_path: Path,
) -> None:
    with HostileServer(gzip_bomb) as server:
        lm = client(server.url, tmp_path, transport="litellm", max_response_bytes=1 << 20)
        with pytest.raises(LMRequestError, match=r"compressed \(gzip\).*llm\.max_response_bytes"):
            lm.complete(USER)
        lm.close()
    assert server.requests[0]["accept-encoding"] == "identity"
    assert len(ResponseCache(tmp_path / "cache")) == 0


def test_litellm_stops_reading_an_endless_body_at_the_bound(tmp_path: Path) -> None:
    with HostileServer(lambda body, headers: endless_chunks()) as server:
        lm = client(server.url, tmp_path, transport="litellm", max_response_bytes=1 << 20)
        with pytest.raises(LMRequestError, match=r"larger than 1048576 bytes.*max_response_bytes"):
            lm.complete(USER)
        lm.close()


def test_a_router_deployment_through_litellm_refuses_a_compressed_answer(tmp_path: Path) -> None:
    from moscopt.config import Config, DeploymentConfig, RoutingConfig
    from moscopt.lm import build_lm

    with HostileServer(gzip_bomb) as server:
        deployment = DeploymentConfig(model="hosted_vllm/fake", api_base=server.url, name="d0")
        llm = LLMConfig(
            deployments=[deployment],
            routing=RoutingConfig(retries=0),
            transport="litellm",
            max_retries=0,
            max_response_bytes=1 << 20,
        )
        lm = build_lm(Config(model="hosted_vllm/fake", llm=llm), cache_dir=tmp_path / "c")
        with pytest.raises(LMRequestError, match=r"llm\.max_response_bytes"):
            lm.complete(USER)
        lm.close()


def test_outside_a_bounded_call_httpx_reads_as_before() -> None:
    import httpx

    from moscopt.lm.body_guard import bounded

    packed = gzip.compress(b"x" * 5000)
    headers = {"content-encoding": "gzip"}
    with bounded(100), pytest.raises(BodyRefused):  # installs the guard
        httpx.Response(200, headers=headers, content=packed).read()
    assert httpx.Response(200, headers=headers, content=packed).read() == b"x" * 5000
