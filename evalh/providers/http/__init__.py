"""The one HTTP layer every HTTP provider uses: httpx.AsyncClient plus tenacity retries.

Retry rules (promptfoo's, with a cap on the total wait):

* 429 (and any 5xx that carries them) honours ``Retry-After`` (seconds or an HTTP date),
  ``retry-after-ms`` and the rate-limit reset headers (``x-ratelimit-reset-requests|tokens`` as ``1s`` /
  ``6m0s`` / ``20ms``, ``X-RateLimit-Reset`` as epoch seconds, ``anthropic-ratelimit-*-reset`` as an
  RFC 3339 time). Without such a header it backs off like a 5xx.
* 5xx, connection errors and timeouts back off exponentially with jitter
  (``base * 2**(n-1) * (0.5 + random/2)``, at most ``max_delay_s``).
* Any other 4xx fails at once with the server's own message.
* At most ``max_retries`` retries (``max_retries + 1`` attempts), and the sleeps of one call never add up
  to more than ``max_total_wait_s``: a retry that would exceed the budget is not attempted.
* Each attempt has ``timeout_s`` (60 s) and the whole call, retries included, has ``total_timeout_s``
  (``evalh/common/deadlines.py``: 120 s, never less than one attempt's timeout): a hanging server costs one
  bounded wait, and the error names the endpoint and the deadline.

Every failure raises :class:`~evalh.errors.ProviderHTTPError` with every secret (API keys, secret header
values, URL passwords and query secrets: :mod:`evalh.secrets`) redacted from the message, and with
``status`` and ``attempts`` set.

Redirects are followed only within the origin (scheme, host, port) of the request: a cross-origin
redirect is refused with a ProviderHTTPError, so no credential header (``Authorization``, ``x-api-key``,
``api-key``, custom auth headers) ever reaches another host.

Modules: :mod:`.client` (:class:`HttpClient`), :mod:`.settings` (:class:`HttpSettings`, from a provider's
config), :mod:`.retries` (when to retry and how long to wait), :mod:`.replies` (:class:`HttpReply`, the
server's message and requested wait), :mod:`.origins` (:func:`public_url`, the redirect policy).
Providers import from here.
"""

from __future__ import annotations

from evalh.providers.http.client import HttpClient
from evalh.providers.http.origins import public_url
from evalh.providers.http.replies import HttpReply
from evalh.providers.http.settings import HttpSettings

__all__ = ["HttpClient", "HttpReply", "HttpSettings", "public_url"]
