"""The viewer's HTTP server: the standard library's threading server, local by default.

It serves exactly three things: the page, its own static files (a fixed list of names, so no path
ever reaches the file system) and a JSON API over a :class:`~evalh.viewer.sources.RunSource`::

    GET /                                   the page (evalh.reports.html.server_page)
    GET /static/evalh.js, /static/app.css   the viewer's scripts (as one file) and its stylesheet
    GET /api/runs                           {runs: [summary, ...], readOnly, readOnlyReason}, newest first
    GET /api/runs/REF?offset=O&limit=L      a page of one run's viewer data (evalh.viewer.pages)
    GET /api/compare?baseline=A&current=B   two runs compared as `evalh diff` compares them
    POST /api/runs/REF/rows/ROW_ID/rating   rate a result {"pass", "score"?, "comment"?} -> {"rating"}
    DELETE /api/runs/REF/rows/ROW_ID/rating clear its rating -> {"cleared": bool}

A write must pass every check of :mod:`evalh.viewer.writes` (token, Origin, JSON, bounds). The viewer is
read-only (every write 405) with ``--read-only``, when it shows runs named on the command line, and when
it listens on an address other machines reach (there the Host check, which stops DNS rebinding, is off).
Anything else is 404, any other method 405. Every answer carries a strict Content-Security-Policy (only
the server's own scripts and styles, no inline code, no framing). Bound to a loopback address, it also
refuses a request whose ``Host`` is not that address: a web page cannot reach it through a DNS name
that it rebinds to 127.0.0.1.
"""

from __future__ import annotations

import http.server
import ipaddress
import secrets
import socket
import sys
import threading
import traceback
import urllib.parse
from collections.abc import Mapping
from typing import Any

from evalh.errors import EvalhError, StoreError
from evalh.reports.html import STYLESHEET, script_bundle, server_page, stylesheet
from evalh.reports.serialize import dumps, encode_json
from evalh.store.ratings import UnknownRow, reviewer_name
from evalh.viewer.compare import compare_runs
from evalh.viewer.pages import FIRST_PAGE_LINES, MAX_PAGE_LINES
from evalh.viewer.sources import NAMED_RUNS_READ_ONLY, RatingWriter, RunSource, StillRecording, UnknownRun
from evalh.viewer.writes import (
    Refused,
    WriteGuard,
    WriteRate,
    body_length,
    rating_request,
    rating_route,
    sends_body,
)

__all__ = ["CONTENT_SECURITY_POLICY", "READ_ONLY_FLAG", "ViewerServer", "is_loopback"]

CONTENT_SECURITY_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; "
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
READ_ONLY_FLAG = "it was started with --read-only (start evalh view without it to rate results)"
_EXPOSED_READ_ONLY = (
    "it listens on an address other machines reach, where its Host check is off: "
    "bind a loopback address (the default --host) to rate results"
)
_TYPES = {".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8"}


def is_loopback(host: str) -> bool:
    """Whether ``host`` (an address or ``localhost``) is reachable from this machine only."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    source: RunSource
    allowed_hosts: frozenset[str] | None
    writer: RatingWriter | None  # None: read-only, for read_only's reason
    read_only: str | None
    guard: WriteGuard

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A browser that drops a connection mid-reply (a reload, a closed tab) is no error to print a
        traceback for; anything else is shown as socketserver shows it."""
        if isinstance(sys.exc_info()[1], ConnectionError):  # BrokenPipeError, ConnectionResetError, ...
            return
        super().handle_error(request, client_address)


class _Server6(_Server):
    address_family = socket.AF_INET6  # an IPv6 address to bind (::1): the IPv4 socket cannot


def _span(query: dict[str, list[str]]) -> tuple[int, int] | None:
    """The page a run's request asks for: (offset, limit), limit at most MAX_PAGE_LINES; None when bad."""
    try:
        offset = int(query.get("offset", ["0"])[0])
        limit = int(query.get("limit", [str(FIRST_PAGE_LINES)])[0])
    except ValueError:
        return None
    if offset < 0 or limit < 1:
        return None
    return offset, min(limit, MAX_PAGE_LINES)


class _Handler(http.server.BaseHTTPRequestHandler):
    server: _Server
    server_version = "evalh-view"
    # seconds a connection may stall (a request's headers or body sent slowly, or never): without a bound a
    # client that stops mid-request holds its thread for ever
    timeout = 30
    sys_version = ""

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the terminal shows the URL, not one line per request."""

    def log_error(self, format: str, *args: Any) -> None:
        sys.stderr.write(f"evalh view: {format % args}\n")

    def _send(
        self, status: int, body: bytes, content_type: str, headers: Mapping[str, str] | None = None
    ) -> None:
        self.send_response(status)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Content-Security-Policy", CONTENT_SECURITY_POLICY)
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Referrer-Policy", "no-referrer")
        self.send_header("Cross-Origin-Resource-Policy", "same-origin")
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _json(self, value: Any, status: int = 200, headers: Mapping[str, str] | None = None) -> None:
        self._send(status, encode_json(dumps(value)), "application/json; charset=utf-8", headers)

    def _not_found(self, what: str) -> None:
        self._json({"error": f"not found: {what}"}, 404)

    def _own_host(self) -> bool:
        """Whether the request is addressed to this server (else it is refused, 403)."""
        allowed = self.server.allowed_hosts
        if allowed is not None and self.headers.get("Host", "") not in allowed:
            self._json({"error": "this viewer answers only on its own address"}, 403)
            return False
        return True

    def do_GET(self) -> None:
        if not self._own_host():
            return
        url = urllib.parse.urlsplit(self.path)
        path = url.path
        if path in ("/", "/index.html"):
            token = None if self.server.writer is None else self.server.guard.token
            reason = self.server.read_only
            # --read-only is asked for: its page looks as it always did, with no note in every result
            page = server_page(
                token=token,
                read_only=None if reason == READ_ONLY_FLAG else reason,
                reviewer=None if token is None else reviewer_name(),
            )
            self._send(200, page.encode("utf-8"), "text/html; charset=utf-8")
        elif path == "/static/evalh.js":
            bundle = script_bundle(repeats=True, traces=True, ratings=True)
            self._send(200, bundle.encode("utf-8"), _TYPES[".js"])
        elif path == f"/static/{STYLESHEET}":
            self._send(
                200, stylesheet(repeats=True, traces=True, ratings=True).encode("utf-8"), _TYPES[".css"]
            )
        elif path.startswith("/api/"):
            self._api(path[len("/api/") :], urllib.parse.parse_qs(url.query))
        else:
            self._not_found(path)

    do_HEAD = do_GET

    def _api(self, route: str, query: dict[str, list[str]]) -> None:
        source = self.server.source
        try:
            if route == "runs":
                reason = self.server.read_only
                self._json({"runs": source.runs(), "readOnly": reason is not None, "readOnlyReason": reason})
            elif route.startswith("runs/"):
                span = _span(query)
                if span is None:
                    self._json({"error": "offset and limit are whole numbers, limit at least 1"}, 400)
                else:
                    self._json(source.page(urllib.parse.unquote(route[len("runs/") :]), *span))
            elif route == "compare" and query.get("baseline") and query.get("current"):
                refs = (query["baseline"][0], query["current"][0])
                with source.rows(refs[0]) as baseline, source.rows(refs[1]) as current:
                    self._json(compare_runs(baseline, current, refs))
            else:
                self._not_found("/api/" + route)
        except UnknownRun as error:
            self._not_found(f"run {error.args[0]!r}")
        except EvalhError as error:  # the run store cannot be read now, a report file went bad, ...
            self._json({"error": error.render()}, 503)
        except Exception as error:  # a bug: the page says so instead of waiting on a dropped connection
            self._internal_error(error)

    def _internal_error(self, error: Exception) -> None:
        self.log_error("%s", traceback.format_exc())
        self._json({"error": f"internal error: {type(error).__name__}: {error}; a bug in evalh"}, 500)

    def _refuse(self) -> None:
        """405: no CORS header is ever sent, so a cross-origin preflight (OPTIONS) is never granted."""
        self._json({"error": f"{self.command} is not served here"}, 405, {"Allow": "GET, HEAD"})

    do_PUT = do_PATCH = do_OPTIONS = _refuse

    def do_POST(self) -> None:
        self._write()

    def do_DELETE(self) -> None:
        self._write()

    def _write(self) -> None:
        """A rating's write, once every check of :mod:`evalh.viewer.writes` passes: the Host, Origin,
        token and Content-Type before its body is read."""
        if not self._own_host():
            return
        place = rating_route(urllib.parse.urlsplit(self.path).path)
        if place is None:
            self._refuse()
            return
        headers = self._lowered_headers()
        read = False
        try:
            writer = self.server.writer
            if writer is None:
                reason = self.server.read_only
                raise Refused(405, f"this viewer takes no writes: {reason}", {"Allow": "GET, HEAD"})
            self.server.guard.check(headers, with_body=sends_body(self.command, headers))
            read = True  # from here on, the body is read (or found too large and drained) by _body
            body = self._body(headers)
            self._json(self._rate(writer, *place, body))
        except Refused as refused:
            if not read:
                self._skip_body(headers)
            self._json({"error": refused.message}, refused.status, refused.headers)
        except OSError:  # the connection: timed out (see timeout), dropped; nothing to answer on
            raise
        except Exception as error:  # a bug: the page says so instead of waiting on a dropped connection
            self._internal_error(error)

    def _body(self, headers: Mapping[str, str]) -> bytes:
        """The request's body (bounded); one too large is read on (to a bound) and dropped."""
        try:
            length = body_length(headers)
        except Refused as refused:
            if refused.status == 413:
                self._skip_body(headers)
            raise
        return self.rfile.read(length)

    def _skip_body(self, headers: Mapping[str, str]) -> None:
        """The body of a refused write, read on (to a bound) unparsed and dropped, so that the client,
        still sending it, reads the refusal rather than a reset connection."""
        text = headers.get("content-length", "").strip()
        if text.isascii() and text.isdigit() and "transfer-encoding" not in headers:
            self._drain(int(text))

    def _lowered_headers(self) -> dict[str, str]:
        """The request's headers by lower-case name (the first of a repeated one, as ``get`` gives it)."""
        headers: dict[str, str] = {}
        for name, value in self.headers.items():
            headers.setdefault(name.lower(), value)
        return headers

    def _drain(self, length: int) -> None:
        left = min(length, 1 << 20)
        while left > 0 and (chunk := self.rfile.read(min(left, 1 << 16))):
            left -= len(chunk)

    def _rate(self, writer: RatingWriter, ref: str, row_id: str, body: bytes) -> dict[str, Any]:
        try:
            if self.command == "DELETE":
                return {"cleared": writer.clear_rating(ref, row_id)}
            asked = rating_request(body)
            rating = writer.rate(ref, row_id, passed=asked.passed, score=asked.score, comment=asked.comment)
            return {"rating": rating}
        except UnknownRun as error:
            raise Refused(404, f"not found: run {error.args[0]!r}") from None
        except StillRecording as error:
            raise Refused(
                409, f"the run {error.args[0]} is still recording: rate it once it has finished"
            ) from None
        except UnknownRow as error:
            raise Refused(404, error.render()) from None
        except StoreError as error:  # the run store cannot be used now (locked, damaged): not a missing row
            raise Refused(503, error.render()) from None
        except EvalhError as error:  # the rating's own: a bad score, a bad EVALH_REVIEWER of the server's
            raise Refused(400, error.render()) from None


def _read_only_reason(source: RunSource, *, read_only: bool, exposed: bool) -> str | None:
    """Why the viewer takes no writes (None: it takes them)."""
    if read_only:
        return READ_ONLY_FLAG
    if not isinstance(source, RatingWriter):
        return NAMED_RUNS_READ_ONLY
    if exposed:
        return _EXPOSED_READ_ONLY
    return None


class ViewerServer:
    """The viewer on ``host:port`` (port 0: a free one). :meth:`start` serves in a thread."""

    def __init__(
        self,
        source: RunSource,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        read_only: bool = False,
        write_rate: WriteRate | None = None,
    ) -> None:
        host = host.strip("[]") if host.startswith("[") else host  # "[::1]", as a URL spells it
        self._httpd = (_Server6 if ":" in host else _Server)((host, port), _Handler)
        self._httpd.source = source
        self.host = host
        self.port = int(self._httpd.server_address[1])
        shown = f"[{host}]" if ":" in host else host
        self.url = f"http://{shown}:{self.port}/"
        names = {shown, "localhost"} if is_loopback(host) else None
        hosts = frozenset(f"{n}:{self.port}" for n in names) if names else None
        self._httpd.allowed_hosts = hosts
        self._httpd.guard = WriteGuard(
            token=secrets.token_urlsafe(32),
            origins=frozenset(f"http://{name}" for name in hosts or ()),
            rate=write_rate or WriteRate(),
        )
        reason = _read_only_reason(source, read_only=read_only, exposed=hosts is None)
        self._httpd.read_only = self.read_only = reason
        self._httpd.writer = source if reason is None and isinstance(source, RatingWriter) else None
        self._thread: threading.Thread | None = None

    @property
    def token(self) -> str:
        """The token a write must carry (its page has it; tests use it)."""
        return self._httpd.guard.token

    def serve_forever(self) -> None:
        self._httpd.serve_forever(poll_interval=0.2)

    def start(self) -> None:
        """Serve in a daemon thread (tests, benchmarks); :meth:`close` stops it."""
        self._thread = threading.Thread(target=self.serve_forever, name="evalh-view", daemon=True)
        self._thread.start()

    def close(self) -> None:
        if self._thread is not None:
            self._httpd.shutdown()
            self._thread.join()
        self._httpd.server_close()

    def __enter__(self) -> ViewerServer:
        """``with ViewerServer(source) as server:`` serves in a thread until the block ends."""
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
