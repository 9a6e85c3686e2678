"""A real HTTP server on 127.0.0.1 for protocol tests: scripted routes, every request recorded.

Usage (through the ``loopback`` fixture in conftest.py)::

    loopback.route("POST", "/v1/embeddings", lambda req: Reply.json({...}))
    loopback.script("POST", "/v1/chat/completions", [Reply(status=429, headers={"Retry-After": "0"}),
                                                     Reply.json({...})])
    provider(config={"apiBaseUrl": loopback.url + "/v1"})
    assert loopback.requests[0].json["input"] == [...]

A handler gets the :class:`Request` and returns a :class:`Reply`; ``delay_s`` sleeps before answering
(slow servers and timeouts). Unrouted paths answer 404.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["LoopbackServer", "Reply", "Request"]


@dataclass(frozen=True)
class Request:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    @property
    def json(self) -> Any:
        return json.loads(self.body.decode("utf-8"))

    def header(self, name: str) -> str | None:
        for key, value in self.headers.items():
            if key.lower() == name.lower():
                return value
        return None


@dataclass(frozen=True)
class Reply:
    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0

    @classmethod
    def json(
        cls, payload: Any, status: int = 200, headers: dict[str, str] | None = None, delay_s: float = 0.0
    ) -> Reply:
        merged = {"Content-Type": "application/json", **(headers or {})}
        return cls(status=status, body=json.dumps(payload).encode(), headers=merged, delay_s=delay_s)

    @classmethod
    def ndjson(cls, lines: list[Any], status: int = 200) -> Reply:
        body = "".join(json.dumps(line) + "\n" for line in lines).encode()
        return cls(status=status, body=body, headers={"Content-Type": "application/x-ndjson"})


Handler = Callable[[Request], Reply]


class _Server(ThreadingHTTPServer):
    # The default listen backlog of 5 resets connections when 20 clients connect at once on a loaded
    # machine (seen as a ReadError in CI); a real API server accepts far more.
    request_queue_size = 128


class LoopbackServer:
    """A ThreadingHTTPServer on an ephemeral 127.0.0.1 port, in a daemon thread."""

    def __init__(self) -> None:
        self.requests: list[Request] = []
        self._routes: dict[tuple[str, str], Handler] = {}
        self._lock = threading.Lock()
        server = self

        class _Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # headers and body go out as two writes: without this, keep-alive requests stall ~40 ms
            disable_nagle_algorithm = True

            def _serve(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                path = self.path.split("?", 1)[0]
                request = Request(self.command, self.path, dict(self.headers.items()), body)
                with server._lock:
                    server.requests.append(request)
                    handler = server._routes.get((self.command, path))
                reply = handler(request) if handler else Reply.json({"error": "not found"}, status=404)
                if reply.delay_s:
                    time.sleep(reply.delay_s)
                try:
                    self.send_response(reply.status)
                    for key, value in reply.headers.items():
                        self.send_header(key, value)
                    self.send_header("Content-Length", str(len(reply.body)))
                    self.end_headers()
                    self.wfile.write(reply.body)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (a timeout test)

            do_GET = do_POST = do_PUT = _serve

            def log_message(self, format: str, *args: Any) -> None:  # keep test output clean
                return

        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def route(self, method: str, path: str, handler: Handler) -> None:
        with self._lock:
            self._routes[(method, path)] = handler

    def script(self, method: str, path: str, replies: list[Reply]) -> None:
        """Answer with ``replies`` in order; the last one repeats."""
        queue = list(replies)

        def next_reply(_request: Request) -> Reply:
            return queue.pop(0) if len(queue) > 1 else queue[0]

        self.route(method, path, next_reply)

    def requests_to(self, path: str) -> list[Request]:
        with self._lock:
            return [r for r in self.requests if r.path.split("?", 1)[0] == path]

    def reset(self) -> None:
        with self._lock:
            self.requests.clear()
            self._routes.clear()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
