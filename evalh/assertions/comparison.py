"""Assertions that compare a test's outputs across its prompts and providers: select-best, max-score.

promptfoo runs them after every row of a test is graded, once per test (and per repeat), over the
outputs of all its rows in column order; the winner passes, the others fail. Their per-row handler is
never called: the runner leaves them out of each row's grading and, once the test's rows are in, asks
:func:`pick_best` (the grader's pick) or :func:`row_score` (each row's figure) for what they measure;
``evalh/runner/comparing.py`` decides the winner and merges the verdicts into the rows as promptfoo does.

- ``select-best``: the grader gets promptfoo's selection prompt (the criteria and every output, by index)
  and answers with an index; the first integer of its reply is the pick, and a reply without a usable
  index (none, or out of range) fails every row, as in promptfoo. A grader that cannot answer is an
  ERROR (evalh's rule for every judge; promptfoo fails the rows).
- ``max-score``: each row's score is the mean (``method: average``, default) or the sum (``sum``) of its
  other top-level assertions' scores, weighted by type (``weights: {contains: 2}``, default 1); the first
  highest score wins, unless it is below ``threshold``, when no row does.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from evalh.assertions.base import AssertionContext
from evalh.assertions.judge_core import GraderFailure, Grading, custom_prompt, grader_spec, no_grader_reason
from evalh.assertions.judge_prompts import SELECT_BEST_PROMPT, PromptProblem
from evalh.assertions.registry import NONBLANK_TEXT, assertion, get_assertion
from evalh.model import AssertionResult, GradedAssertion, Usage

__all__ = [
    "MIN_OUTPUTS",
    "MaxScoreOptions",
    "Pick",
    "RowScore",
    "compared_outputs_reason",
    "max_score_options",
    "pick_best",
    "row_score",
]

FAMILY = "comparison"
MIN_OUTPUTS = 2  # what there is to compare
_FIRST_INTEGER = re.compile(r"\d+")

_MAX_SCORE_VALUE: Mapping[str, Any] = {
    "type": "object",
    "properties": {
        "method": {"enum": ["average", "sum"], "description": "How a row's scores combine (average)."},
        "weights": {
            "type": "object",
            "additionalProperties": {"type": "number"},
            "description": "Weight of each assertion type's score ({contains: 2}); 1 when not named.",
        },
        "threshold": {"type": "number", "description": "The least winning score; below it no row wins."},
    },
    "additionalProperties": False,
    "description": "How each row's scores combine: {method, weights, threshold}, all optional.",
}


def compared_outputs_reason(name: str) -> str:
    return f"{name} compares a test's outputs: it is graded once every row of the test is in"


@assertion(
    "select-best",
    family=FAMILY,
    description="A grader picks the output that best fits the criteria among the test's outputs",
    needs=("text",),
    requires_value=True,
    value_schema={**NONBLANK_TEXT, "description": "The criteria the best output fits."},
    compares_outputs=True,
)
def _select_best_row(ctx: AssertionContext) -> AssertionResult:
    return AssertionResult.failure(compared_outputs_reason("select-best"))


@assertion(
    "max-score",
    family=FAMILY,
    description="The output whose other assertions score highest among the test's outputs passes",
    value_schema=_MAX_SCORE_VALUE,
    compares_outputs=True,
)
def _max_score_row(ctx: AssertionContext) -> AssertionResult:
    return AssertionResult.failure(compared_outputs_reason("max-score"))


def _as_template_value(output: Any) -> Any:
    """An output as promptfoo hands it to the prompt: a JSON text parsed, anything else as it is."""
    if not isinstance(output, str):
        return output
    try:
        return json.loads(output)
    except ValueError:
        return output


@dataclass(frozen=True)
class Pick:
    """What the select-best grader answered: the index its reply names (None: no integer in it)."""

    index: int | None
    details: Mapping[str, Any]
    usage: Usage


async def pick_best(ctx: AssertionContext, outputs: Sequence[Any]) -> Pick | AssertionResult:
    """Ask ``ctx``'s grader which of ``outputs`` fits the criteria (``ctx.value``): the index it names,
    or the ERROR of a grader that cannot answer. ``ctx`` is the first row's context aimed at the
    assertion (its vars fill the prompt)."""
    grader = ctx.provider("text")
    if grader is None:
        return AssertionResult.failure(no_grader_reason())
    grading = Grading(ctx=ctx, grader=grader_spec(grader), named=grader)
    variables = {
        **ctx.vars,
        "vars": dict(ctx.vars),
        "criteria": ctx.value,
        "outputs": [_as_template_value(output) for output in outputs],
    }
    try:
        reply = await grading.ask(custom_prompt(ctx) or SELECT_BEST_PROMPT, variables)
    except (GraderFailure, PromptProblem) as problem:
        return grading.failure(problem.reason if isinstance(problem, GraderFailure) else str(problem))
    text = reply if isinstance(reply, str) else json.dumps(reply)
    found = _FIRST_INTEGER.search(text.strip())
    index = int(found.group()) if found else None
    return Pick(index, grading.details(pick=index), grading.usage)


@dataclass(frozen=True)
class RowScore:
    """max-score's figure for one row: its score, how many assertions and how much weight made it."""

    score: float
    assertions: int
    weight: float


@dataclass(frozen=True)
class MaxScoreOptions:
    method: str = "average"
    weights: Mapping[str, float] = field(default_factory=dict)
    threshold: float | None = None


def max_score_options(value: Any) -> MaxScoreOptions:
    """The ``{method, weights, threshold}`` of a max-score value (validated by its schema)."""
    options = value if isinstance(value, Mapping) else {}
    threshold = options.get("threshold")
    return MaxScoreOptions(
        method=str(options.get("method", "average")),
        weights={str(k): float(v) for k, v in (options.get("weights") or {}).items()},
        threshold=None if threshold is None else float(threshold),
    )


def row_score(graded: Sequence[GradedAssertion], options: MaxScoreOptions) -> RowScore:
    """One row's max-score figure: its other top-level assertions' scores (skipped ones left out),
    weighted by type as written, averaged or summed."""
    counted = [g for g in graded if not g.skipped and not _compares(g.spec.base_type)]
    weights = [options.weights.get(g.spec.type, 1.0) for g in counted]
    total = sum(g.score * w for g, w in zip(counted, weights, strict=True))
    weight = sum(weights)
    if options.method == "sum":
        return RowScore(total, len(counted), weight)
    return RowScore(total / weight if weight > 0 else 0.0, len(counted), weight)


def _compares(base_type: str) -> bool:
    definition = get_assertion(base_type)
    return definition is not None and definition.compares_outputs
