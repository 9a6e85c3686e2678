"""A test's ``assertScoringFunction`` (promptfoo's ``AssertionsResult.testResult``): after the row's
assertions are graded and scored, the function gets the named scores and
``{threshold, componentResults, tokensUsed}`` and its GradingResult replaces the row's pass, score and
reason (and its named scores, when it returns some). A test without assertions is not scored by it,
as in promptfoo; an ERROR row stays one (an assertion that could not run is never scored into a pass).
A function that raises, times out or returns no GradingResult makes the row an ERROR naming why
(promptfoo fails the row with ``Scoring function error: ...``: here code that could not run is an error).
The function itself is called by ``runtimes/scoring_functions.py``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from evalh.common.deadlines import PYTHON_ASSERTION_TIMEOUT_S
from evalh.model import GradedAssertion, Status, TestCase, Usage
from evalh.runner.scoring import TestVerdict
from evalh.runtimes.scoring_functions import ScoringFailed, call_scoring_function

__all__ = ["scored_by_function"]


def _component(graded: GradedAssertion, parent: GradedAssertion | None = None) -> dict[str, Any]:
    spec = (parent if graded.spec.raw is None and parent is not None else graded).spec
    assertion = dict(spec.raw) if spec.raw else {"type": spec.type, "value": spec.value}
    return {"pass": graded.passed, "score": graded.score, "reason": graded.reason, "assertion": assertion}


def _components(graded: Sequence[GradedAssertion]) -> list[dict[str, Any]]:
    """promptfoo's flattened componentResults: each top-level result, then an assert-set's children."""
    flat: list[dict[str, Any]] = []
    for item in graded:
        flat.append(_component(item))
        flat.extend(_component(child, item) for child in item.children)
    return flat


def _tokens(usage: Usage) -> dict[str, int]:
    return {
        "total": usage.total_tokens,
        "prompt": usage.prompt_tokens,
        "completion": usage.completion_tokens,
        "cached": usage.cached,
        "numRequests": usage.requests,
    }


async def scored_by_function(
    test: TestCase,
    graded: Sequence[GradedAssertion],
    verdict: TestVerdict,
    usage: Usage,
    *,
    config_dir: Path | None,
    timeout_s: float | None,
) -> TestVerdict:
    """``verdict`` as the test's scoring function decides it (unchanged without one)."""
    if test.scoring_function is None or not test.asserts or verdict.status is Status.ERROR:
        return verdict
    context: dict[str, Any] = {"componentResults": _components(graded), "tokensUsed": _tokens(usage)}
    if test.threshold is not None:
        context["threshold"] = test.threshold
    try:
        result = await call_scoring_function(
            test.scoring_function,
            verdict.named_scores,
            context,
            config_dir=config_dir,
            timeout_s=timeout_s or PYTHON_ASSERTION_TIMEOUT_S,
        )
    except ScoringFailed as error:
        reason = f"Scoring function error: {test.scoring_function}: {error}"
        return TestVerdict(Status.ERROR, 0.0, reason, verdict.named_scores, verdict.named_score_weights)
    named = result.get("namedScores")
    return TestVerdict(
        Status.PASS if result["pass"] else Status.FAIL,
        float(result["score"]),
        str(result["reason"]),
        _numbers(named) if isinstance(named, Mapping) else verdict.named_scores,
        verdict.named_score_weights,
    )


def _numbers(named: Mapping[str, Any]) -> dict[str, float]:
    return {
        str(k): float(v) for k, v in named.items() if isinstance(v, int | float) and not isinstance(v, bool)
    }
