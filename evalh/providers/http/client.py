"""The client: one ``httpx`` connection pool set per provider, tenacity retries, redacted failures.

Each attempt has ``timeout_s`` (60 s) and the whole call, retries included, has ``total_timeout_s``
(``evalh/common/deadlines.py``: 120 s, never less than one attempt's timeout): a hanging server costs one
bounded wait, and the error names the endpoint and the deadline. Every failure raises
:class:`~evalh.errors.ProviderHTTPError` with every secret (API keys, secret header values, URL passwords
and query secrets: :mod:`evalh.secrets`) redacted from the message, and with ``status`` and ``attempts``
set. This is where a failed request's secrets are known, so this is where its error is redacted; the
layers above pass the message on as it is, and the output boundaries redact once more.
"""

from __future__ import annotations

import asyncio
import logging
import os
import ssl
import time
from collections.abc import Mapping, Sequence
from typing import Any

import httpx
from tenacity import AsyncRetrying, RetryCallState, retry_if_exception

from evalh.common.activity import note_retry
from evalh.common.deadlines import HTTP_ATTEMPT_TIMEOUT_S, HTTP_TOTAL_TIMEOUT_S
from evalh.common.limits import MAX_REPLY_ENV, max_reply_bytes, reply_size
from evalh.errors import ProviderHTTPError
from evalh.model import ProviderSpec
from evalh.providers.http.origins import REDIRECT_HINT, RefusedRedirect, follow_same_origin, public_url
from evalh.providers.http.replies import (
    HttpReply,
    ReplyTooLarge,
    read_bounded,
    reply_from,
    requested_wait_s,
    server_message,
)
from evalh.providers.http.retries import Deadline, RetryableError, backoff_s, exhausted_message, out_of_budget
from evalh.providers.http.settings import HttpSettings
from evalh.secrets import redact_text, register, register_headers, register_url

__all__ = ["HttpClient"]

log = logging.getLogger("evalh.http")

_SHARD_CONNECTIONS = 8  # connections per httpx pool
_MAX_SHARDS = 16  # at most 128 connections per provider


class HttpClient:
    """An async JSON client with retries and secret redaction, for one provider (its concurrency is gated
    by the runner, once per provider identity)."""

    def __init__(
        self,
        *,
        provider_id: str,
        base_url: str,
        headers: Mapping[str, str] | None = None,
        timeout_s: float = HTTP_ATTEMPT_TIMEOUT_S,
        max_retries: int = 4,
        max_total_wait_s: float = 120.0,
        secrets: Sequence[str] = (),
        retry_base_delay_s: float = 1.0,
        retry_max_delay_s: float = 30.0,
        total_timeout_s: float | None = None,
    ) -> None:
        self.provider_id = provider_id
        self.total_timeout_s = total_timeout_s
        self.base_url = base_url.rstrip("/")
        self.headers = dict(headers or {})
        self.timeout_s = timeout_s
        self.max_retries = max(0, max_retries)
        self.max_total_wait_s = max(0.0, max_total_wait_s)
        # Registered for the whole run: a key must not reach a report, a log or another provider's error.
        register(*secrets)
        register_headers(self.headers)
        register_url(self.base_url)
        self.retry_base_delay_s = retry_base_delay_s
        self.retry_max_delay_s = retry_max_delay_s
        self._shards: list[httpx.AsyncClient] = []
        self._in_flight: list[int] = []
        self._secure: list[bool] = []  # whether each shard may open TLS connections (verified ones)
        self._ssl_context: ssl.SSLContext | None = None
        self.max_reply_bytes = max_reply_bytes()  # read now: a bad EVALH_MAX_REPLY_MB is a config error

    @classmethod
    def for_spec(
        cls,
        spec: ProviderSpec,
        *,
        base_url: str,
        headers: Mapping[str, str] | None = None,
        secrets: Sequence[str] = (),
    ) -> HttpClient:
        """The client of one provider: settings from ``spec.config`` (a bad value is a ConfigError at
        the provider's place); ``headers``, then ``config.headers``. Redacted (:mod:`evalh.secrets`):
        ``secrets`` (the API keys), every secret-looking header value, and the password and
        secret-looking query values of ``base_url`` and of the id (a URL id holds them)."""
        settings = HttpSettings.from_config(spec.config, where=spec.path or spec.id)
        configured = dict(spec.config.get("headers") or {})
        merged = {**(headers or {}), **{str(k): str(v) for k, v in configured.items()}}
        register_url(spec.id)
        return cls(
            provider_id=spec.id,
            base_url=base_url,
            headers=merged,
            timeout_s=settings.timeout_s,
            max_retries=settings.max_retries,
            max_total_wait_s=settings.max_total_wait_s,
            secrets=secrets,
            retry_base_delay_s=settings.retry_base_delay_s,
            retry_max_delay_s=settings.retry_max_delay_s,
            total_timeout_s=settings.total_timeout_s,
        )

    async def post_json(
        self,
        path: str,
        body: Any,
        *,
        headers: Mapping[str, str] | None = None,
        timeout_s: float | None = None,
    ) -> HttpReply:
        """POST ``body`` as JSON to ``path`` (absolute, or relative to ``base_url``), with retries."""
        return await self.request("POST", path, body=body, headers=headers, timeout_s=timeout_s)

    async def get_json(
        self, path: str, *, headers: Mapping[str, str] | None = None, timeout_s: float | None = None
    ) -> HttpReply:
        return await self.request("GET", path, headers=headers, timeout_s=timeout_s)

    async def request(
        self,
        method: str,
        path: str,
        *,
        body: Any = None,
        content: str | bytes | None = None,
        headers: Mapping[str, str] | None = None,
        timeout_s: float | None = None,
    ) -> HttpReply:
        """Send one request with retries. ``body`` is sent as JSON, ``content`` as is."""
        url = self.url_for(path)
        merged = {**self.headers, **(headers or {})}
        timeout = timeout_s if timeout_s is not None and timeout_s > 0 else self.timeout_s
        total = self.total_timeout_s or max(HTTP_TOTAL_TIMEOUT_S, timeout)
        started = time.perf_counter()
        deadline = Deadline(started + total)
        retrying = AsyncRetrying(
            retry=retry_if_exception(lambda error: isinstance(error, RetryableError)),
            wait=self._wait,
            stop=lambda state: self._stop(state, deadline),
            sleep=asyncio.sleep,
            reraise=True,
            before_sleep=self._log_retry,
        )
        attempt_number = 0
        try:
            async for attempt in retrying:
                with attempt:
                    attempt_number = attempt.retry_state.attempt_number
                    remaining = max(deadline.at - time.perf_counter(), 0.001)
                    try:
                        response = await self._send_once(
                            method, url, body, content, merged, min(timeout, remaining)
                        )
                    except RetryableError as error:
                        deadline.passed |= error.timed_out and remaining < timeout  # cut short by it
                        raise
                    return reply_from(response, attempt_number, started)
        except ProviderHTTPError as error:
            error.attempts = attempt_number  # a 4xx after earlier retried failures
            raise
        except RetryableError as error:
            request = f"{method} {public_url(url)}"
            message = exhausted_message(
                error, attempt_number, deadline, request=request, total_s=total, timeout_s=timeout
            )
            raise self._error(message, error.status, attempt_number) from None
        raise AssertionError("unreachable: tenacity either returns or raises")  # pragma: no cover

    def url_for(self, path: str) -> str:
        if path.startswith(("http://", "https://")):
            return path
        if not path:
            return self.base_url
        return f"{self.base_url}/{path.lstrip('/')}"

    def excerpt(self, text: str, limit: int = 300) -> str:
        """The start of ``text`` for a message: redacted first, so a cut never leaves half a key."""
        return redact_text(text)[:limit]

    async def aclose(self) -> None:
        shards, self._shards, self._in_flight, self._secure = self._shards, [], [], []
        for shard in shards:
            await shard.aclose()

    # -- one attempt -------------------------------------------------------------------------

    async def _send_once(
        self,
        method: str,
        url: str,
        body: Any,
        content: str | bytes | None,
        headers: Mapping[str, str],
        timeout_s: float,
    ) -> httpx.Response:
        try:
            response = await self._send_on_shard(method, url, body, content, headers, timeout_s)
        except (TimeoutError, httpx.TimeoutException):
            raise RetryableError(
                f"{method} {public_url(url)} timed out after {timeout_s:.3g} s", timed_out=True
            ) from None
        except httpx.TransportError as error:
            detail = str(error) or type(error).__name__
            raise RetryableError(f"{method} {public_url(url)} failed: {detail}") from None
        except ReplyTooLarge:
            raise self._error(
                f"the reply to {method} {public_url(url)} is larger than {reply_size(self.max_reply_bytes)}, "
                "the cap on one provider reply: not read further",
                None,
                1,
                hint=f"Ask for a shorter reply (a max_tokens setting, a smaller batchSize), or raise the cap "
                f"with the environment variable {MAX_REPLY_ENV} (in MiB)",
            ) from None
        except RefusedRedirect as refused:
            raise self._error(
                f"{method} {public_url(url)} {refused}", refused.status, 1, hint=REDIRECT_HINT
            ) from None
        self._raise_for_status(method, url, response)
        return response

    async def _send_on_shard(
        self,
        method: str,
        url: str,
        body: Any,
        content: str | bytes | None,
        headers: Mapping[str, str],
        timeout_s: float,
    ) -> httpx.Response:
        index = self._pick_shard(secure=not url.startswith("http://") or _proxied())
        self._in_flight[index] += 1
        try:
            return await self._send_timed(
                self._shards[index], method, url, body, content, headers, timeout_s, self.max_reply_bytes
            )
        finally:
            if index < len(self._in_flight):  # aclose() may have run meanwhile
                self._in_flight[index] -= 1

    @staticmethod
    async def _send_timed(
        client: httpx.AsyncClient,
        method: str,
        url: str,
        body: Any,
        content: str | bytes | None,
        headers: Mapping[str, str],
        timeout_s: float,
        limit: int,
    ) -> httpx.Response:
        # httpx's timeout bounds each phase; asyncio.timeout bounds the whole call (a trickling server).
        async with asyncio.timeout(timeout_s):
            if body is not None:
                request = client.build_request(method, url, json=body, headers=headers, timeout=timeout_s)
            else:
                request = client.build_request(
                    method, url, content=content, headers=headers, timeout=timeout_s
                )
            response = await follow_same_origin(client, await client.send(request, stream=True))
            return await read_bounded(response, limit)

    def _raise_for_status(self, method: str, url: str, response: httpx.Response) -> None:
        status = response.status_code
        if status < 400:
            return
        explanation = self.excerpt(server_message(response), 500)
        message = f"HTTP {status} from {method} {public_url(url)}: {explanation}"
        if status == 429 or status >= 500:
            raise RetryableError(message, status=status, wait_s=requested_wait_s(response.headers))
        raise self._error(message, status, 1)

    def _error(
        self, message: str, status: int | None, attempts: int, hint: str | None = None
    ) -> ProviderHTTPError:
        return ProviderHTTPError(
            redact_text(message),
            status=status,
            attempts=attempts,
            where=redact_text(self.provider_id),
            hint=hint,
        )

    # -- tenacity hooks ----------------------------------------------------------------------

    def _wait(self, state: RetryCallState) -> float:
        return backoff_s(state, self.retry_base_delay_s, self.retry_max_delay_s)

    def _stop(self, state: RetryCallState, deadline: Deadline) -> bool:
        return out_of_budget(state, deadline, self.max_retries, self.max_total_wait_s)

    def _log_retry(self, state: RetryCallState) -> None:
        error = state.outcome.exception() if state.outcome else None
        note_retry(_retry_reason(error))  # the progress display shows it under the provider
        log.info(
            "%s: attempt %d failed (%s); retrying in %.2f s",
            redact_text(self.provider_id),
            state.attempt_number,
            redact_text(str(error)),
            state.upcoming_sleep,
        )

    def _pick_shard(self, *, secure: bool) -> int:
        """The least busy connection pool of the kind the request needs; a new one (inside the running
        loop) when all are full.

        httpcore's pool scans every connection on each request event, so one pool of 32 connections
        costs milliseconds of CPU per request; pools of at most 8 keep that overhead small. A plain
        ``http://`` request without a proxy needs no TLS, so its pools skip loading the CA bundle (50-70
        ms of CPU per provider); their TLS context trusts no certificate, so a TLS connection could
        never be made through one unverified.
        """
        mine = [index for index, kind in enumerate(self._secure) if kind is secure]
        if mine:
            index = min(mine, key=self._in_flight.__getitem__)
            if self._in_flight[index] < _SHARD_CONNECTIONS or len(mine) >= _MAX_SHARDS:
                return index
        limits = httpx.Limits(
            max_connections=_SHARD_CONNECTIONS, max_keepalive_connections=_SHARD_CONNECTIONS
        )
        if not secure:
            verify = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)  # verifies, and trusts nothing
        else:
            if self._ssl_context is None:  # loading the CA bundle: once per provider
                self._ssl_context = httpx.create_ssl_context()
            verify = self._ssl_context
        self._shards.append(httpx.AsyncClient(limits=limits, follow_redirects=False, verify=verify))
        self._in_flight.append(0)
        self._secure.append(secure)
        return len(self._shards) - 1


_PROXY_VARIABLES = frozenset({"http_proxy", "https_proxy", "all_proxy"})


def _proxied() -> bool:
    """Whether httpx would send requests through a proxy from the environment (which may be https)."""
    return any(name.lower() in _PROXY_VARIABLES and value for name, value in os.environ.items())


def _retry_reason(error: BaseException | None) -> str:
    """A short reason for the progress display: ``HTTP 429``, ``timeout`` or ``connection failed``."""
    if isinstance(error, RetryableError) and error.status is not None:
        return f"HTTP {error.status}"
    if isinstance(error, RetryableError) and error.timed_out:
        return "timeout"
    return "connection failed"
