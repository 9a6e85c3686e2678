"""Loopback handlers speaking the embedding protocols, with vectors from the fake embedder.

Each reply's vectors are ``fake_vector(text, DIM)``, so a test can compute the expected scores itself.
"""

from __future__ import annotations

import base64
from typing import Any

import numpy as np

from evalh.providers.fake import fake_vector, words
from tests.loopback import Reply, Request

__all__ = [
    "DIM",
    "expected",
    "hf_feature_extraction",
    "hf_sentence_similarity",
    "ollama_embed",
    "openai_embeddings",
]

DIM = 16


def expected(texts: list[str]) -> np.ndarray:
    return np.stack([fake_vector(text, DIM) for text in texts])


def _tokens(texts: list[str]) -> int:
    return sum(len(words(text)) + 1 for text in texts)


def openai_embeddings(request: Request, *, reverse: bool = False, honour_base64: bool = True) -> Reply:
    """OpenAI's /v1/embeddings: ``data`` items with ``index`` (optionally out of order) and ``usage``;
    each embedding a list of floats, or little-endian float32 in base64 when the request asks for
    ``encoding_format: "base64"`` and ``honour_base64`` (False: a server that ignores the field)."""
    texts = request.json["input"]
    as_base64 = honour_base64 and request.json.get("encoding_format") == "base64"

    def encoded(text: str) -> Any:
        vector = fake_vector(text, DIM)
        if as_base64:
            return base64.b64encode(vector.astype("<f4").tobytes()).decode("ascii")
        return vector.tolist()

    data: list[dict[str, Any]] = [
        {"object": "embedding", "index": i, "embedding": encoded(t)} for i, t in enumerate(texts)
    ]
    if reverse:
        data.reverse()
    usage = {"prompt_tokens": _tokens(texts), "total_tokens": _tokens(texts)}
    return Reply.json({"object": "list", "data": data, "model": request.json.get("model"), "usage": usage})


def ollama_embed(request: Request) -> Reply:
    texts = request.json["input"]
    return Reply.json(
        {
            "model": request.json["model"],
            "embeddings": [fake_vector(t, DIM).tolist() for t in texts],
            "prompt_eval_count": _tokens(texts),
        }
    )


def hf_feature_extraction(request: Request) -> Reply:
    """Token-level output ([text][token][dim]) so the client has to mean-pool."""
    texts = request.json["inputs"]
    rows = [[fake_vector(t, DIM).tolist(), fake_vector(t, DIM).tolist()] for t in texts]
    return Reply.json(rows)


def hf_sentence_similarity(request: Request) -> Reply:
    inputs = request.json["inputs"]
    source = fake_vector(inputs["source_sentence"], DIM)
    return Reply.json([float(source @ fake_vector(s, DIM)) for s in inputs["sentences"]])
