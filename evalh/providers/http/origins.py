"""Which server a URL names: its public form for messages, and the same-origin redirect policy.

Redirects are followed only within the origin (scheme, host, port) of the request: a cross-origin
redirect is refused, so no credential header (``Authorization``, ``x-api-key``, ``api-key``, custom auth
headers) ever reaches another host.
"""

from __future__ import annotations

from urllib.parse import urlsplit

import httpx

__all__ = ["REDIRECT_HINT", "RefusedRedirect", "follow_same_origin", "public_url"]

MAX_REDIRECTS = 10

REDIRECT_HINT = (
    "Point the provider at the final URL (the one the server redirects to); evalh follows redirects "
    "only within one scheme, host and port, so credentials never reach another server"
)


def public_url(url: str) -> str:
    """``url`` without credentials or query (for messages, logs and cache identities)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    return f"{parts.scheme}://{host}{parts.path}".rstrip("/")


class RefusedRedirect(Exception):
    """A redirect to another origin (or one too many): not followed."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


def _origin(url: httpx.URL) -> tuple[str, str, int | None]:
    default = {"http": 80, "https": 443}.get(url.scheme)
    return (url.scheme, url.host, url.port or default)


async def follow_same_origin(client: httpx.AsyncClient, response: httpx.Response) -> httpx.Response:
    """Follow ``response``'s redirects while they stay on the request's origin (each one streamed: its
    body is left for the caller to read, bounded). httpx only strips ``Authorization`` on a
    cross-origin hop; ``x-api-key``, ``api-key`` and custom auth headers would go along, so such a hop
    is refused instead."""
    origin = _origin(response.request.url)
    for _ in range(MAX_REDIRECTS):
        following = response.next_request
        if following is None:
            return response
        await response.aclose()
        if _origin(following.url) != origin:
            target = f"{following.url.scheme}://{following.url.host}"
            if following.url.port:
                target += f":{following.url.port}"
            raise RefusedRedirect(
                f"was redirected (HTTP {response.status_code}) to another origin, {target}: not followed",
                response.status_code,
            )
        response = await client.send(following, stream=True)  # its body is read, bounded, by the caller
    await response.aclose()
    raise RefusedRedirect(f"was redirected more than {MAX_REDIRECTS} times", response.status_code)
