"""Model-graded RAG assertions: answer-relevance, context-faithfulness, context-recall, context-relevance.

They read the question from ``vars.query`` (else the rendered prompt) and the retrieved context from
``vars.context`` (a string, or a list of passages joined by blank lines). Scores are fractions in
[0, 1]; the default threshold is 0 as in promptfoo, so set one (e.g. ``threshold: 0.7``) to gate on them.

``answer-relevance`` asks the grader for questions the output answers, then compares each with the query
by embedding cosine (the embedding provider: ``options.provider.embedding``, else the bundled local
model; a grader given as a plain ``provider`` is never used for embeddings unless it can embed).
Registered as part of the ``judged`` family (``judged.py`` imports this module).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from evalh.assertions.base import DEFAULT_EMBEDDING_PROVIDER, AssertionContext
from evalh.assertions.judge_core import (
    GraderFailure,
    Grading,
    as_bool,
    graded,
    query_of,
)
from evalh.assertions.judge_prompts import (
    ANSWER_RELEVANCE_PROMPT,
    CONTEXT_FAITHFULNESS_STATEMENTS_PROMPT,
    CONTEXT_FAITHFULNESS_VERDICTS_PROMPT,
    CONTEXT_RECALL_PROMPT,
    CONTEXT_RELEVANCE_PROMPT,
)
from evalh.assertions.registry import NONBLANK_TEXT, UNUSED_VALUE, assertion
from evalh.common.vectors import cosine, vector_problem
from evalh.errors import EvalhError
from evalh.model import Measurement, ProviderSpec

__all__ = ["CONTEXT_TYPES", "context_of", "embedding_provider_for", "split_sentences"]

FAMILY = "judged"
# The assertions that read the retrieved context (vars.context, or their contextTransform's result).
CONTEXT_TYPES = ("context-faithfulness", "context-recall", "context-relevance")
QUESTION_COUNT = 3
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")


def split_sentences(text: str) -> list[str]:
    """Sentences (and lines) of ``text``, stripped, empty ones dropped."""
    return [part.strip() for part in _SENTENCE_END.split(text) if part and part.strip()]


def context_of(ctx: AssertionContext) -> str | None:
    """The assertion's ``contextTransform`` result, else ``vars.context``, as one text; None when absent
    or empty."""
    context = ctx.retrieved_context if ctx.retrieved_context is not None else ctx.vars.get("context")
    if isinstance(context, list):
        context = "\n\n".join(str(item) for item in context)
    return context if isinstance(context, str) and context.strip() else None


def _fraction(part: int, whole: int) -> float:
    return part / whole if whole else 0.0


def _needs_context(ctx: AssertionContext, fallback: str | None = None) -> str:
    context = context_of(ctx) or fallback
    if not context:
        raise GraderFailure("needs the retrieved context in vars.context (or from a contextTransform)")
    return context


def _prompt_text(prompt: Any) -> str | None:
    """The rendered prompt as promptfoo hands it over: text, or a chat list as JSON indented by two."""
    if isinstance(prompt, str):
        return prompt if prompt.strip() else None
    return json.dumps(prompt, indent=2, ensure_ascii=False) if prompt else None


def _needs_query(ctx: AssertionContext) -> str:
    query = query_of(ctx)
    if not query.strip():
        raise GraderFailure("needs the question in vars.query (or a prompt)")
    return query


def _strings(payload: Mapping[str, Any], key: str) -> list[str]:
    items = payload.get(key)
    if not isinstance(items, list):
        raise GraderFailure(f"the grader's reply has no list under {key!r}")
    return [str(item).strip() for item in items if str(item).strip()]


def _records(payload: Mapping[str, Any], key: str) -> list[Mapping[str, Any]]:
    items = payload.get(key)
    if not isinstance(items, list) or not all(isinstance(item, Mapping) for item in items):
        raise GraderFailure(f"the grader's reply has no list of objects under {key!r}")
    return list(items)


# -- answer-relevance ------------------------------------------------------------------------------


def embedding_provider_for(ctx: AssertionContext, grader: ProviderSpec) -> ProviderSpec:
    """The embedder: the typed ``embedding`` choice, else the bundled model when the resolved provider
    is the grader itself and cannot embed (promptfoo's fallback for a plain ``provider``)."""
    picked = ctx.provider("embedding", fallback=DEFAULT_EMBEDDING_PROVIDER) or DEFAULT_EMBEDDING_PROVIDER
    if picked.id == grader.id and "embedding" not in ctx.services.capabilities(picked):
        return DEFAULT_EMBEDDING_PROVIDER
    return picked


@assertion(
    "answer-relevance",
    family=FAMILY,
    description="The grader writes questions the output answers; their mean embedding cosine to the query",
    needs=("text", "embedding"),
    default_threshold=0.0,
    threshold_meaning="min mean cosine similarity",
    direction="higher",
    bounds=(0.0, 1.0),
    value_schema=UNUSED_VALUE,
)
@graded
async def answer_relevance(ctx: AssertionContext, grading: Grading) -> Measurement:
    query = _needs_query(ctx)
    reply = await grading.ask_json(
        ANSWER_RELEVANCE_PROMPT, grading.variables(count=QUESTION_COUNT), ("questions",)
    )
    questions = _strings(reply, "questions")[:QUESTION_COUNT]
    if not questions:
        raise GraderFailure("the grader wrote no questions")
    embedder = embedding_provider_for(ctx, grading.grader)
    try:
        embeddings = await ctx.services.embed(embedder, [query, *questions])
    except EvalhError as error:
        raise GraderFailure(f"embedding with {embedder.display} failed: {error.render()}") from None
    grading.usage = grading.usage + embeddings.usage
    query_vector = embeddings.vectors[0]
    similarities: list[float] = []
    for index in range(1, len(questions) + 1):
        problem = vector_problem(
            query_vector, embeddings.vectors[index], a_name="the query", b_name="a question"
        )
        if problem:
            raise GraderFailure(problem)
        similarities.append(cosine(query_vector, embeddings.vectors[index]))
    score = sum(similarities) / len(similarities)
    return grading.measured(
        score,
        f"Answer relevance {score:.2f}",
        questions=questions,
        similarities=similarities,
        embedder=embedder.id,
    )


# -- context-faithfulness ----------------------------------------------------------------------------


@assertion(
    "context-faithfulness",
    family=FAMILY,
    description="Share of the output's statements that the retrieved context supports (vars.context)",
    needs=("text",),
    default_threshold=0.0,
    threshold_meaning="min share of supported statements",
    direction="higher",
    bounds=(0.0, 1.0),
    value_schema=UNUSED_VALUE,
)
@graded
async def context_faithfulness(ctx: AssertionContext, grading: Grading) -> Measurement:
    context = _needs_context(ctx)
    query = _needs_query(ctx)
    reply = await grading.ask_json(
        CONTEXT_FAITHFULNESS_STATEMENTS_PROMPT, grading.variables(query=query), ("statements",)
    )
    statements = _strings(reply, "statements")
    if not statements:  # nothing to contradict the context: the threshold has nothing to gate
        return grading.measured(
            1.0,
            "The output makes no factual statements to check",
            verdict=True,
            compared=False,
            statements=[],
        )
    variables = grading.variables(context=context, statements=statements)
    verdicts = _records(
        await grading.ask_json(CONTEXT_FAITHFULNESS_VERDICTS_PROMPT, variables, ("verdicts",)), "verdicts"
    )
    verdicts = verdicts[: len(statements)]
    supported = [as_bool(v.get("verdict", False)) for v in verdicts]
    supported += [False] * (len(statements) - len(supported))  # a statement the grader skipped
    score = _fraction(sum(supported), len(statements))
    unsupported = [s for s, ok in zip(statements, supported, strict=True) if not ok]
    subject = (
        f"{sum(supported)} of {len(statements)} statements are supported by the context: score {score:.2f}"
    )
    return grading.measured(score, subject, statements=statements, unsupported=unsupported)


# -- context-recall ------------------------------------------------------------------------------------


@assertion(
    "context-recall",
    family=FAMILY,
    description="Share of the reference answer's sentences that the retrieved context supports",
    needs=("text",),
    default_threshold=0.0,
    threshold_meaning="min share of supported reference sentences",
    direction="higher",
    bounds=(0.0, 1.0),
    requires_value=True,
    value_schema={**NONBLANK_TEXT, "description": "The reference answer."},
)
@graded
async def context_recall(ctx: AssertionContext, grading: Grading) -> Measurement:
    context = _needs_context(ctx, fallback=_prompt_text(ctx.prompt))  # promptfoo falls back to the prompt
    variables = grading.variables(context=context, ideal=str(ctx.value), rubric=str(ctx.value))
    sentences = _records(
        await grading.ask_json(CONTEXT_RECALL_PROMPT, variables, ("sentences",)), "sentences"
    )
    if not sentences:
        raise GraderFailure("the grader found no sentences in the reference answer")
    attributed = [as_bool(s.get("attributed", False)) for s in sentences]
    score = _fraction(sum(attributed), len(sentences))
    missing = [str(s.get("sentence", "")) for s, ok in zip(sentences, attributed, strict=True) if not ok]
    subject = (
        f"{sum(attributed)} of {len(sentences)} reference sentences are supported by the context: "
        f"score {score:.2f}"
    )
    return grading.measured(score, subject, unsupported=missing)


# -- context-relevance -------------------------------------------------------------------------------


@assertion(
    "context-relevance",
    family=FAMILY,
    description="Share of the retrieved context's sentences that help answer the query",
    needs=("text",),
    default_threshold=0.0,
    threshold_meaning="min share of relevant context sentences",
    direction="higher",
    bounds=(0.0, 1.0),
    value_schema=UNUSED_VALUE,
)
@graded
async def context_relevance(ctx: AssertionContext, grading: Grading) -> Measurement:
    context = _needs_context(ctx)
    query = _needs_query(ctx)
    reply = await grading.ask_json(
        CONTEXT_RELEVANCE_PROMPT, grading.variables(context=context, query=query), ("relevant_sentences",)
    )
    relevant = list(dict.fromkeys(_strings(reply, "relevant_sentences")))
    total = len(split_sentences(context))
    score = min(1.0, _fraction(len(relevant), total))
    subject = f"{min(len(relevant), total)} of {total} context sentences are relevant to the query"
    subject = f"{subject}: score {score:.2f}"
    return grading.measured(score, subject, relevant_sentences=relevant)
