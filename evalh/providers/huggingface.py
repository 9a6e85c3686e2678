"""Hugging Face Inference API: feature extraction (embeddings) and sentence similarity (cosine only).

``huggingface:feature-extraction:<model>`` POSTs ``{"inputs": [texts]}`` to
``{base}/models/<model>/pipeline/feature-extraction``; a model that returns token vectors
(``[text][token][dim]``) is mean-pooled. ``huggingface:sentence-similarity:<model>`` POSTs
``{"inputs": {"source_sentence": s, "sentences": [...]}}`` to ``.../pipeline/sentence-similarity`` and
gets one cosine per sentence: pairs sharing a source go in one request. It has no vectors, so only
``similar`` / ``similar:cosine`` can use it.

``base`` is ``config.apiBaseUrl`` or ``HF_API_BASE_URL`` (default
``https://router.huggingface.co/hf-inference``); ``config.apiEndpoint`` replaces the whole URL (a
dedicated Inference Endpoint or a local TEI server). The token is ``config.apiKey``, ``HF_TOKEN`` or
``HF_API_TOKEN``, sent only as ``Authorization: Bearer``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from evalh.errors import ProviderError
from evalh.model import ProviderSpec, Usage
from evalh.providers.base import Similarities
from evalh.providers.embedhttp import (
    HttpEmbedder,
    cost_per_1k,
    optional_positive_int,
    vectors_from_rows,
)
from evalh.providers.http import HttpClient
from evalh.providers.identity import request_identity
from evalh.providers.keys import hf_base_url, hf_token, missing_hf_token

__all__ = [
    "HuggingFaceFeatureExtraction",
    "HuggingFaceSentenceSimilarity",
    "make_feature_extraction",
    "make_sentence_similarity",
]


def _model_of(spec: ProviderSpec) -> str:
    return str(spec.config.get("model") or spec.id.split(":", 2)[2])


def _client(spec: ProviderSpec) -> HttpClient:
    config = spec.config
    token = hf_token(config)
    base = hf_base_url(config)
    return HttpClient.for_spec(
        spec,
        base_url=base.rstrip("/"),
        headers={"Authorization": f"Bearer {token}"} if token else {},
        secrets=(token,) if token else (),
    )


def _path(spec: ProviderSpec, pipeline: str) -> str:
    endpoint = spec.config.get("apiEndpoint")
    return str(endpoint) if endpoint else f"models/{_model_of(spec)}/pipeline/{pipeline}"


def _pool_rows(rows: Sequence[Any]) -> list[Any]:
    """Sentence vectors; token-level rows (``[token][dim]``) are mean-pooled."""
    pooled: list[Any] = []
    for row in rows:
        array = np.asarray(row, dtype=np.float32)
        pooled.append(array.mean(axis=0) if array.ndim == 2 else array)
    return pooled


class HuggingFaceFeatureExtraction(HttpEmbedder):
    """Sentence vectors from the feature-extraction pipeline."""

    family = "huggingface:feature-extraction"

    def build_body(self, texts: list[str]) -> dict[str, Any]:
        body: dict[str, Any] = {"inputs": texts}
        parameters = {key: self.config[key] for key in ("normalize", "truncate") if key in self.config}
        if parameters:
            body["parameters"] = parameters
        return body

    def parse_reply(self, payload: Any, count: int) -> tuple[Any, int]:
        if isinstance(payload, Mapping):
            raise ValueError(str(payload.get("error") or payload))
        return vectors_from_rows(_pool_rows(payload), count, self.id), 0


class HuggingFaceSentenceSimilarity:
    """Cosine similarity of (source, sentence) pairs, computed by the sentence-similarity pipeline."""

    def __init__(self, spec: ProviderSpec, *, http: HttpClient) -> None:
        self.id = spec.id
        self.spec = spec
        self.model = _model_of(spec)
        self.http = http
        self.path = _path(spec, "sentence-similarity")
        self.batch_size = optional_positive_int(spec, "batchSize") or 64

    def cache_identity(self) -> Mapping[str, Any]:
        request = request_identity(self.http.url_for(self.path), self.http.headers)
        return {"provider": "huggingface:sentence-similarity", **request, "model": self.model}

    async def similarity(self, pairs: Sequence[tuple[str, str]]) -> Similarities:
        by_source: dict[str, list[int]] = {}
        for index, (source, _sentence) in enumerate(pairs):
            by_source.setdefault(source, []).append(index)
        scores: list[float] = [0.0] * len(pairs)
        replies = await asyncio.gather(
            *(self._score(source, [pairs[i][1] for i in indices]) for source, indices in by_source.items())
        )
        latency = 0.0
        for (_source, indices), (values, latency_ms) in zip(by_source.items(), replies, strict=True):
            latency = max(latency, latency_ms)
            for index, value in zip(indices, values, strict=True):
                scores[index] = value
        usage = Usage(requests=len(by_source), texts=len(pairs), latency_ms=latency)
        return Similarities(scores=tuple(scores), usage=usage)

    async def _score(self, source: str, sentences: list[str]) -> tuple[list[float], float]:
        body = {"inputs": {"source_sentence": source, "sentences": sentences}}
        reply = await self.http.post_json(self.path, body)
        payload = reply.json
        if not isinstance(payload, list) or len(payload) != len(sentences):
            snippet = self.http.excerpt(reply.text)
            raise ProviderError(f"expected {len(sentences)} scores, got: {snippet}", where=self.id)
        try:
            scores = np.asarray(payload, dtype=np.float64)
        except (TypeError, ValueError):
            scores = np.full(1, np.nan)
        if scores.ndim != 1 or not np.isfinite(scores).all():
            snippet = self.http.excerpt(reply.text)
            raise ProviderError(f"scores are not finite numbers: {snippet}", where=self.id)
        return scores.tolist(), reply.latency_ms

    async def aclose(self) -> None:
        await self.http.aclose()


def make_feature_extraction(spec: ProviderSpec) -> HuggingFaceFeatureExtraction:
    http = _client(spec)
    model = _model_of(spec)
    provider = HuggingFaceFeatureExtraction(
        spec,
        model=model,
        http=http,
        price_per_1k=cost_per_1k(spec.config, {}, model),
        missing_key=missing_hf_token(spec),
    )
    provider.path = _path(spec, "feature-extraction")
    return provider


def make_sentence_similarity(spec: ProviderSpec) -> HuggingFaceSentenceSimilarity:
    return HuggingFaceSentenceSimilarity(spec, http=_client(spec))
