"""A fault-injecting HTTP proxy on loopback, in front of the test server.

Each request takes the next action of its schedule (then `pass` once the schedule runs out):
`pass` forwards it; `429`/`502`/`503`/`504`/`400` answer with that status and an Elasticsearch
error body; `breaker` answers 429 with a PERMANENT circuit_breaking_exception; `delay:S` waits
S seconds then forwards; `drop` closes the connection without answering; `sub429` forwards an
`_msearch` and turns its first sub-response into a 429 error; `echo-auth` answers 400 with a
reason that quotes the Authorization header; `html200`, `error200`, `short200` answer 200 as a
server that is not Elasticsearch would. It counts every request it sees.
`by_path={"/_bulk": "drop"}` applies an action to every request whose path holds the key,
before the schedule. With `slow_when=(marker, seconds)`, every request whose body holds
`marker` is delayed (a heavy query that times out whenever it is sent).
"""

from __future__ import annotations

import http.client
import json
import socket
import threading
import time
from collections.abc import Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

_HOP_HEADERS = {"connection", "keep-alive", "transfer-encoding", "content-length", "host"}


def _error_body(status: int, kind: str = "es_rejected_execution_exception",
                durability: str | None = None) -> bytes:
    error: dict[str, object] = {"type": kind, "reason": f"injected {status}"}
    if durability:
        error["durability"] = durability
    return json.dumps({"error": {**error, "root_cause": [error]}, "status": status}).encode()


_NOT_ELASTICSEARCH = {
    "html200": ("text/html", b"<html><body>Welcome to nginx!</body></html>"),
    "error200": ("application/json", b'{"error": "not here", "status": 200}'),
    "short200": ("application/json", b'{"responses": []}'),
}
"""Answers with status 200 from a server that is not Elasticsearch (a proxy's page, say)."""


class FaultProxy:
    """`with FaultProxy(upstream, ["503", "pass"]) as proxy: proxy.url ...`"""

    def __init__(self, upstream: str, schedule: Iterable[str] = (), port: int = 0,
                 slow_when: tuple[bytes, float] | None = None,
                 by_path: dict[str, str] | None = None) -> None:
        self.upstream = urlsplit(upstream)
        self.schedule = list(schedule)
        self.slow_when = slow_when
        self.by_path = by_path or {}
        self.requests = 0
        self.paths: list[str] = []
        self.authorizations: list[str | None] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", port), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def serve_forever(self) -> None:
        self._server.serve_forever()

    def __enter__(self) -> FaultProxy:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def next_action(self, path: str) -> str:
        with self._lock:
            self.requests += 1
            self.paths.append(path)
            for part, action in self.by_path.items():
                if part in path:
                    return action
            return self.schedule.pop(0) if self.schedule else "pass"

    def forward(self, method: str, path: str, headers: dict[str, str],
                body: bytes) -> tuple[int, list[tuple[str, str]], bytes]:
        connection = http.client.HTTPConnection(self.upstream.hostname, self.upstream.port,
                                                timeout=60)
        try:
            connection.request(method, path, body=body or None, headers=headers)
            response = connection.getresponse()
            return response.status, response.getheaders(), response.read()
        finally:
            connection.close()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *_: object) -> None:
                return None

            def _serve(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(length) if length else b""
                if self.path == "/__proxy_requests":
                    self._answer(200, [], str(proxy.requests).encode())
                    return
                proxy.authorizations.append(self.headers.get("authorization"))
                action = proxy.next_action(self.path)
                if action == "drop":
                    self.connection.shutdown(socket.SHUT_RDWR)
                    self.close_connection = True
                    return
                if action.startswith("delay:"):
                    time.sleep(float(action.split(":", 1)[1]))
                if proxy.slow_when is not None and proxy.slow_when[0] in body:
                    time.sleep(proxy.slow_when[1])
                if action.isdigit():
                    self._answer(int(action), [], _error_body(int(action)))
                    return
                if action == "echo-auth":  # a server whose error reason quotes the header
                    reason = f"bad header Authorization: {self.headers.get('authorization')}"
                    self._answer(400, [], json.dumps({"error": {"type": "x", "reason": reason},
                                                      "status": 400}).encode())
                    return
                if action in _NOT_ELASTICSEARCH:
                    kind, payload = _NOT_ELASTICSEARCH[action]
                    self._answer(200, [("Content-Type", kind)], payload)
                    return
                if action == "breaker":
                    self._answer(429, [], _error_body(429, "circuit_breaking_exception",
                                                      "PERMANENT"))
                    return
                headers = {k: v for k, v in self.headers.items()
                           if k.lower() not in _HOP_HEADERS}
                status, response_headers, payload = proxy.forward(
                    self.command, self.path, headers, body)
                if action == "sub429":
                    payload = _first_sub_response_throttled(payload)
                self._answer(status, response_headers, payload)

            def _answer(self, status: int, headers: list[tuple[str, str]], payload: bytes) -> None:
                self.send_response(status)
                for key, value in headers:
                    if key.lower() not in _HOP_HEADERS:
                        self.send_header(key, value)
                if not any(k.lower() == "content-type" for k, _ in headers):
                    self.send_header("content-type", "application/json")
                if not any(k.lower() == "x-elastic-product" for k, _ in headers):
                    self.send_header("x-elastic-product", "Elasticsearch")
                self.send_header("content-length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = _serve

        return Handler


def _first_sub_response_throttled(payload: bytes) -> bytes:
    data = json.loads(payload)
    error = json.loads(_error_body(429))
    data["responses"][0] = {**error, "status": 429}
    return json.dumps(data).encode()


def main() -> None:
    """`python -m tests.fault_proxy UPSTREAM PORT`: a counting proxy in its own process.
    GET /__proxy_requests answers the number of requests forwarded so far."""
    import sys

    proxy = FaultProxy(sys.argv[1], port=int(sys.argv[2]))
    proxy.serve_forever()


if __name__ == "__main__":
    main()
