"""The direct transport against a server with a small listen backlog (prints figures).

    python scripts/bench_backlog.py [--requests 96] [--concurrency 32] [--latency 0.1]
                                    [--backlogs 5,128] [--repeat 3]

A threaded loopback HTTP server in a child process (Python's `ThreadingHTTPServer`, whose
`request_queue_size`, the listen backlog, is 5 by default; several self-hosted servers are
similar) answers each chat completion after `--latency` seconds. This process sends
`--requests` requests through one `HTTPTransport` at `--concurrency` connections, all at once,
and measures the span from the first request to the last answer. ideal = ceil(requests /
concurrency) x latency. With a backlog of 5, a burst of connection attempts overflows the
server's accept queue: the kernel drops the attempts beyond it, and a dropped attempt is
retried by TCP only after a second. Printed per backlog: the median span, span / ideal, and
the connections the server accepted.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import statistics
import subprocess
import sys
import time

SERVER = r"""
import json, sys, threading, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

backlog, latency = int(sys.argv[1]), float(sys.argv[2])
accepted = [0]
lock = threading.Lock()

class Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = backlog

    def get_request(self):
        with lock:
            accepted[0] += 1
        return super().get_request()

class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_GET(self):
        body = json.dumps({"accepted": accepted[0]}).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self):
        self.rfile.read(int(self.headers["Content-Length"]))
        time.sleep(latency)
        body = json.dumps({
            "id": "x", "object": "chat.completion", "created": 0, "model": "m",
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": "4"}}],
            "usage": {"prompt_tokens": 5, "completion_tokens": 1, "total_tokens": 6},
        }).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

server = Server(("127.0.0.1", 0), Handler)
print(f"http://127.0.0.1:{server.server_address[1]}/v1", flush=True)
server.serve_forever()
"""


async def burst(url: str, requests: int, concurrency: int) -> float:
    from moscopt.lm.base import LMRequest
    from moscopt.lm.transport import HTTPTransport

    transport = HTTPTransport("openai/m", url, timeout=60, max_connections=concurrency)
    message = {"role": "user", "content": "2 + 2?"}
    request = LMRequest("openai/m", (message,), temperature=0.0, top_p=1.0, max_tokens=8)
    start = time.perf_counter()
    await asyncio.gather(*(transport.asend(request) for _ in range(requests)))
    span = time.perf_counter() - start
    await transport.aclose()
    return span


def accepted(url: str) -> int:
    import json
    import urllib.request

    with urllib.request.urlopen(url.removesuffix("/v1") + "/stats") as r:
        return int(json.loads(r.read())["accepted"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=96)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--latency", type=float, default=0.1)
    parser.add_argument("--backlogs", default="5,128")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    ideal = math.ceil(args.requests / args.concurrency) * args.latency
    print(
        f"{args.requests} requests, concurrency {args.concurrency}, latency {args.latency}s: "
        f"ideal {ideal:.2f}s"
    )
    for backlog in (int(b) for b in args.backlogs.split(",")):
        spans, connections = [], []
        for _ in range(args.repeat):  # a fresh server each time: no connection is warm
            cmd = [sys.executable, "-c", SERVER, str(backlog), str(args.latency)]
            proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
            try:
                assert proc.stdout is not None
                url = proc.stdout.readline().strip()
                spans.append(asyncio.run(burst(url, args.requests, args.concurrency)))
                connections.append(accepted(url) - 1)  # less the stats request's own
            finally:
                proc.kill()
                proc.wait()
        span = statistics.median(spans)
        print(
            f"  backlog {backlog:>4}: span {span:.2f}s median of {args.repeat} "
            f"({', '.join(f'{s:.2f}' for s in spans)}), {span / ideal:.2f}x ideal, "
            f"connections accepted {connections}"
        )


if __name__ == "__main__":
    main()
