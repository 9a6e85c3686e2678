"""promptfoo's scoring rules, applied once for every assertion type (pure functions).

A measurement (:func:`decide`): its value against the threshold, in the direction its type declares
(:func:`meets` is the only threshold comparison in evalh); without a threshold, the measurement's own
verdict, else ``value > 0`` (a pass/fail type measures 1 or 0 and takes no threshold);
``config.binary`` makes the score 1 or 0; the reason says how the value stands against the threshold.
``assert-set`` children are scored like a test's assertions.

Per assertion (:func:`finalize`): ``not-`` flips pass and turns the score into ``1 - score``; an error
result is never inverted; ``weight: 0`` makes the assertion metric-only (it always passes).

Per test (:func:`score_test`): the score is the weighted mean of the top-level assertions; without a
test ``threshold`` the test passes when every assertion passes, with one when the score reaches it; any
assertion that could not run makes the row an ERROR; no assertions means pass with score 1.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Literal

from evalh.model import (
    AssertionResult,
    AssertionSpec,
    GradedAssertion,
    Measurement,
    PassFail,
    Status,
    Usage,
    weighted_mean,
)
from evalh.model.suite import _slot_setters
from evalh.model.thresholds import meets

__all__ = [
    "TestVerdict",
    "decide",
    "finalize",
    "meets",
    "named_scores",
    "reasons_shared",
    "relation",
    "score_test",
    "settle",
    "settle_pass_fail",
]

_RELATIONS = {
    ("higher", True): "greater than or equal to",
    ("higher", False): "less than",
    ("lower", True): "less than or equal to",
    ("lower", False): "greater than",
}


def relation(passed: bool, direction: Literal["higher", "lower"], threshold: float) -> str:
    """ "greater than or equal to threshold 0.75" and its kin, for a reason line."""
    return f"{_RELATIONS[direction, passed]} threshold {threshold:g}"


def decide(
    measurement: Measurement,
    threshold: float | None,
    direction: Literal["higher", "lower"] | None,
    binary: bool = False,
) -> AssertionResult:
    """The positive-form verdict on a measurement (negation is :func:`finalize`'s).

    ``binary``: the score is 1 when it passes, else 0 (``config.binary``, or a type scored that way)."""
    m = measurement
    if direction is None:  # a pass/fail type: no threshold applies (validate warns about one)
        threshold = None
    if not m.applicable:
        details = _details(m, threshold)
        return AssertionResult(False, 0.0, m.subject, details=details, usage=m.usage, applicable=False)
    if m.children:
        return _decide_set(m, threshold)
    passed, score, reason = _verdict(m, threshold, direction, binary)
    return AssertionResult(
        passed, score, reason, details=_details(m, threshold), usage=m.usage, value=m.value
    )


def settle(
    spec: AssertionSpec,
    measurement: Measurement,
    threshold: float | None,
    direction: Literal["higher", "lower"] | None,
    binary: bool = False,
) -> GradedAssertion:
    """``finalize(spec, decide(...))`` in one step: the same rules, without the positive-form result in
    between (one object less for each of the 30,000 assertions of a 5,000-row run)."""
    m = measurement
    if not m.applicable or m.children:
        return finalize(spec, decide(m, threshold, direction, binary))
    if direction is None:
        threshold = None
    passed, score, reason = _verdict(m, threshold, direction, binary)
    return _graded(spec, passed, float(score), reason, _details(m, threshold), m.usage, (), m.value)


def settle_pass_fail(spec: AssertionSpec, verdict: PassFail) -> GradedAssertion:
    """:func:`settle` of an output check's pass/fail verdict, for a type without a direction: what it
    makes of ``Measurement.pass_fail(passed, reason, **details)`` (no threshold applies; the measured 1
    or 0 is the score, ``binary`` or not; the reason is the verdict's), without the measurement."""
    passed, reason, details = verdict
    value = 1.0 if passed else 0.0
    return _graded(spec, passed, value, reason, details, None, (), value)


def _details(m: Measurement, threshold: float | None) -> Mapping[str, Any]:
    """The graded assertion's details: the measurement's, with the threshold it was compared with.
    A copy (a handler may share its dict between measurements), except of an empty dict: details are
    never changed once made, and most checks measure none (a dict less per assertion of a run)."""
    if threshold is not None:
        return {**m.details, "threshold": threshold}
    details = m.details
    return details if not details and type(details) is dict else dict(details)


def _verdict(
    m: Measurement,
    threshold: float | None,
    direction: Literal["higher", "lower"] | None,
    binary: bool,
) -> tuple[bool, float, str]:
    """Pass, score and reason of an applicable measurement without children (``threshold`` is None
    for a type without a direction)."""
    if threshold is None or direction is None or not m.compared:
        passed = m.verdict if m.verdict is not None else m.value > 0
        reason = m.plain if m.plain is not None else _unthresholded(m, passed)
    else:
        within = meets(m.value, threshold, direction)
        passed = within and m.verdict is not False
        reason = f"{m.subject} is {relation(within, direction, threshold)}{m.suffix}"
    score = m.score if m.score is not None else m.value
    if binary:
        score = 1.0 if passed else 0.0
    return passed, score, reason


def _unthresholded(m: Measurement, passed: bool) -> str:
    if m.verdict is None and m.compared:  # promptfoo's rule for a bare score: above 0 passes
        return f"{m.subject} is {'greater than' if passed else 'not greater than'} 0{m.suffix}"
    return m.subject + m.suffix


def _decide_set(m: Measurement, threshold: float | None) -> AssertionResult:
    verdict = score_test(m.children, threshold, label="assert-set score")
    return AssertionResult(
        passed=verdict.status is Status.PASS,
        score=verdict.score,
        reason=verdict.reason,
        error=verdict.status is Status.ERROR,
        children=m.children,
    )


def finalize(spec: AssertionSpec, result: AssertionResult) -> GradedAssertion:
    """Apply negation and weight 0 to an assertion function's positive-form result."""
    if result.skipped or result.error or not result.applicable:
        # skipped: it does not apply to this row, so it passes and the row's score leaves it out; an error,
        # or nothing to measure: neither the type nor its not- form can pass
        return GradedAssertion(
            spec=spec,
            passed=result.skipped,
            score=0.0,
            reason=result.reason,
            error=result.error,
            details=result.details,
            usage=result.usage,
            children=result.children,
            skipped=result.skipped,
        )
    return _graded(
        spec,
        result.passed,
        float(result.score),
        result.reason,
        result.details,
        result.usage,
        result.children,
        result.value,
    )


def _graded(
    spec: AssertionSpec,
    passed: bool,
    score: float,
    reason: str,
    details: Mapping[str, Any],
    usage: Usage | None,
    children: tuple[GradedAssertion, ...],
    value: float | None,
) -> GradedAssertion:
    """The graded assertion of a positive-form verdict that ran: ``not-`` and weight 0 applied."""
    if spec.negate:
        # clamped: a negative cosine or a dot product above 1 must not give a score outside [0, 1]
        passed, score = not passed, min(1.0, max(0.0, 1.0 - score))
        if not passed:
            reason = f"{reason} ({spec.type} expects the opposite)"
    if spec.weight == 0:
        passed = True
    kept = _RUN_REASONS.get()  # _shared, unrolled: this runs for every assertion of every row
    if kept is not None and type(reason) is str:
        reason = kept.setdefault(reason, reason)
    return GradedAssertion.ran(spec, passed, score, reason, details, usage, children, value)


def named_scores(graded: Sequence[GradedAssertion]) -> tuple[dict[str, float], dict[str, float]]:
    """Weighted mean score and summed weight per ``metric`` name (children of sets bubble up); a
    script's returned ``namedScores`` count as scores of those names, with the assertion's weight."""
    sums: dict[str, float] = {}
    weights: dict[str, float] = {}
    _sum_named_scores(graded, sums, weights)
    if not sums:  # most rows name nothing
        return sums, weights
    means = {name: (sums[name] / weights[name] if weights[name] > 0 else 0.0) for name in sums}
    return means, weights


def _sum_named_scores(
    items: Sequence[GradedAssertion], sums: dict[str, float], weights: dict[str, float]
) -> None:
    # A module function, not a closure in named_scores: a nested function that calls itself holds a
    # reference to itself, a reference cycle per row that only the cyclic collector could free.
    for item in items:  # every assertion of every row: nothing is built for one without names
        if item.skipped:
            continue
        weight = item.spec.weight
        returned = item.details.get("namedScores")
        if returned is not None and isinstance(returned, Mapping):  # a script's; an ABC check is slow
            for name, score in returned.items():
                sums[name] = sums.get(name, 0.0) + float(score) * weight
                weights[name] = weights.get(name, 0.0) + weight
        metric = item.spec.metric
        if metric:
            sums[metric] = sums.get(metric, 0.0) + float(item.score) * weight
            weights[metric] = weights.get(metric, 0.0) + weight
        if item.children:
            _sum_named_scores(item.children, sums, weights)


# The reasons of the run under way, each kept once: a run keeps every row to its end, and most of its
# reasons recur ("Output does not contain 'error'" in each of 50,000 rows: a third as many bytes).
# Per run, not sys.intern: interned strings live as long as the process on some CPython 3.12 releases.
_RUN_REASONS: ContextVar[dict[str, str] | None] = ContextVar("evalh_run_reasons", default=None)


@contextmanager
def reasons_shared() -> Iterator[None]:
    """Inside, graded assertions and rows with equal reasons share one string (see _shared)."""
    token = _RUN_REASONS.set({})
    try:
        yield
    finally:
        _RUN_REASONS.reset(token)


def _shared(reason: str) -> str:
    kept = _RUN_REASONS.get()
    return reason if kept is None or type(reason) is not str else kept.setdefault(reason, reason)


@dataclass(frozen=True, init=False, slots=True)
class TestVerdict:
    __test__ = False

    status: Status
    score: float
    reason: str
    named_scores: dict[str, float]
    named_score_weights: dict[str, float]

    def __init__(
        self,
        status: Status,
        score: float,
        reason: str,
        named_scores: dict[str, float],
        named_score_weights: dict[str, float],
    ) -> None:
        # one per row: each slot set through its descriptor, not by a frozen __init__'s object.__setattr__
        _V_STATUS(self, status)
        _V_SCORE(self, score)
        _V_REASON(self, reason)
        _V_NAMED(self, named_scores)
        _V_WEIGHTS(self, named_score_weights)


_V_STATUS, _V_SCORE, _V_REASON, _V_NAMED, _V_WEIGHTS = _slot_setters(TestVerdict)


def score_test(
    graded: Sequence[GradedAssertion], threshold: float | None, label: str = "Aggregate score"
) -> TestVerdict:
    """The row's status, score and reason from its top-level graded assertions (or a set's)."""
    means, weights = named_scores(graded)
    if not graded:
        return TestVerdict(Status.PASS, 1.0, "No assertions", means, weights)
    first_failed: GradedAssertion | None = None
    applied = False
    for item in graded:  # one pass: the first error decides; else whether any applied, the first failure
        if item.error:
            reason = f"{item.spec.type}: {item.reason}"
            return TestVerdict(Status.ERROR, 0.0, _shared(reason), means, weights)
        applied = applied or not item.skipped
        if first_failed is None and not item.passed:
            first_failed = item
    if not applied:  # nothing applied: as a test without assertions, saying why
        reason = f"{graded[0].spec.full_type}: {graded[0].reason}"
        return TestVerdict(Status.PASS, 1.0, _shared(reason), means, weights)
    score = weighted_mean(graded)
    if threshold is not None:
        passed = meets(score, threshold, "higher")
        # promptfoo's wording: "Aggregate score 0.70 >= 0.7 threshold"
        reason = f"{label} {score:.2f} {'>=' if passed else '<'} {threshold:g} threshold"
        return TestVerdict(Status.PASS if passed else Status.FAIL, score, reason, means, weights)
    if first_failed is not None:
        reason = f"{first_failed.spec.type}: {first_failed.reason}"
        return TestVerdict(Status.FAIL, score, _shared(reason), means, weights)
    return TestVerdict(Status.PASS, score, "All assertions passed", means, weights)
