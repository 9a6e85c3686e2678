"""BERTScore (Zhang et al., 2020) and a provider-agnostic variant, ``bertscore-like``.

``bertscore`` matches the output's contextual token vectors (the local model's ``last_hidden_state``,
special tokens removed) greedily to each reference's by cosine: precision averages the output tokens'
best matches, recall the reference tokens', F1 is their harmonic mean (``config.score: f1 | precision |
recall``). ``config.idf: true`` weights tokens by their inverse document frequency over every
``bertscore`` reference of the suite, as the paper's idf option; ``config.baseline: b`` rescales a score
s to (s - b) / (1 - b). Several references: the best one (``config.aggregation: mean`` averages).

``bertscore-like`` works with any embedding provider: the unique lower-cased words of each side are
embedded once per suite (each word alone, so out of context) and matched the same way. It measures word
overlap softened by word meaning; ``bertscore`` also sees each word's context. A score greater than or
equal to the threshold passes (default 0.5 for ``bertscore``, 0.6 for ``bertscore-like``). An empty or
blank output is not applicable (both the type and its ``not-`` form fail); other output without tokens
scores 0.
"""

from __future__ import annotations

import math
import re
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from evalh.assertions.base import AssertionContext, EmbedRequest
from evalh.assertions.registry import NONBLANK_TEXT, assertion
from evalh.assertions.similarity import (
    EMBEDDING_CONFIG,
    embedding_providers,
    empty_output,
    references,
    short,
)
from evalh.common.vectors import Deferred, GreedyMatch, greedy_match, matrix_problem
from evalh.model import AssertionResult, AssertionSpec, Measurement, ProviderSpec, TestCase

if TYPE_CHECKING:
    import numpy as np
else:
    np = Deferred("numpy")  # loaded when a score is computed, not when the type is registered

__all__ = [
    "DEFAULT_BERTSCORE_LIKE_THRESHOLD",
    "DEFAULT_BERTSCORE_THRESHOLD",
    "bertscore",
    "bertscore_like",
    "idf_weights",
    "suite_references",
    "word_tokens",
]

DEFAULT_BERTSCORE_THRESHOLD = 0.5
# Words embedded alone share more (stop words, topic-free meaning): unrelated pairs score about 0.35-0.47
# with the bundled model, paraphrases 0.7-0.97, so the bar is higher than bertscore's.
DEFAULT_BERTSCORE_LIKE_THRESHOLD = 0.6
SCORES = ("f1", "precision", "recall")
_ALIGNMENT_LIMIT = 200
_WORD = re.compile(r"\w+(?:['’]\w+)*", re.UNICODE)
_IDF_MEMO: OrderedDict[tuple[str, tuple[str, ...]], dict[str, float]] = OrderedDict()
_IDF_MEMO_SIZE = 8


def word_tokens(text: str) -> list[str]:
    """The unique lower-cased words of ``text``, in first-seen order."""
    return list(dict.fromkeys(_WORD.findall(text.lower())))


# The value: one reference text or a list of them, none blank; the config: which score, an optional
# baseline rescaling, and the keys every embedding assertion reads.
_REFERENCES_VALUE: dict[str, Any] = {
    "anyOf": [NONBLANK_TEXT, {"type": "array", "minItems": 1, "items": NONBLANK_TEXT}],
    "description": "The reference text, or a list of references (the best counts).",
}
_LIKE_CONFIG: dict[str, Any] = {
    **EMBEDDING_CONFIG,
    "score": {
        "enum": list(SCORES),
        "description": "Which score to compare: f1 (default), precision or recall.",
    },
    "baseline": {
        "type": "number",
        "exclusiveMaximum": 1,
        "description": "Rescale scores as (score - baseline) / (1 - baseline).",
    },
}
_BERTSCORE_CONFIG: dict[str, Any] = {
    **_LIKE_CONFIG,
    "idf": {"type": "boolean", "description": "Weight words by their idf over the suite's references."},
}


# -- idf over the suite's references ---------------------------------------------------------------


def _specs_of(spec: AssertionSpec) -> list[AssertionSpec]:
    return [spec, *(child for nested in spec.children for child in _specs_of(nested))]


def suite_references(tests: Sequence[TestCase], assertion_type: str = "bertscore") -> tuple[str, ...]:
    """Every reference text of ``assertion_type`` assertions in the suite (each test counted once)."""
    found: dict[str, None] = {}
    for test in tests:
        for top in test.asserts:
            for spec in _specs_of(top):
                refs = references(spec.value) if spec.base_type == assertion_type else []
                if isinstance(refs, list):
                    found.update(dict.fromkeys(refs))
    return tuple(found)


def idf_weights(documents: Sequence[Sequence[str]]) -> tuple[dict[str, float], float]:
    """BERTScore's idf: log((M + 1) / (df + 1)) per token over M documents, and the unseen-token value."""
    frequency: dict[str, int] = {}
    for tokens in documents:
        for token in set(tokens):
            frequency[token] = frequency.get(token, 0) + 1
    total = len(documents)
    weights = {token: math.log((total + 1) / (count + 1)) for token, count in frequency.items()}
    return weights, math.log(total + 1)


async def _idf_for(ctx: AssertionContext, provider: ProviderSpec, refs: Sequence[str]) -> dict[str, float]:
    documents = suite_references(ctx.suite_tests) or tuple(refs)
    key = (f"{provider.id}|{sorted(provider.config.items())!r}", documents)
    if key in _IDF_MEMO:
        _IDF_MEMO.move_to_end(key)
        return _IDF_MEMO[key]
    tokenized = await ctx.services.embed_tokens(provider, list(documents))
    weights, unseen = idf_weights([item.tokens for item in tokenized])
    weights["\0unseen"] = unseen
    _IDF_MEMO[key] = weights
    while len(_IDF_MEMO) > _IDF_MEMO_SIZE:
        _IDF_MEMO.popitem(last=False)
    return weights


def _weights(tokens: Sequence[str], idf: Mapping[str, float] | None) -> np.ndarray[Any, Any] | None:
    if idf is None:
        return None
    unseen = idf["\0unseen"]
    return np.array([idf.get(token, unseen) for token in tokens], dtype=np.float64)


# -- scoring -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Side:
    tokens: tuple[str, ...]
    vectors: np.ndarray[Any, Any]


def _rescale(value: float, baseline: float | None) -> float:
    return value if baseline is None else (value - baseline) / (1.0 - baseline)


def _alignment(candidate: _Side, reference: _Side, match: GreedyMatch) -> dict[str, Any]:
    return {
        "output": [
            {"token": token, "match": reference.tokens[best], "similarity": round(sim, 4)}
            for token, best, sim in zip(
                candidate.tokens, match.candidate_best, match.candidate_sim, strict=True
            )
        ][:_ALIGNMENT_LIMIT],
        "reference": [
            {"token": token, "match": candidate.tokens[best], "similarity": round(sim, 4)}
            for token, best, sim in zip(
                reference.tokens, match.reference_best, match.reference_sim, strict=True
            )
        ][:_ALIGNMENT_LIMIT],
    }


def _match(candidate: _Side, reference: _Side, idf: Mapping[str, float] | None) -> GreedyMatch | None:
    if not candidate.tokens or not reference.tokens:
        return None
    return greedy_match(
        candidate.vectors, reference.vectors, _weights(candidate.tokens, idf), _weights(reference.tokens, idf)
    )


def _score_refs(
    ctx: AssertionContext, candidate: _Side, refs: Sequence[str], sides: Sequence[_Side], idf: Any
) -> tuple[float, dict[str, Any]]:
    """The chosen score over the references (best or mean), with details of the best one."""
    which = str(ctx.config.get("score", "f1"))
    baseline = ctx.config.get("baseline")
    rows: list[dict[str, Any]] = []
    for ref, side in zip(refs, sides, strict=True):
        match = _match(candidate, side, idf)
        prf = (match.precision, match.recall, match.f1) if match else (0.0, 0.0, 0.0)
        precision, recall, f1 = (_rescale(v, baseline) for v in prf)
        alignment = _alignment(candidate, side, match) if match else {}
        rows.append(
            {"reference": ref, "precision": precision, "recall": recall, "f1": f1, "alignment": alignment}
        )
    best = max(range(len(rows)), key=lambda i: rows[i][which])
    value = rows[best][which]
    if ctx.config.get("aggregation", "max") == "mean":
        value = sum(row[which] for row in rows) / len(rows)
    return value, {
        "best": rows[best],
        "per_reference": [{k: r[k] for k in (*SCORES, "reference")} for r in rows],
    }


def _measurement(
    ctx: AssertionContext, name: str, values: Sequence[tuple[str, float, dict[str, Any]]], refs: Sequence[str]
) -> Measurement:
    which = str(ctx.config.get("score", "f1"))
    score = sum(value for _, value, _ in values) / len(values)
    label = {"f1": "F1", "precision": "precision", "recall": "recall"}[which]
    if len(values) > 1:
        each = ", ".join(f"{provider}: {value:.2f}" for provider, value, _ in values)
        subject = f"Mean {name} {label} {score:.2f} over {len(values)} models ({each})"
    elif len(refs) == 1:
        subject = f"{name} {label} {score:.2f} against {short(refs[0])}"
    elif ctx.config.get("aggregation", "max") == "mean":
        subject = f"Mean {name} {label} {score:.2f} over {len(refs)} references"
    else:
        best = short(values[0][2]["best"]["reference"])
        subject = f"Best {name} {label} {score:.2f} (against {best}, of {len(refs)} references)"
    details: dict[str, Any] = {
        "score": which,
        "baseline": ctx.config.get("baseline"),
        "binary": bool(ctx.config.get("binary", False)),
        "models": [
            {"provider": provider, "value": value, "per_reference": extra["per_reference"]}
            for provider, value, extra in values
        ],
    }
    first = values[0][2]["best"]
    details.update({key: first[key] for key in ("reference", *SCORES, "alignment")})
    return Measurement(value=score, subject=subject, details=details)


async def bertscore_for(ctx: AssertionContext, provider: ProviderSpec, refs: Sequence[str]) -> Any:
    capabilities = ctx.services.capabilities(provider)
    if capabilities and "tokens" not in capabilities:
        return (
            f"provider {provider.id!r} gives no contextual token vectors; bertscore needs one that does "
            "(such as `local`), or use bertscore-like with any embedding provider"
        )
    items = await ctx.services.embed_tokens(provider, [ctx.output_text, *refs])
    sides = [_Side(item.tokens, item.vectors) for item in items]
    for name, side in zip(("the output", *(short(ref) for ref in refs)), sides, strict=True):
        if not np.all(np.isfinite(side.vectors)):
            return f"{provider.id}: a token vector of {name} holds a non-finite value"
    idf = await _idf_for(ctx, provider, refs) if ctx.config.get("idf", False) else None
    return _score_refs(ctx, sides[0], refs, sides[1:], idf)


async def bertscore_like_for(ctx: AssertionContext, provider: ProviderSpec, refs: Sequence[str]) -> Any:
    capabilities = ctx.services.capabilities(provider)
    if capabilities and "embedding" not in capabilities:
        return f"provider {provider.id!r} cannot embed texts, so it cannot score bertscore-like"
    words = [word_tokens(text) for text in (ctx.output_text, *refs)]
    vocabulary = list(dict.fromkeys(word for side in words for word in side))
    vectors = np.zeros((0, 1), dtype=np.float32)
    if vocabulary:
        vectors = (await ctx.services.embed(provider, vocabulary)).vectors
        problem = matrix_problem(vectors, [f"the word {w!r}" for w in vocabulary])
        if problem:
            return f"{provider.id}: {problem}"
    row = {word: index for index, word in enumerate(vocabulary)}
    sides = [_Side(tuple(side), vectors[[row[w] for w in side]] if side else vectors[:0]) for side in words]
    return _score_refs(ctx, sides[0], refs, sides[1:], None)


async def _run(ctx: AssertionContext, name: str, scorer: Any) -> AssertionResult | Measurement:
    if (empty := empty_output(ctx.output_text)) is not None:
        return empty
    refs = references(ctx.value)
    values: list[tuple[str, float, dict[str, Any]]] = []
    for provider in embedding_providers(ctx):
        outcome = await scorer(ctx, provider, refs)
        if isinstance(outcome, str):
            return AssertionResult.failure(outcome, provider=provider.id)
        value, extra = outcome
        values.append((provider.display, value, extra))
    return _measurement(ctx, name, values, refs)


def prefetch_bertscore(ctx: AssertionContext) -> list[EmbedRequest]:
    if not ctx.output_text.strip():
        return []
    texts = (ctx.output_text, *references(ctx.value))
    return [EmbedRequest(p, texts, granularity="tokens") for p in embedding_providers(ctx)]


def prefetch_bertscore_like(ctx: AssertionContext) -> list[EmbedRequest]:
    if not ctx.output_text.strip():
        return []
    refs = references(ctx.value)
    vocabulary = tuple(dict.fromkeys(word for text in (ctx.output_text, *refs) for word in word_tokens(text)))
    return [EmbedRequest(p, vocabulary) for p in embedding_providers(ctx)]


@assertion(
    "bertscore",
    family="similarity",
    description="BERTScore P/R/F1 from the local model's contextual token vectors (greedy matching)",
    needs=("tokens",),
    default_threshold=DEFAULT_BERTSCORE_THRESHOLD,
    threshold_meaning="min score",
    requires_value=True,
    direction="higher",
    value_schema=_REFERENCES_VALUE,
    config_schema=_BERTSCORE_CONFIG,
    prefetch=prefetch_bertscore,
)
async def bertscore(ctx: AssertionContext) -> AssertionResult | Measurement:
    return await _run(ctx, "BERTScore", bertscore_for)


@assertion(
    "bertscore-like",
    family="similarity",
    description="BERTScore-style P/R/F1 over word embeddings, with any embedding provider",
    needs=("embedding",),
    default_threshold=DEFAULT_BERTSCORE_LIKE_THRESHOLD,
    threshold_meaning="min score",
    requires_value=True,
    direction="higher",
    value_schema=_REFERENCES_VALUE,
    config_schema=_LIKE_CONFIG,
    prefetch=prefetch_bertscore_like,
)
async def bertscore_like(ctx: AssertionContext) -> AssertionResult | Measurement:
    return await _run(ctx, "BERTScore-like", bertscore_like_for)
