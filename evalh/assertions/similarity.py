"""The ``similar`` family: semantic similarity of the output to one or more reference texts.

``similar`` = ``similar:cosine`` (pass when cosine >= threshold), ``similar:dot`` (dot product >=
threshold) and ``similar:euclidean`` (pass when the distance <= threshold, a maximum distance; score
1/(1+d)). Default threshold 0.75, as promptfoo. A list value passes if any value passes and reports the
best score (``config.aggregation: mean`` compares the mean instead); ``not-similar`` therefore passes only
when the output is dissimilar to every value. ``config.binary: true`` turns the score into 1.0 / 0.0.
A list of providers (``provider: [a, b]`` or ``config.providers``) scores with each model and reports the
mean, with every model's score in the details.

Texts are embedded through ``ctx.services`` (suite-wide batching and caching, see runner/embed.py), and
declared up front by :func:`prefetch_similar`. Helpers shared with ``bertscore.py`` live here.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from evalh.assertions.base import DEFAULT_EMBEDDING_PROVIDER, AssertionContext, EmbedRequest
from evalh.assertions.registry import assertion
from evalh.common.vectors import compare, vector_problem
from evalh.model import AssertionResult, Measurement, ProviderSpec, Usage

__all__ = [
    "AGGREGATIONS",
    "EMBEDDING_CONFIG",
    "ModelScore",
    "embedding_providers",
    "empty_output",
    "prefetch_similar",
    "references",
    "score_similar",
    "short",
    "similarity_provider_problem",
]

AGGREGATIONS = ("max", "mean")
_METRIC_NAMES = {"cosine": "Cosine similarity", "dot": "Dot product", "euclidean": "Euclidean distance"}


# -- shared helpers (also used by bertscore.py) ----------------------------------------------------


def references(value: Any) -> list[str]:
    """The reference texts of a validated ``value``: a text, or a non-empty list of texts."""
    return [value] if isinstance(value, str) else list(value)


def short(text: str, limit: int = 60) -> str:
    """``text`` quoted, cut to ``limit`` characters for a reason line."""
    flat = " ".join(text.split())
    return repr(flat if len(flat) <= limit else flat[: limit - 1] + "…")


# The config keys every embedding assertion reads (similar, bertscore, bertscore-like); ``providers`` is
# a provider list, which the config layer parses into ``spec.provider.models``.
EMBEDDING_CONFIG: Mapping[str, Any] = {
    "aggregation": {
        "enum": list(AGGREGATIONS),
        "description": "With several values: compare the best score (max, the default) or the mean.",
    },
    "providers": {
        "description": "Several embedding providers: the score is the mean over the models (as a list "
        "in provider:)."
    },
}


def similarity_provider_problem(assertion_type: str, capabilities: Sequence[str]) -> str | None:
    """For ``validate``: why a provider with these registry capabilities cannot serve this type.

    ``similar`` / ``similar:cosine`` work with an embedding provider or a similarity-only one (Hugging
    Face sentence-similarity); dot and euclidean need vectors; ``bertscore`` needs contextual token
    vectors ("tokens", e.g. ``local``); ``bertscore-like`` any embedding provider.
    """
    if assertion_type == "bertscore":
        if "tokens" in capabilities:
            return None
        return "bertscore needs contextual token vectors (such as the `local` provider's); use bertscore-like"
    metric = assertion_type.partition(":")[2] or "cosine"
    if "embedding" in capabilities:
        return None
    if "similarity" in capabilities and assertion_type.startswith("similar"):
        if metric == "cosine":
            return None
        return f"this provider computes cosine similarity only; {assertion_type} needs an embedding provider"
    return f"{assertion_type} needs an embedding provider, and this provider cannot embed texts"


def embedding_providers(ctx: AssertionContext) -> list[ProviderSpec]:
    """The embedding provider(s) of this assertion: its list of models, or the resolved single one."""
    choice = ctx.spec.provider
    if choice is not None and choice.models:
        return list(choice.models)
    chosen = ctx.provider("embedding", fallback=DEFAULT_EMBEDDING_PROVIDER)
    return [chosen or DEFAULT_EMBEDDING_PROVIDER]


def can_embed(ctx: AssertionContext, provider: ProviderSpec) -> bool:
    """Whether the registry says ``provider`` embeds (unknown ids are left to the store to report)."""
    capabilities = ctx.services.capabilities(provider)
    return "embedding" in capabilities or not capabilities


# -- the similar family --------------------------------------------------------------------------


@dataclass(frozen=True)
class ModelScore:
    """One provider's verdict: ``raw`` is the aggregated similarity or distance over the references."""

    provider: str
    raw: float
    per_value: tuple[float, ...]
    best: int  # index of the best reference
    usage: Usage


def _aggregate(metric: str, raws: Sequence[float], how: str) -> tuple[float, int]:
    pick = min if metric == "euclidean" else max
    best = pick(range(len(raws)), key=lambda i: raws[i])
    if how == "mean":
        return sum(raws) / len(raws), best
    return raws[best], best


def _to_score(metric: str, raw: float) -> float:
    return 1.0 / (1.0 + raw) if metric == "euclidean" else raw


async def _model_raws(
    ctx: AssertionContext, provider: ProviderSpec, metric: str, output: str, refs: Sequence[str]
) -> tuple[list[float], Usage] | str:
    """The metric of the output against each reference with one provider, or a problem text."""
    if not can_embed(ctx, provider):
        if "similarity" not in ctx.services.capabilities(provider):
            return f"provider {provider.id!r} cannot embed texts, so it cannot score similar:{metric}"
        if metric != "cosine":
            return (
                f"provider {provider.id!r} computes cosine similarity only; similar:{metric} needs "
                "an embedding provider"
            )
        # The output as the source sentence: one request scores it against every reference.
        scored = await ctx.services.similarity(provider, [(output, ref) for ref in refs])
        return list(scored.scores), scored.usage
    embeddings = await ctx.services.embed(provider, [output, *refs])
    vectors = embeddings.vectors
    raws: list[float] = []
    for index, ref in enumerate(refs, start=1):
        problem = None
        if not embeddings.checked:  # else the store checked every vector once, as it arrived
            problem = vector_problem(
                vectors[0], vectors[index], a_name="the output", b_name=f"value {short(ref)}"
            )
        if problem:
            return f"{provider.id}: {problem}"
        raw = compare(metric, vectors[0], vectors[index])
        if not math.isfinite(raw):
            return f"Invalid similarity score: {provider.id} gave {raw} against {short(ref)}"
        raws.append(raw)
    return raws, embeddings.usage


def _subject(metric: str, models: Sequence[ModelScore], refs: Sequence[str], how: str, raw: float) -> str:
    name = _METRIC_NAMES[metric]
    lower = name[0].lower() + name[1:]
    if len(models) > 1:
        each = ", ".join(f"{m.provider}: {m.raw:.2f}" for m in models)
        return f"Mean {lower} {raw:.2f} over {len(models)} models ({each})"
    if len(refs) == 1:
        return f"{name} {raw:.2f} to {short(refs[0])}"
    if how == "mean":
        return f"Mean {lower} {raw:.2f} over {len(refs)} values"
    best = short(refs[models[0].best])
    return f"Best {lower} {raw:.2f} (to {best}, of {len(refs)} values)"


def empty_output(text: str) -> Measurement | None:
    """An empty or blank output is neither similar nor dissimilar to anything: not applicable, so
    both the type and its ``not-`` form fail (docs/similarity.md)."""
    if text.strip():
        return None
    return Measurement.not_applicable(
        "the output is empty, so it is neither similar nor dissimilar to the value "
        "(both this type and its not- form fail)"
    )


def _details(
    metric: str,
    models: Sequence[ModelScore],
    refs: Sequence[str],
    raw: float,
    how: str,
    binary: bool,
) -> dict[str, Any]:
    return {
        "metric": metric,
        "aggregation": how,
        "binary": binary,
        ("distance" if metric == "euclidean" else "similarity"): raw,
        "models": [
            {
                "provider": m.provider,
                "score": _to_score(metric, m.raw),
                "raw": m.raw,
                "best_value": refs[m.best],
                "per_value": [{"value": ref, "raw": r} for ref, r in zip(refs, m.per_value, strict=True)],
            }
            for m in models
        ],
    }


async def score_similar(ctx: AssertionContext, metric: str) -> AssertionResult | Measurement:
    """Measure the output against ``ctx.value`` with ``metric``, over every configured provider."""
    refs = references(ctx.value)
    how = str(ctx.config.get("aggregation", "max"))
    output = ctx.output_text
    if (empty := empty_output(output)) is not None:
        return empty
    models: list[ModelScore] = []
    for provider in embedding_providers(ctx):
        outcome = await _model_raws(ctx, provider, metric, output, refs)
        if isinstance(outcome, str):
            return AssertionResult.failure(outcome, provider=provider.id)
        raws, usage = outcome
        raw, best = _aggregate(metric, raws, how)
        models.append(ModelScore(provider.display, raw, tuple(raws), best, usage))
    raw = sum(m.raw for m in models) / len(models)
    binary = bool(ctx.config.get("binary", False))
    usage = models[0].usage if len(models) == 1 else sum((m.usage for m in models), Usage())
    return Measurement(
        value=raw,
        score=sum(_to_score(metric, m.raw) for m in models) / len(models),
        subject=_subject(metric, models, refs, how, raw),
        details=_details(metric, models, refs, raw, how, binary),
        usage=usage if usage != Usage() else None,
    )


def prefetch_similar(ctx: AssertionContext) -> list[EmbedRequest]:
    """The output and every reference, for each provider that embeds."""
    if not ctx.output_text.strip():
        return []
    texts = (ctx.output_text, *references(ctx.value))
    return [
        EmbedRequest(provider, texts) for provider in embedding_providers(ctx) if can_embed(ctx, provider)
    ]


# One reference text or a list of them (the best match counts).
_REFERENCES_VALUE: dict[str, Any] = {
    "anyOf": [{"type": "string"}, {"type": "array", "minItems": 1, "items": {"type": "string"}}],
    "description": "The expected text, or a list of acceptable texts.",
}


def _register(name: str, metric: str, meaning: str, summary: str) -> None:
    async def handler(ctx: AssertionContext) -> AssertionResult | Measurement:
        return await score_similar(ctx, metric)

    handler.__name__ = handler.__qualname__ = f"similar_{metric}" + ("_default" if ":" not in name else "")
    assertion(
        name,
        family="similarity",
        description=summary,
        needs=("embedding",),
        default_threshold=0.75,
        threshold_meaning=meaning,
        requires_value=True,
        value_schema=_REFERENCES_VALUE,
        config_schema=EMBEDDING_CONFIG,
        prefetch=prefetch_similar,
        direction="lower" if metric == "euclidean" else "higher",
        bounds=(0.0, None) if metric == "euclidean" else (-1.0, 1.0) if metric == "cosine" else (None, None),
    )(handler)


_register("similar", "cosine", "min cosine similarity", "cosine similarity of output and value embeddings")
_register("similar:cosine", "cosine", "min cosine similarity", "same as similar")
_register("similar:dot", "dot", "min dot product", "dot product of output and value embeddings")
_register(
    "similar:euclidean",
    "euclidean",
    "max distance",
    "Euclidean distance of output and value embeddings (score 1/(1+d))",
)
