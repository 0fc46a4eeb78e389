from __future__ import annotations

import http.client
import json
import time
from typing import Any

import pytest

from moscopt.testing import FakeServer


def post(
    server: FakeServer, body: Any, path: str = "/v1/chat/completions"
) -> tuple[int, bytes, Any]:
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=5)
    try:
        conn.request("POST", path, body=json.dumps(body), headers={"Authorization": "Bearer t"})
        response = conn.getresponse()
        return response.status, response.read(), response.headers
    finally:
        conn.close()


CHAT = {"model": "m", "messages": [{"role": "user", "content": "hi there"}]}


def test_ok_answer_is_an_openai_chat_completion() -> None:
    with FakeServer() as server:
        status, data, _ = post(server, CHAT)
        reply = json.loads(data)
        assert status == 200
        assert reply["choices"][0]["message"]["content"] == "echo: hi there"
        assert reply["usage"] == {"prompt_tokens": 2, "completion_tokens": 3, "total_tokens": 5}
        (record,) = server.log
        assert record.outcome == "ok" and record.authorized and record.body == CHAT


@pytest.mark.parametrize(
    ("outcome", "status"),
    [("429", 429), ("500", 500), ("503", 503), ("401", 401), ("403", 403), ("404", 404)],
)
def test_scripted_error_statuses(outcome: str, status: int) -> None:
    with FakeServer(retry_after="1") as server:
        server.script(outcome)
        got, _, headers = post(server, CHAT)
        assert got == status
        if outcome == "429":
            assert headers["Retry-After"] == "1"
        assert post(server, CHAT)[0] == 200  # the script is used up


def test_garbage_empty_drop_and_bad_paths() -> None:
    with FakeServer() as server:
        server.script("garbage", "empty", "drop")
        status, data, _ = post(server, CHAT)
        assert status == 200
        with pytest.raises(ValueError):
            json.loads(data)
        assert json.loads(post(server, CHAT)[1])["choices"] == []
        with pytest.raises((http.client.RemoteDisconnected, ConnectionError)):
            post(server, CHAT)
        assert post(server, CHAT, path="/v1/other")[0] == 404
        assert post(server, {"no": "messages"})[0] == 400


def test_seeded_fault_injection_is_reproducible() -> None:
    def outcomes(seed: int) -> list[str]:
        with FakeServer(fault_rate=0.5, faults=("429", "500"), seed=seed) as server:
            for _ in range(20):
                post(server, CHAT)
            return [r.outcome for r in server.log]

    first = outcomes(3)
    assert first == outcomes(3)
    assert {"ok", "429", "500"} <= set(first)


def test_stop_releases_held_requests_quickly() -> None:
    import threading

    server = FakeServer(hang=30.0).start()
    server.script("timeout")
    errors: list[BaseException] = []

    def call() -> None:
        try:
            post(server, CHAT)
        except BaseException as e:
            errors.append(e)

    t = threading.Thread(target=call)
    t.start()
    while server.count() == 0:
        time.sleep(0.01)
    server.stop()
    t.join(timeout=10)
    assert not t.is_alive() and errors
    assert server.log[0].outcome == "timeout"


def test_bad_settings_are_refused() -> None:
    with pytest.raises(ValueError):
        FakeServer(faults=("nope",))
    with pytest.raises(ValueError):
        FakeServer(fault_rate=2.0)
    with pytest.raises(ValueError):
        FakeServer().script("later")


def test_a_request_whose_client_hung_up_is_no_longer_in_flight() -> None:
    import socket as sockets

    body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}]}).encode()
    head = (
        f"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode()
    with FakeServer(latency=30) as server:
        client = sockets.create_connection(("127.0.0.1", server.port))
        client.sendall(head + body)
        for _ in range(10_000):  # until the server has it (progress, not time)
            if server.stats()["in_flight"] == 1:
                break
            time.sleep(0.001)
        assert server.stats()["in_flight"] == 1
        client.close()
        for _ in range(10_000):
            if server.stats()["in_flight"] == 0:
                break
            time.sleep(0.001)
        assert server.stats()["in_flight"] == 0  # long before its 30 s latency
        assert server.count() == 1
