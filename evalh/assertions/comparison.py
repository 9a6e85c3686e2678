"""Assertions that compare a test's outputs across its prompts and providers: select-best, max-score.

promptfoo runs them after every row of a test is graded, once per test (and per repeat), over the
outputs of all its rows in column order; the winner passes, the others fail. Their per-row handler is
never called: the runner leaves them out of each row's grading and calls :func:`select_best` or
:func:`max_score` once the test's rows are in (``evalh/runner/comparing.py``, which also merges the
verdicts into the rows as promptfoo does).

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
from typing import Any

from evalh.assertions.base import AssertionContext
from evalh.assertions.judge_core import GraderFailure, Grading, custom_prompt, grader_spec, no_grader_reason
from evalh.assertions.judge_prompts import SELECT_BEST_PROMPT, PromptProblem
from evalh.assertions.registry import NONBLANK_TEXT, assertion, get_assertion
from evalh.model import AssertionResult, GradedAssertion

__all__ = ["MIN_OUTPUTS", "compared_outputs_reason", "max_score", "select_best"]

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
    description="a grader picks the output that best fits the criteria among the test's outputs",
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
    description="the output whose other assertions score highest among the test's outputs passes",
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


async def select_best(ctx: AssertionContext, outputs: Sequence[Any]) -> list[AssertionResult]:
    """Ask ``ctx``'s grader which of ``outputs`` fits the criteria (``ctx.value``); one result per output.

    ``ctx`` is the first row's context aimed at the assertion (its vars fill the prompt)."""
    grader = ctx.provider("text")
    if grader is None:
        return [AssertionResult.failure(no_grader_reason())] * len(outputs)
    grading = Grading(ctx=ctx, grader=grader_spec(grader), named=grader)
    criteria = ctx.value
    variables = {
        **ctx.vars,
        "vars": dict(ctx.vars),
        "criteria": criteria,
        "outputs": [_as_template_value(output) for output in outputs],
    }
    try:
        reply = await grading.ask(custom_prompt(ctx) or SELECT_BEST_PROMPT, variables)
    except (GraderFailure, PromptProblem) as problem:
        reason = problem.reason if isinstance(problem, GraderFailure) else str(problem)
        return [grading.failure(reason)] * len(outputs)
    text = reply if isinstance(reply, str) else json.dumps(reply)
    found = _FIRST_INTEGER.search(text.strip())
    pick = int(found.group()) if found else None
    details = grading.details(pick=pick)
    if pick is None or pick >= len(outputs):
        reason = f"Invalid select-best verdict: {'NaN' if pick is None else pick}"
        return [AssertionResult(False, 0.0, reason, details=details, usage=grading.usage)] * len(outputs)
    return [
        AssertionResult(
            index == pick,
            1.0 if index == pick else 0.0,
            f"Output selected as the best: {criteria}"
            if index == pick
            else f"Output not selected: {criteria}",
            details=details,
            usage=grading.usage if index == 0 else None,  # the grader's usage counts once, on one row
        )
        for index in range(len(outputs))
    ]


def _aggregate(
    graded: Sequence[GradedAssertion], method: str, weights: Mapping[str, float]
) -> tuple[float, int, float]:
    """(score, assertions counted, total weight) of one row's other top-level assertions."""
    counted = [g for g in graded if not g.skipped and not _compares(g.spec.base_type)]
    total = sum(g.score * weights.get(g.spec.type, 1.0) for g in counted)
    weight = sum(weights.get(g.spec.type, 1.0) for g in counted)
    if method == "sum":
        return total, len(counted), weight
    return (total / weight if weight > 0 else 0.0), len(counted), weight


def _compares(base_type: str) -> bool:
    definition = get_assertion(base_type)
    return definition is not None and definition.compares_outputs


def _js_number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def max_score(value: Any, rows: Sequence[Sequence[GradedAssertion] | None]) -> list[AssertionResult]:
    """The max-score verdict of each row; ``rows``: each row's graded assertions (None: the row has
    none, it is an ERROR without an output, and cannot win)."""
    options = value if isinstance(value, Mapping) else {}
    method = str(options.get("method", "average"))
    weights = {str(k): float(v) for k, v in (options.get("weights") or {}).items()}
    threshold = None if options.get("threshold") is None else float(options["threshold"])
    scored = [None if graded is None else _aggregate(graded, method, weights) for graded in rows]
    figures = [s[0] for s in scored if s is not None]
    best = max(figures) if figures else None
    winner = next((i for i, s in enumerate(scored) if s is not None and s[0] == best), None)
    meets = best is not None and (threshold is None or best >= threshold)
    results = []
    for index, row in enumerate(scored):
        if row is None:
            results.append(AssertionResult(False, 0.0, "Not selected: the row has no graded output"))
            continue
        score, count, weight = row
        wins = index == winner and meets
        if wins:
            reason = f"Selected as highest scoring output (score: {score:.3f})"
        elif score == best and not meets:
            reason = f"Not selected - score {score:.3f} below threshold {_js_number(threshold or 0.0)}"
        else:
            reason = f"Not selected (score: {score:.3f}, max: {best:.3f})"
        details = {"maxScore": score, "assertionCount": count, "totalWeight": weight}
        results.append(AssertionResult(wins, 1.0 if wins else 0.0, reason, details=details, value=score))
    return results
