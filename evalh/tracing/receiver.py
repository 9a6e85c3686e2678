"""The run's OTLP/HTTP trace receiver: ``POST /v1/traces`` on 127.0.0.1, in a daemon thread.

It answers as OTLP/HTTP says: 200 with an ``ExportTraceServiceResponse`` in the request's encoding
(``partialSuccess.rejectedSpans`` when some spans were refused: malformed, of a trace the run did not
issue, over a bound), 400 with a ``google.rpc.Status`` body when the body is not OTLP, 413 when it is
larger than :data:`~evalh.tracing.otlp.MAX_BODY_BYTES`, 415 for another content type, 404 for another
path. It binds the loopback interface only, whatever the config says: spans carry prompts and outputs.
Every connection has a read timeout, so a client that stalls cannot hold a thread.
"""

from __future__ import annotations

import errno
import gzip
import json
import os
import sys
import threading
import time
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from evalh.errors import ConfigError
from evalh.tracing.collector import SpanCollector
from evalh.tracing.otlp import MAX_BODY_BYTES, OtlpError, body_format, decode_export

__all__ = ["LOOPBACK", "OtlpReceiver"]

LOOPBACK = "127.0.0.1"
TRACES_PATH = "/v1/traces"
_READ_TIMEOUT_S = 10.0  # each read of a connection
_BODY_DEADLINE_S = 30.0  # a whole body
_MAX_CONNECTIONS = 64  # requests handled at once; more wait in the listen backlog
# Connections open at once (a thread each, idle keep-alive ones included until their read timeout);
# more are closed at once, so a local client opening thousands cannot start thousands of threads.
_MAX_OPEN_CONNECTIONS = 256
_INVALID_ARGUMENT = 3  # google.rpc.Code


def _varint(number: int) -> bytes:
    out = bytearray()
    while True:
        byte, number = number & 0x7F, number >> 7
        out.append(byte | (0x80 if number else 0))
        if not number:
            return bytes(out)


def _status_protobuf(code: int, message: str) -> bytes:
    """A ``google.rpc.Status`` (field 1: code, field 2: message) by hand: its class is not in
    opentelemetry-proto, and these two fields are all OTLP's error body holds."""
    text = message.encode("utf-8")
    return b"\x08" + _varint(code) + b"\x12" + _varint(len(text)) + text


def _success_body(kind: str, rejected: int, problem: str) -> bytes:
    if kind == "json":
        partial = {"rejectedSpans": str(rejected), "errorMessage": problem} if rejected else None
        return json.dumps({"partialSuccess": partial} if partial else {}).encode()
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

    response = ExportTraceServiceResponse()
    if rejected:
        response.partial_success.rejected_spans = rejected
        response.partial_success.error_message = problem
    return bytes(response.SerializeToString())


def _inflate(body: bytes, encoding: str) -> bytes:
    """The body without its ``Content-Encoding`` (gzip, deflate), never more than the bound."""
    if encoding in ("", "identity"):
        return body
    if encoding not in ("gzip", "deflate"):
        raise OtlpError(f"unsupported content encoding {encoding!r}")
    wbits = 16 + zlib.MAX_WBITS if encoding == "gzip" else zlib.MAX_WBITS
    inflater = zlib.decompressobj(wbits)
    try:
        plain = inflater.decompress(body, MAX_BODY_BYTES + 1)
    except (zlib.error, gzip.BadGzipFile) as error:
        raise OtlpError(f"the body is not valid {encoding}: {error}") from None
    if len(plain) > MAX_BODY_BYTES:
        raise _TooLarge
    return plain


class _TooLarge(Exception):
    pass


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    timeout = _READ_TIMEOUT_S
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: a run's console is for its rows."""

    def do_POST(self) -> None:
        with self.server.slots:
            self._export()

    def _export(self) -> None:
        if self.path.split("?", 1)[0] != TRACES_PATH:
            return self._reply(404, "json", f"no such path: POST {TRACES_PATH}")
        kind = body_format(self.headers.get("Content-Type", ""))
        length_text = self.headers.get("Content-Length")
        if kind is None:
            return self._reply(415, "json", "use application/json or application/x-protobuf", close=True)
        if length_text is None or not (length_text.isascii() and length_text.isdigit()):  # int("²") fails
            return self._reply(411, kind, "a Content-Length is required", close=True)
        length = int(length_text)
        if length > MAX_BODY_BYTES:  # not read: the connection is closed instead
            return self._reply(413, kind, f"the body is larger than {MAX_BODY_BYTES} bytes", close=True)
        body = self._read_body(length)
        if body is None:
            return self._reply(400, kind, "the body ended early or came too slowly", close=True)
        encoding = self.headers.get("Content-Encoding", "").strip().lower()
        try:
            decoded = decode_export(_inflate(body, encoding), self.headers.get("Content-Type", ""))
        except _TooLarge:
            return self._reply(413, kind, f"the body inflates to more than {MAX_BODY_BYTES} bytes")
        except OtlpError as error:
            self.server.malformed += 1
            return self._reply(400, kind, str(error))
        refused = self.server.collector.add(decoded.spans)
        rejected = decoded.rejected + refused
        problem = decoded.problem or ("spans refused: unknown trace ids or over the bound" if refused else "")
        self._send(200, kind, _success_body(kind, rejected, problem))

    def _read_body(self, length: int) -> bytes | None:
        """``length`` bytes, or None when the client stops early or takes longer than the deadline in
        all (each read has the socket's timeout; a client trickling a byte at a time meets this one)."""
        deadline = time.monotonic() + _BODY_DEADLINE_S
        chunks: list[bytes] = []
        left = length
        try:
            while left > 0 and time.monotonic() < deadline:
                chunk = self.rfile.read1(min(left, 65536))
                if not chunk:
                    break
                chunks.append(chunk)
                left -= len(chunk)
        except OSError:  # the socket's own timeout
            return None
        return b"".join(chunks) if left == 0 else None

    def _reply(self, status: int, kind: str, message: str, *, close: bool = False) -> None:
        if kind == "protobuf":
            body = _status_protobuf(_INVALID_ARGUMENT, message)
        else:
            body = json.dumps({"code": _INVALID_ARGUMENT, "message": message}).encode()
        self._send(status, kind, body, close=close)

    def _send(self, status: int, kind: str, body: bytes, *, close: bool = False) -> None:
        self.send_response(status)
        self.send_header(
            "Content-Type", "application/x-protobuf" if kind == "protobuf" else "application/json"
        )
        self.send_header("Content-Length", str(len(body)))
        if close:
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        self.wfile.write(body)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    # SO_REUSEADDR: binds a port that only TIME_WAIT connections of an ended run still hold (a run
    # right after another on the same fixed port); Linux and macOS still refuse a port another socket
    # listens on. Not on Windows, where it would let two receivers share a port.
    allow_reuse_address = os.name != "nt"

    def __init__(self, port: int, collector: SpanCollector) -> None:
        self.collector = collector
        self.malformed = 0
        self.slots = threading.BoundedSemaphore(_MAX_CONNECTIONS)
        self.connections = threading.BoundedSemaphore(_MAX_OPEN_CONNECTIONS)
        self.refused_connections = 0
        super().__init__((LOOPBACK, port), _Handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        """A thread for the connection, unless :data:`_MAX_OPEN_CONNECTIONS` are open: then it is closed."""
        if not self.connections.acquire(blocking=False):
            self.refused_connections += 1
            self.shutdown_request(request)
            return
        try:
            super().process_request(request, client_address)
        except BaseException:  # no thread started: the slot is free again
            self.connections.release()
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self.connections.release()

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that went away (an exporter killed by its provider's timeout, a reset) is no news:
        socketserver's default prints a traceback on the run's console."""
        if isinstance(sys.exc_info()[1], OSError):
            return
        super().handle_error(request, client_address)


class OtlpReceiver:
    """The receiver of one run: :meth:`start` binds and serves, :meth:`stop` ends it."""

    def __init__(self, collector: SpanCollector, port: int) -> None:
        self.collector = collector
        self.requested_port = port
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("the receiver is not started")
        return int(self._server.server_address[1])

    @property
    def base_url(self) -> str:
        """What ``OTEL_EXPORTER_OTLP_ENDPOINT`` names: exporters append ``/v1/traces``."""
        return f"http://{LOOPBACK}:{self.port}"

    @property
    def malformed(self) -> int:
        return self._server.malformed if self._server is not None else 0

    def start(self) -> None:
        """Bind 127.0.0.1:port (0: a free port) and serve in a daemon thread; ConfigError if taken."""
        try:
            self._server = _Server(self.requested_port, self.collector)
        except OSError as error:
            busy = error.errno in (errno.EADDRINUSE, errno.EACCES)
            raise ConfigError(
                f"cannot listen on {LOOPBACK}:{self.requested_port} for the OTLP receiver "
                f"({'the port is in use' if busy else error.strerror or error})",
                where="tracing.otlp.http.port",
                hint="Set tracing.otlp.http.port to a free port, or 0 to let the system pick one",
            ) from None
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.1}, name="evalh-otlp", daemon=True
        )
        self._thread.start()

    def stop(self) -> None:
        """Stop serving and close the port (idempotent)."""
        server, thread = self._server, self._thread
        self._server = self._thread = None
        if server is not None:
            server.shutdown()
            server.server_close()
        if thread is not None:
            thread.join(timeout=5)
