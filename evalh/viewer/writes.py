"""What a write to the viewer (a rating) must carry, and its bounds.

``evalh view`` takes one kind of write: ``POST`` / ``DELETE /api/runs/REF/rows/ROW_ID/rating``. A web page
the person has open in another tab must not be able to make one, so a write needs ALL of:

- the server's own ``Host`` (checked for every request: a DNS name rebound to 127.0.0.1 is refused);
- an ``Origin`` equal to the server's own origin (a browser always sends it on a POST or DELETE, and a
  page cannot forge it; a request without one is refused too);
- the per-server token in ``X-Evalh-Token``: random per server start, given to the page in a ``<meta>``
  of the served page only (another origin cannot read that page), compared in constant time;
- ``Content-Type: application/json`` on a body (a DELETE without one needs none): a form post cannot
  send it, and the custom header makes a cross-origin ``fetch`` ask first (a preflight ``OPTIONS``,
  which is never granted: no CORS header is ever sent);
- a body of at most :data:`MAX_BODY_BYTES`, and at most :data:`WRITES_PER_WINDOW` writes per
  :data:`WRITE_WINDOW_S` seconds (counted once a request has passed the checks above, so a refused
  page cannot use up the person's writes).

The Host, Origin and token are checked before the body is read: a write that is not the viewer's own
is refused whatever it sends. Each refusal is a :class:`Refused` with the status and a one-line message
that says what to do.
"""

from __future__ import annotations

import collections
import hmac
import json
import math
import re
import threading
import time
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass

from evalh.store.ratings import MAX_COMMENT_CHARS, is_text

__all__ = [
    "MAX_BODY_BYTES",
    "TOKEN_HEADER",
    "WRITES_PER_WINDOW",
    "WRITE_WINDOW_S",
    "RatingRequest",
    "Refused",
    "WriteGuard",
    "WriteRate",
    "body_length",
    "rating_request",
    "rating_route",
    "sends_body",
]

MAX_BODY_BYTES = 16 * 1024
WRITES_PER_WINDOW = 20
WRITE_WINDOW_S = 10.0
TOKEN_HEADER = "X-Evalh-Token"
_RATING_PATH = re.compile(r"/api/runs/([^/]+)/rows/([^/]+)/rating")
_BODY_SHAPE = 'the body is a JSON object {"pass": true | false, "score"?: 0 to 1, "comment"?: text}'


class Refused(Exception):
    """A write refused: its HTTP status, a one-line message, and any header to send (Retry-After)."""

    def __init__(self, status: int, message: str, headers: Mapping[str, str] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.headers = dict(headers or {})


@dataclass(frozen=True)
class RatingRequest:
    """A rating's fields as a write sends them (checked: ``score`` in [0, 1], ``comment`` bounded)."""

    passed: bool
    score: float | None
    comment: str


def rating_route(path: str) -> tuple[str, str] | None:
    """``(ref, row_id)`` of a rating's path (``/api/runs/REF/rows/ROW_ID/rating``), else None."""
    match = _RATING_PATH.fullmatch(path)
    if match is None:
        return None
    return urllib.parse.unquote(match.group(1)), urllib.parse.unquote(match.group(2))


class WriteRate:
    """At most ``limit`` writes in any ``window`` seconds (a sliding window, shared by every thread)."""

    def __init__(self, limit: int = WRITES_PER_WINDOW, window: float = WRITE_WINDOW_S) -> None:
        self.limit = limit
        self.window = window
        self._times: collections.deque[float] = collections.deque()
        self._lock = threading.Lock()

    def take(self) -> None:
        """Count one write; :class:`Refused` (429, with Retry-After) when the window is full."""
        now = time.monotonic()
        with self._lock:
            while self._times and self._times[0] <= now - self.window:
                self._times.popleft()
            if len(self._times) >= self.limit:
                wait = max(1, math.ceil(self._times[0] + self.window - now))
                raise Refused(
                    429,
                    f"too many writes: at most {self.limit} in {self.window:g} s; try again in {wait} s",
                    {"Retry-After": str(wait)},
                )
            self._times.append(now)


@dataclass(frozen=True)
class WriteGuard:
    """The checks of a write's headers (see the module docstring); the Host is checked before."""

    token: str
    origins: frozenset[str]  # "http://127.0.0.1:PORT", "http://localhost:PORT"
    rate: WriteRate

    def check(self, headers: Mapping[str, str], *, with_body: bool = True) -> None:
        """:class:`Refused` unless the headers (by lower-case name) carry this server's Origin, token
        and, ``with_body``, JSON; then one write is counted. Checked before the body is read."""
        own = " or ".join(sorted(self.origins))
        origin = headers.get("origin")
        if origin is None:
            raise Refused(403, f"a write needs an Origin header ({own}): rate results from the viewer's page")
        if origin not in self.origins:
            raise Refused(
                403, f"writes come only from the viewer's own page ({own}), not from {origin[:100]!r}"
            )
        sent = headers.get(TOKEN_HEADER.lower(), "").encode("utf-8", "surrogateescape")
        if not hmac.compare_digest(sent, self.token.encode("ascii")):
            raise Refused(
                403,
                f"a write needs this viewer's token in the {TOKEN_HEADER} header, as its page sends it: "
                "reload the page (the token changes each time evalh view starts)",
            )
        media = headers.get("content-type", "").split(";", 1)[0].strip().lower()
        if with_body and media != "application/json":
            raise Refused(415, "a write's body is JSON: send Content-Type: application/json")
        self.rate.take()


def sends_body(method: str, headers: Mapping[str, str]) -> bool:
    """Whether the request has a body to check: a POST always (its body is the rating), a DELETE only
    when it says it sends one (a DELETE without a body needs no Content-Type)."""
    length = headers.get("content-length", "0").strip()
    return method == "POST" or "transfer-encoding" in headers or length not in ("", "0")


def body_length(headers: Mapping[str, str]) -> int:
    """The body's length from Content-Length (``headers`` by lower-case name; none: 0);
    :class:`Refused` when it is bad or too large, or the body is chunked."""
    if headers.get("transfer-encoding"):
        raise Refused(411, "a write's body is sent whole, with a Content-Length (no Transfer-Encoding)")
    text = headers.get("content-length")
    if text is None:
        return 0
    if not (text.strip().isascii() and text.strip().isdigit()):  # "²" is a digit to isdigit, not to int
        raise Refused(400, f"Content-Length is a whole number of bytes (got {text[:40]!r})")
    length = int(text)
    if length > MAX_BODY_BYTES:
        raise Refused(413, f"a write's body is at most {MAX_BODY_BYTES} bytes (got {length})")
    return length


def rating_request(body: bytes) -> RatingRequest:
    """The rating a POST's body asks for; :class:`Refused` (400) naming what is wrong."""
    try:
        value = json.loads(body.decode("utf-8"), object_pairs_hook=_once_each)
    except _DuplicateKey as error:
        raise Refused(400, f"the key {error.args[0][:40]!r} is given twice; {_BODY_SHAPE}") from None
    except (UnicodeDecodeError, ValueError) as error:
        raise Refused(400, f"the body is not JSON ({error}); {_BODY_SHAPE}") from None
    except RecursionError:  # arrays or objects nested thousands deep
        raise Refused(
            400, f"the body is not JSON this viewer reads (nested too deep); {_BODY_SHAPE}"
        ) from None
    if not isinstance(value, dict):
        raise Refused(400, _BODY_SHAPE)
    unknown = sorted(set(value) - {"pass", "score", "comment"})
    if unknown:
        raise Refused(400, f"unknown key {unknown[0][:40]!r}; {_BODY_SHAPE}")
    passed = value.get("pass")
    if not isinstance(passed, bool):
        raise Refused(400, f'"pass" is true or false (got {json.dumps(passed)[:40]}); {_BODY_SHAPE}')
    score = value.get("score")
    if score is not None and (
        isinstance(score, bool) or not isinstance(score, int | float) or not 0 <= score <= 1
    ):
        raise Refused(400, f'"score" is a number from 0 to 1 (got {json.dumps(score)[:40]})')
    comment = value.get("comment", "")
    if not isinstance(comment, str):
        raise Refused(400, f'"comment" is text (got {json.dumps(comment)[:40]})')
    if not is_text(comment):
        raise Refused(
            400, '"comment" is text: it holds a lone surrogate (\\ud800 to \\udfff) that no text can'
        )
    if len(comment) > MAX_COMMENT_CHARS:
        raise Refused(400, f'"comment" is at most {MAX_COMMENT_CHARS} characters (got {len(comment)})')
    return RatingRequest(passed, None if score is None else float(score), comment)


class _DuplicateKey(Exception):
    """A JSON object names a key twice (``json`` would keep the last silently)."""


def _once_each(pairs: list[tuple[str, object]]) -> dict[str, object]:
    """A JSON object, each key once: ``{"pass": true, "pass": false}`` is not a rating."""
    value: dict[str, object] = {}
    for key, item in pairs:
        if key in value:
            raise _DuplicateKey(key)
        value[key] = item
    return value
