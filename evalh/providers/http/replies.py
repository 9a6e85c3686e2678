"""What a reply says: a successful one as providers read it (:class:`HttpReply`), and for an error reply
the server's own message and how long it asks us to wait.

Used by the client's retry loop (``client.py``). Waits come from ``retry-after-ms``, ``Retry-After``
(seconds or an HTTP date) and the rate-limit reset headers: ``x-ratelimit-reset-requests|tokens``
(``1s``, ``6m0s``, ``20ms``), ``X-RateLimit-Reset`` (epoch seconds, plus one second of slack, as
promptfoo) and ``anthropic-ratelimit-*-reset`` (an RFC 3339 time). With several reset headers the
longest wait wins.
"""

from __future__ import annotations

import email.utils
import json
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import httpx

__all__ = ["HttpReply", "ReplyTooLarge", "read_bounded", "reply_from", "requested_wait_s", "server_message"]

_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|h|m|s)")


@dataclass(frozen=True)
class HttpReply:
    """A successful (2xx) reply. ``json`` is None when the body is not JSON; ``text`` is the raw body."""

    status: int
    json: Any
    headers: Mapping[str, str]
    attempts: int
    latency_ms: float
    text: str = ""


class ReplyTooLarge(Exception):
    """A reply's body (decoded) is larger than the cap on one provider reply; it was not read further."""


_BODY_HEADERS = frozenset({"content-encoding", "content-length", "transfer-encoding"})


async def read_bounded(response: httpx.Response, limit: int) -> httpx.Response:
    """``response`` (streamed) with its body read and decoded, at most ``limit`` bytes of it: past that
    (a declared Content-Length, or the decoded bytes as they arrive: a gzip bomb too) ReplyTooLarge,
    without buffering the rest. The stream is closed either way."""
    try:
        declared = response.headers.get("content-length", "")
        if declared.isdigit() and "content-encoding" not in response.headers and int(declared) > limit:
            raise ReplyTooLarge
        chunks: list[bytes] = []
        size = 0
        async for chunk in response.aiter_bytes():
            size += len(chunk)
            if size > limit:
                raise ReplyTooLarge
            chunks.append(chunk)
    finally:
        await response.aclose()
    # the body is decoded already: the new response must not decode it again
    headers = [
        (key, value) for key, value in response.headers.multi_items() if key.lower() not in _BODY_HEADERS
    ]
    return httpx.Response(
        response.status_code, headers=headers, content=b"".join(chunks), request=response.request
    )


def reply_from(response: httpx.Response, attempts: int, started: float) -> HttpReply:
    """``response`` as providers read it; ``started`` is the call's ``time.perf_counter()``."""
    text = response.text
    try:
        payload: Any = json.loads(text) if text.strip() else None
    except ValueError:
        payload = None
    return HttpReply(
        status=response.status_code,
        json=payload,
        headers=dict(response.headers.items()),
        attempts=attempts,
        latency_ms=(time.perf_counter() - started) * 1000.0,
        text=text,
    )


def server_message(response: httpx.Response) -> str:
    """The server's own explanation: ``error.message``, ``error``, ``message``, ``detail``, or the text.

    Not shortened here: the caller redacts API keys first, then cuts (a cut could split a key)."""
    text = response.text.strip()
    try:
        payload = json.loads(text) if text else None
    except ValueError:
        payload = None
    if isinstance(payload, Mapping):
        error = payload.get("error")
        if isinstance(error, Mapping) and isinstance(error.get("message"), str):
            return str(error["message"])
        for candidate in (error, payload.get("message"), payload.get("detail")):
            if isinstance(candidate, str) and candidate:
                return candidate
    if not text:
        return response.reason_phrase or "(empty body)"
    return text


def requested_wait_s(headers: httpx.Headers) -> float | None:
    """How long the server asks us to wait before retrying, from the headers, or None."""
    if (value := headers.get("retry-after-ms")) is not None:
        try:
            return float(value) / 1000.0
        except ValueError:
            pass
    if (value := headers.get("retry-after")) is not None:
        parsed = _seconds_or_http_date(value)
        if parsed is not None:
            return parsed
    resets = [
        parsed
        for name, value in headers.items()
        if _is_reset_header(name) and (parsed := _reset_wait_s(name, value)) is not None
    ]
    return max(resets) if resets else None


def _is_reset_header(name: str) -> bool:
    lowered = name.lower()
    return "ratelimit" in lowered and lowered.endswith(("-reset", "-reset-requests", "-reset-tokens"))


def _seconds_or_http_date(value: str) -> float | None:
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        moment = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, moment.timestamp() - time.time())


def _reset_wait_s(name: str, value: str) -> float | None:
    value = value.strip()
    if name.lower() == "x-ratelimit-reset":
        # promptfoo: epoch seconds, plus one second of slack.
        try:
            return max(0.0, float(value) - time.time() + 1.0)
        except ValueError:
            return None
    if value and (parts := _DURATION_PART.findall(value)) and "".join(a + u for a, u in parts) == value:
        scale = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
        return sum(float(amount) * scale[unit] for amount, unit in parts)
    try:
        return max(0.0, datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp() - time.time())
    except ValueError:
        pass
    try:
        return max(0.0, float(value))
    except ValueError:
        return None
