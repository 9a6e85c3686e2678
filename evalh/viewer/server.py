"""The viewer's HTTP server: the standard library's threading server, read-only, local by default.

It serves exactly three things: the page, its own static files (a fixed list of names, so no path
ever reaches the file system) and a JSON API over a :class:`~evalh.viewer.sources.RunSource`::

    GET /                                   the page (evalh.reports.html.server_page)
    GET /static/evalh.js, /static/app.css   the viewer's scripts (as one file) and its stylesheet
    GET /api/runs                           {runs: [summary, ...]}, newest first
    GET /api/runs/REF?offset=O&limit=L      a page of one run's viewer data (evalh.viewer.pages)
    GET /api/compare?baseline=A&current=B   two runs compared as `evalh diff` compares them

Anything else is 404, any other method 405. Every answer carries a strict Content-Security-Policy (only
the server's own scripts and styles, no inline code, no framing). Bound to a loopback address, it also
refuses a request whose ``Host`` is not that address: a web page cannot reach it through a DNS name
that it rebinds to 127.0.0.1.
"""

from __future__ import annotations

import http.server
import ipaddress
import sys
import threading
import traceback
import urllib.parse
from typing import Any

from evalh.errors import EvalhError
from evalh.reports.html import STYLESHEET, script_bundle, server_page, stylesheet
from evalh.reports.serialize import dumps, encode_json
from evalh.viewer.compare import compare_runs
from evalh.viewer.pages import FIRST_PAGE_LINES, MAX_PAGE_LINES
from evalh.viewer.sources import RunSource, UnknownRun

__all__ = ["CONTENT_SECURITY_POLICY", "ViewerServer", "is_loopback"]

CONTENT_SECURITY_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; "
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
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

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A browser that drops a connection mid-reply (a reload, a closed tab) is no error to print a
        traceback for; anything else is shown as socketserver shows it."""
        if isinstance(sys.exc_info()[1], ConnectionError):  # BrokenPipeError, ConnectionResetError, ...
            return
        super().handle_error(request, client_address)


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
    sys_version = ""

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the terminal shows the URL, not one line per request."""

    def log_error(self, format: str, *args: Any) -> None:
        sys.stderr.write(f"evalh view: {format % args}\n")

    def _send(self, status: int, body: bytes, content_type: str) -> None:
        self.send_response(status)
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

    def _json(self, value: Any, status: int = 200) -> None:
        self._send(status, encode_json(dumps(value)), "application/json; charset=utf-8")

    def _not_found(self, what: str) -> None:
        self._json({"error": f"not found: {what}"}, 404)

    def do_GET(self) -> None:
        allowed = self.server.allowed_hosts
        if allowed is not None and self.headers.get("Host", "") not in allowed:
            self._json({"error": "this viewer answers only on its own address"}, 403)
            return
        url = urllib.parse.urlsplit(self.path)
        path = url.path
        if path in ("/", "/index.html"):
            self._send(200, server_page().encode("utf-8"), "text/html; charset=utf-8")
        elif path == "/static/evalh.js":
            self._send(200, script_bundle(repeats=True, traces=True).encode("utf-8"), _TYPES[".js"])
        elif path == f"/static/{STYLESHEET}":
            self._send(200, stylesheet(repeats=True, traces=True).encode("utf-8"), _TYPES[".css"])
        elif path.startswith("/api/"):
            self._api(path[len("/api/") :], urllib.parse.parse_qs(url.query))
        else:
            self._not_found(path)

    do_HEAD = do_GET

    def _api(self, route: str, query: dict[str, list[str]]) -> None:
        source = self.server.source
        try:
            if route == "runs":
                self._json({"runs": source.runs()})
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
            self.log_error("%s", traceback.format_exc())
            self._json({"error": f"internal error: {type(error).__name__}: {error}; a bug in evalh"}, 500)

    def _refuse(self) -> None:
        self.send_response(405)
        self.send_header("Allow", "GET, HEAD")
        self.send_header("Content-Length", "0")
        self.end_headers()

    do_POST = do_PUT = do_DELETE = do_PATCH = do_OPTIONS = _refuse


class ViewerServer:
    """The viewer on ``host:port`` (port 0: a free one). :meth:`start` serves in a thread."""

    def __init__(self, source: RunSource, host: str = "127.0.0.1", port: int = 0) -> None:
        self._httpd = _Server((host, port), _Handler)
        self._httpd.source = source
        self.host = host
        self.port = int(self._httpd.server_address[1])
        shown = f"[{host}]" if ":" in host else host
        self.url = f"http://{shown}:{self.port}/"
        names = {shown, "localhost"} if is_loopback(host) else None
        self._httpd.allowed_hosts = frozenset(f"{n}:{self.port}" for n in names) if names else None
        self._thread: threading.Thread | None = None

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
