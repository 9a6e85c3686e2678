"""What every HTTP embedding provider shares: batching settings, the call, vector checks, usage and cost.

A protocol subclass says where to POST (:attr:`HttpEmbedder.path`), how to build the body
(:meth:`HttpEmbedder.build_body`) and how to read the vectors and token count from the reply
(:meth:`HttpEmbedder.parse_reply`). :meth:`HttpEmbedder.embed` sends one batch (the store splits texts
into ``batch_size`` batches) and raises :class:`~evalh.errors.ProviderError` on any failure, API keys
redacted by the HTTP layer. The cache identity holds the endpoint, the headers, the model, the dimensions
and the passthrough fields; keys enter it only as a keyed hash (:mod:`evalh.providers.identity`).

Config keys common to all: ``batchSize`` (texts per request, default 64), ``dimensions``,
``costPer1kTokens`` (dollars), ``headers``, ``passthrough`` (extra body fields), ``maxConcurrency``
(requests in flight, shared with any other call to this provider; default ``-j``) and the HTTP
layer's ``timeout`` / ``timeoutMs`` / ``maxRetries`` / ``retryBaseDelayS``.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping, Sequence, Sized
from typing import Any

import numpy as np

from evalh.errors import ConfigError, ProviderError
from evalh.model import ProviderSpec, Usage
from evalh.providers.base import Embeddings
from evalh.providers.chat import REPLY_SHAPE_ERRORS, HttpModelProvider, price_by_prefix
from evalh.providers.http import HttpClient, HttpReply
from evalh.providers.identity import hide_secrets, request_identity
from evalh.providers.keys import MissingKey

__all__ = [
    "DEFAULT_EMBEDDING_BATCH",
    "HttpEmbedder",
    "cost_per_1k",
    "optional_positive_int",
    "row_of",
    "vectors_from_rows",
]

DEFAULT_EMBEDDING_BATCH = 64


def optional_positive_int(spec: ProviderSpec, key: str) -> int | None:
    """``spec.config[key]`` as a positive int, None when absent; a ConfigError otherwise."""
    value = spec.config.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        where = f"{spec.path}.config.{key}" if spec.path else spec.id
        raise ConfigError(f"{key} must be a positive integer (got {value!r})", where=where)
    return value


def cost_per_1k(config: Mapping[str, Any], table: Mapping[str, float], model: str) -> float | None:
    """Dollars per 1,000 tokens: ``config.costPer1kTokens`` > the table (longest model prefix) > None."""
    if config.get("costPer1kTokens") is not None:
        return float(config["costPer1kTokens"])
    return price_by_prefix(table, model)


def row_of(embedding: Any, where: str) -> Any:
    """One reply row as :func:`vectors_from_rows` takes it: a list of numbers stays as it is, and a
    string is read as OpenAI's ``encoding_format: "base64"`` (little-endian float32, base64) into a
    float32 array; a ProviderError at ``where`` when the string is not that."""
    if not isinstance(embedding, str):
        return embedding
    try:
        raw = base64.b64decode(embedding, validate=True)
    except (binascii.Error, ValueError):
        raise ProviderError("returned an embedding that is neither numbers nor base64", where=where) from None
    if len(raw) % 4:
        raise ProviderError(
            f"returned a base64 embedding of {len(raw)} bytes, not whole float32 values", where=where
        )
    return np.frombuffer(raw, dtype="<f4")


def vectors_from_rows(
    rows: Sequence[Any], expected: int, where: str
) -> np.ndarray[Any, np.dtype[np.float32]]:
    """A 2-D float32 array from ``expected`` rows of equal length of finite numbers; a ProviderError at
    ``where`` (the provider) otherwise."""
    if len(rows) != expected:
        raise ProviderError(f"returned {len(rows)} vectors for {expected} texts", where=where)
    try:
        vectors = np.asarray(rows, dtype=np.float32)
    except (TypeError, ValueError):
        lengths = sorted({len(row) for row in rows if isinstance(row, Sized) and not isinstance(row, str)})
        if len(lengths) > 1:
            raise ProviderError(
                f"dimension mismatch: returned vectors of {lengths} dimensions", where=where
            ) from None
        raise ProviderError("returned vectors that are not rows of numbers", where=where) from None
    if vectors.ndim != 2:
        raise ProviderError(
            f"returned an array of shape {vectors.shape}, expected one vector per text", where=where
        )
    if expected and vectors.shape[1] == 0:
        raise ProviderError("returned empty vectors", where=where)
    if not np.isfinite(vectors).all():  # null becomes NaN here
        raise ProviderError("returned vectors with missing, NaN or infinite values", where=where)
    return vectors


class HttpEmbedder(HttpModelProvider):
    """Base of the HTTP embedding providers: one POST per batch of texts."""

    family: str = ""  # the cache identity's provider name, e.g. "openai"

    def __init__(
        self,
        spec: ProviderSpec,
        *,
        model: str,
        http: HttpClient,
        price_per_1k: float | None = None,
        missing_key: MissingKey | None = None,
    ) -> None:
        super().__init__(spec, model=model, http=http, missing_key=missing_key)
        self.price_per_1k = price_per_1k
        self.dimensions = optional_positive_int(spec, "dimensions")
        self.batch_size = optional_positive_int(spec, "batchSize") or DEFAULT_EMBEDDING_BATCH

    def cache_identity(self) -> Mapping[str, Any]:
        passthrough = self.config.get("passthrough")
        return {
            "provider": self.family,
            **request_identity(self.http.url_for(self.path), self.http.headers),
            "model": self.model,
            "dimensions": self.dimensions,
            **({"passthrough": hide_secrets(passthrough)} if passthrough else {}),
            **self.extra_identity(),
        }

    def extra_identity(self) -> Mapping[str, Any]:
        return {}

    def build_body(self, texts: list[str]) -> dict[str, Any]:
        raise NotImplementedError

    def parse_reply(self, payload: Any, count: int) -> tuple[np.ndarray[Any, np.dtype[np.float32]], int]:
        """(vectors in input order, prompt tokens or 0)."""
        raise NotImplementedError

    async def send(self, body: dict[str, Any]) -> HttpReply:
        """POST the body; a protocol that signs its requests (AWS SigV4) sends the bytes it signed."""
        return await self.http.post_json(self.path, body)

    async def embed(self, texts: Sequence[str]) -> Embeddings:
        if self.missing_key:
            raise ProviderError(self.missing_key, where=self.id)
        body = self.build_body(list(texts))
        body.update(dict(self.config.get("passthrough") or {}))
        reply = await self.send(body)
        try:
            vectors, tokens = self.parse_reply(reply.json, len(texts))
        except REPLY_SHAPE_ERRORS as error:
            raise ProviderError(self.malformed(reply, error), where=self.id) from None
        if self.dimensions and vectors.shape[1] != self.dimensions:
            raise ProviderError(
                f"dimension mismatch: asked for {self.dimensions} dimensions, got {vectors.shape[1]}",
                where=self.id,
            )
        cost = tokens * self.price_per_1k / 1000.0 if self.price_per_1k is not None else 0.0
        usage = Usage(
            prompt_tokens=tokens,
            total_tokens=tokens,
            requests=1,
            texts=len(texts),
            cost=cost,
            latency_ms=reply.latency_ms,
        )
        return Embeddings(vectors=vectors, usage=usage)
