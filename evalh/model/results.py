"""The result side of the model: what providers return (:class:`ProviderResponse`, :class:`Usage`), what
assertions measure (:class:`Measurement`, :class:`AssertionResult`), the graded verdicts and one
:class:`TestResult` row per test x prompt x provider. Frozen dataclasses; imports nothing of evalh
outside this package."""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, cast

from evalh.model.suite import (
    AssertionSpec,
    Prompt,
    ProviderSpec,
    TestCase,
    _draft_of,
    _slot_setters,
    asks_provider,
)
from evalh.model.trace import RowTrace

__all__ = [
    "NO_USAGE",
    "RETURNED_COMPONENTS",
    "AssertionResult",
    "GradedAssertion",
    "Measurement",
    "PassFail",
    "ProviderResponse",
    "ProviderUsage",
    "RowRating",
    "Status",
    "TestResult",
    "Usage",
    "pass_fail",
    "weighted_mean",
]


# The default of a hand-written __init__'s ``details`` (``metadata``): each instance gets a dict of its
# own, as from the field's default_factory.
_NEW_DICT: Mapping[str, Any] = MappingProxyType({})

# How a frozen result is filled in its hand-written __init__: its whole instance dict given at once
# (a dict literal: no keyword dict built and merged, no object.__setattr__ per field as Python 3.11's
# frozen __init__ does), or each slot set as dataclasses' own does.
_set = object.__setattr__
_new = object.__new__


@dataclass(frozen=True, init=False)
class Usage:
    """Token and request counts; added together with ``+``."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0
    requests: int = 0
    cached: int = 0  # cache hits
    texts: int = 0  # texts embedded
    cost: float = 0.0
    latency_ms: float = 0.0

    def __init__(
        self,
        prompt_tokens: int = 0,
        completion_tokens: int = 0,
        total_tokens: int = 0,
        requests: int = 0,
        cached: int = 0,
        texts: int = 0,
        cost: float = 0.0,
        latency_ms: float = 0.0,
    ) -> None:
        # the instance's dict given at once, as Measurement's: the run adds usages twice per row
        _set(
            self,
            "__dict__",
            {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": total_tokens,
                "requests": requests,
                "cached": cached,
                "texts": texts,
                "cost": cost,
                "latency_ms": latency_ms,
            },
        )

    def __add__(self, other: Usage) -> Usage:
        if other is NO_USAGE:  # most rows add nothing (no tokens, no grader): no new object for them
            return self
        if self is NO_USAGE:
            return other
        total = _new(Usage)  # each provider call adds one: the sum's dict given at once, as __init__ does
        _set(
            total,
            "__dict__",
            {
                "prompt_tokens": self.prompt_tokens + other.prompt_tokens,
                "completion_tokens": self.completion_tokens + other.completion_tokens,
                "total_tokens": self.total_tokens + other.total_tokens,
                "requests": self.requests + other.requests,
                "cached": self.cached + other.cached,
                "texts": self.texts + other.texts,
                "cost": self.cost + other.cost,
                "latency_ms": self.latency_ms + other.latency_ms,
            },
        )
        return total


# The usage of nothing, shared (frozen): the default of a response's and a row's usage.
NO_USAGE = Usage()


@dataclass(frozen=True)
class ProviderUsage:
    """Usage of one provider over a run, for the summary and the JSON report."""

    provider: str
    usage: Usage


@dataclass(frozen=True, init=False)
class ProviderResponse:
    """What a completion provider returned. ``error`` set means the row becomes an ERROR."""

    output: Any = None
    error: str | None = None
    usage: Usage = NO_USAGE
    latency_ms: float | None = None
    cached: bool = False
    cost: float | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)

    def __init__(
        self,
        output: Any = None,
        error: str | None = None,
        usage: Usage = NO_USAGE,
        latency_ms: float | None = None,
        cached: bool = False,
        cost: float | None = None,
        metadata: Mapping[str, Any] = _NEW_DICT,
    ) -> None:
        # the instance's dict given at once, as Measurement's: made (and replaced) for every row
        _set(
            self,
            "__dict__",
            {
                "output": output,
                "error": error,
                "usage": usage,
                "latency_ms": latency_ms,
                "cached": cached,
                "cost": cost,
                "metadata": {} if metadata is _NEW_DICT else metadata,
            },
        )

    def replaced(self, **changes: Any) -> ProviderResponse:
        """``dataclasses.replace(self, **changes)`` without its walk of the fields and its keyword
        call (a run replaces a response or two for every row): a copy of the instance's dict with
        ``changes`` over it (names that are not fields are refused, as by ``replace``)."""
        fields = vars(self)
        if not changes.keys() <= fields.keys():  # a comparison of the key views builds no set
            raise TypeError(f"ProviderResponse has no field {sorted(changes.keys() - fields.keys())[0]!r}")
        copy = object.__new__(type(self))
        _set(copy, "__dict__", {**fields, **changes})
        return copy


@dataclass(frozen=True)
class AssertionResult:
    """A positive-form (non-negated) verdict: what ``runner/scoring.py`` makes of a :class:`Measurement`,
    and what a handler returns only when there is nothing to decide (:meth:`failure`, :meth:`skip`).

    ``error`` means the assertion could not run (bad value, provider failure): the row is an ERROR,
    and negation never turns it into a pass. ``applicable`` false means there was nothing to measure
    (an empty output for ``similar``): it fails both the type and its ``not-`` form. ``skipped``: the
    check does not apply to this row for a reason outside the output (``latency`` of a cached output):
    it neither passes nor fails, and the row is scored on its other assertions.
    """

    passed: bool
    score: float
    reason: str
    error: bool = False
    details: Mapping[str, Any] = field(default_factory=dict)
    usage: Usage | None = None
    children: tuple[GradedAssertion, ...] = ()
    applicable: bool = True
    value: float | None = None  # the measured figure in its own units (a distance), before scoring
    skipped: bool = False

    @classmethod
    def failure(cls, reason: str, **details: Any) -> AssertionResult:
        """An assertion that could not run: an ERROR, never a pass."""
        return cls(passed=False, score=0.0, reason=reason, error=True, details=details)

    @classmethod
    def skip(cls, reason: str, **details: Any) -> AssertionResult:
        """An assertion that does not apply to this row (see ``skipped``): never an error nor a failure."""
        return cls(passed=False, score=0.0, reason=reason, details=details, skipped=True)


@dataclass(frozen=True, init=False)
class Measurement:
    """What an assertion handler returns: the figure it measured (1 or 0 for a pass/fail check), never a
    threshold comparison.

    ``runner/scoring.py`` compares ``value`` with the threshold in the direction the type declares,
    applies ``binary`` and ``not-``, and words the reason: ``"{subject} is {relation} threshold
    {t}{suffix}"`` ("Recall@3 0.3333 is less than threshold 1 (1 of 3 relevant ids found)"), or
    ``plain`` (else ``subject + suffix``) when no threshold is set. ``score`` is the 0-1 score when it
    differs from ``value`` (a distance's 1/(1+d)). ``verdict`` False is a failure the measurement itself
    carries (a grader's ``pass: false``); None leaves the verdict to the threshold, or to ``value > 0``
    without one. ``compared`` False: the threshold does not apply to this outcome (refusal-quality's
    unexpected refusal), the verdict stands. ``applicable`` False: there was nothing to measure (see
    :class:`AssertionResult`). With ``children`` (``assert-set``), the children's verdict, by the rules of
    a test.
    """

    value: float
    subject: str
    suffix: str = ""
    plain: str | None = None
    score: float | None = None
    verdict: bool | None = None
    compared: bool = True
    details: Mapping[str, Any] = field(default_factory=dict)
    usage: Usage | None = None
    applicable: bool = True
    children: tuple[GradedAssertion, ...] = ()  # assert-set: scored like a test's assertions

    def __init__(
        self,
        value: float,
        subject: str,
        suffix: str = "",
        plain: str | None = None,
        score: float | None = None,
        verdict: bool | None = None,
        compared: bool = True,
        details: Mapping[str, Any] = _NEW_DICT,
        usage: Usage | None = None,
        applicable: bool = True,
        children: tuple[GradedAssertion, ...] = (),
    ) -> None:
        # Python 3.11's frozen __init__ sets each field with object.__setattr__; giving the instance its
        # dict at once takes a third of the time, and every assertion of every row makes one (a test
        # checks that this signature stays the fields')
        _set(
            self,
            "__dict__",
            {
                "value": value,
                "subject": subject,
                "suffix": suffix,
                "plain": plain,
                "score": score,
                "verdict": verdict,
                "compared": compared,
                "details": {} if details is _NEW_DICT else details,
                "usage": usage,
                "applicable": applicable,
                "children": children,
            },
        )

    @classmethod
    def pass_fail(cls, passed: bool, reason: str, **details: Any) -> Measurement:
        """A pass/fail check's measurement: 1 or 0 with its reason (scoring passes ``value > 0``)."""
        # made for most assertions of a run: the instance dict given without the keyword call of __init__
        made = object.__new__(cls)
        _set(
            made,
            "__dict__",
            {
                "value": 1.0 if passed else 0.0,
                "subject": reason,
                "suffix": "",
                "plain": reason,
                "score": None,
                "verdict": None,
                "compared": True,
                "details": details,  # the keywords' dict: this measurement's own
                "usage": None,
                "applicable": True,
                "children": (),
            },
        )
        return made

    @classmethod
    def of_pass_fail(cls, verdict: PassFail) -> Measurement:
        """The measurement an output check's :data:`PassFail` verdict stands for."""
        passed, reason, details = verdict
        return cls.pass_fail(passed, reason, **details)

    @classmethod
    def not_applicable(cls, reason: str, **details: Any) -> Measurement:
        return cls(value=0.0, subject=reason, applicable=False, details=details)


# A pass/fail output check's verdict (``registry.output_check``): whether it passed, the reason and the
# details (the verdict's own dict). The scorer makes of it what it makes of ``Measurement.pass_fail(passed,
# reason, **details)`` (runner/scoring.py settle_pass_fail), without the measurement in between: most
# assertions of a run are such checks. :meth:`Measurement.of_pass_fail` is the measurement it stands for.
PassFail = tuple[bool, str, dict[str, Any]]


def pass_fail(passed: bool, reason: str, **details: Any) -> PassFail:
    """An output check's pass/fail verdict (see :data:`PassFail`)."""
    return passed, reason, details


# The details key of a javascript/python assertion's own ``componentResults`` (promptfoo's GradingResult):
# the report lists them after the assertion, as an assert-set's children.
RETURNED_COMPONENTS = "returned_components"


@dataclass(frozen=True, init=False, slots=True)
class GradedAssertion:
    """An assertion with its final verdict: negation, weight 0 and threshold applied by the scorer."""

    spec: AssertionSpec
    passed: bool
    score: float
    reason: str
    error: bool = False
    details: Mapping[str, Any] = field(default_factory=dict)
    usage: Usage | None = None
    children: tuple[GradedAssertion, ...] = ()
    # The measured figure in its type's units, before threshold, negation and binary (a distance, a
    # similarity; None for a pass/fail check): what ``evalh calibrate`` fits thresholds to.
    value: float | None = None
    # Did not apply to this row (AssertionResult.skipped): passed, and left out of the row's score.
    skipped: bool = False

    def __init__(
        self,
        spec: AssertionSpec,
        passed: bool,
        score: float,
        reason: str,
        error: bool = False,
        details: Mapping[str, Any] = _NEW_DICT,
        usage: Usage | None = None,
        children: tuple[GradedAssertion, ...] = (),
        value: float | None = None,
        skipped: bool = False,
    ) -> None:
        # one per assertion of every row, kept to the end of the run: slots rather than a dict per
        # instance hold a row in 2.9 KB rather than 4.4 (a 50,000-test run keeps 300,000 of them)
        _fill_graded(
            self,
            spec,
            passed,
            score,
            reason,
            error,
            {} if details is _NEW_DICT else details,
            usage,
            children,
            value,
            skipped,
        )

    @classmethod
    def ran(
        cls,
        spec: AssertionSpec,
        passed: bool,
        score: float,
        reason: str,
        details: Mapping[str, Any],
        usage: Usage | None,
        children: tuple[GradedAssertion, ...],
        value: float | None,
    ) -> GradedAssertion:
        """``GradedAssertion(spec, passed, score, reason, details=..., ...)`` of an assertion that ran
        (not an error, not skipped), without the keyword call: the scorer makes one for every assertion
        of every row. ``details`` is this assertion's own. Made as a draft, then given its class (see
        ``model.suite._draft_of``): a fifth of setting each slot through its descriptor."""
        made = _GRADED_DRAFT()
        made.spec = spec
        made.passed = passed
        made.score = score
        made.reason = reason
        made.error = False
        made.details = details
        made.usage = usage
        made.children = children
        made.value = value
        made.skipped = False
        made.__class__ = cls
        return cast(GradedAssertion, made)


def _fill_graded(
    graded: GradedAssertion,
    spec: AssertionSpec,
    passed: bool,
    score: float,
    reason: str,
    error: bool,
    details: Mapping[str, Any],
    usage: Usage | None,
    children: tuple[GradedAssertion, ...],
    value: float | None,
    skipped: bool,
) -> None:
    """Every slot of ``graded`` set through its descriptor (a third of ``object.__setattr__``'s cost,
    which looks each name up first)."""
    _G_SPEC(graded, spec)
    _G_PASSED(graded, passed)
    _G_SCORE(graded, score)
    _G_REASON(graded, reason)
    _G_ERROR(graded, error)
    _G_DETAILS(graded, details)
    _G_USAGE(graded, usage)
    _G_CHILDREN(graded, children)
    _G_VALUE(graded, value)
    _G_SKIPPED(graded, skipped)


_GRADED_DRAFT = _draft_of(GradedAssertion)  # see GradedAssertion.ran
_G_SPEC, _G_PASSED, _G_SCORE, _G_REASON, _G_ERROR = _slot_setters(GradedAssertion)[:5]
_G_DETAILS, _G_USAGE, _G_CHILDREN, _G_VALUE, _G_SKIPPED = _slot_setters(GradedAssertion)[5:]


def weighted_mean(graded: Sequence[GradedAssertion]) -> float:
    """Σ(score·weight) / Σweight over graded assertions that applied (skipped ones are left out); 0 when
    every weight is 0 (promptfoo's rule)."""
    # lists rather than generators (once per row); sum() as before: Python 3.12's float sum is compensated
    applied = [g for g in graded if not g.skipped]
    total_weight = sum([g.spec.weight for g in applied])
    if total_weight <= 0:
        return 0.0
    return sum([g.score * g.spec.weight for g in applied]) / total_weight


class Status(enum.Enum):
    PASS = "PASS"
    FAIL = "FAIL"
    ERROR = "ERROR"


@dataclass(frozen=True)
class RowRating:
    """A person's verdict on a row (``evalh runs rate``, the viewer), as promptfoo records a manual
    rating: the row's status and score are the rating's. ``graded``: the row's report fields as it was
    graded (the report codec's ``rated_row`` writes and reads them), so the graded row comes back."""

    passed: bool
    score: float
    comment: str = ""
    reviewer: str = ""
    rated_at: str = ""
    graded: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, init=False, slots=True)
class TestResult:
    """One row: a test × prompt × provider (× repeat)."""

    __test__ = False

    test: TestCase
    prompt: Prompt
    provider: ProviderSpec
    prompt_index: int
    provider_index: int
    rendered_prompt: Any
    status: Status
    score: float
    reason: str
    output: Any = None
    error: str | None = None  # the provider's error text, or the assertion error's reason
    latency_ms: float | None = None
    cached: bool = False
    cost: float | None = None
    usage: Usage = NO_USAGE  # provider usage for the output
    grading_usage: Usage = NO_USAGE  # graders and embedders
    assertions: tuple[GradedAssertion, ...] = ()
    named_scores: Mapping[str, float] = field(default_factory=dict)
    named_score_weights: Mapping[str, float] = field(default_factory=dict)
    repeat_index: int = 0
    id: str = ""
    trace: RowTrace | None = None  # the provider call's spans when the run traces
    rating: RowRating | None = None  # a person's verdict (a row read back from the run store)

    def __init__(
        self,
        test: TestCase,
        prompt: Prompt,
        provider: ProviderSpec,
        prompt_index: int,
        provider_index: int,
        rendered_prompt: Any,
        status: Status,
        score: float,
        reason: str,
        output: Any = None,
        error: str | None = None,
        latency_ms: float | None = None,
        cached: bool = False,
        cost: float | None = None,
        usage: Usage = NO_USAGE,
        grading_usage: Usage = NO_USAGE,
        assertions: tuple[GradedAssertion, ...] = (),
        named_scores: Mapping[str, float] = _NEW_DICT,
        named_score_weights: Mapping[str, float] = _NEW_DICT,
        repeat_index: int = 0,
        id: str = "",
        trace: RowTrace | None = None,
        rating: RowRating | None = None,
    ) -> None:
        # one per row, kept to the end of the run: slots rather than a dict per instance, each set
        # through its descriptor (see _fill_graded), unrolled
        _ROW_SETTERS[0](self, test)
        _ROW_SETTERS[1](self, prompt)
        _ROW_SETTERS[2](self, provider)
        _ROW_SETTERS[3](self, prompt_index)
        _ROW_SETTERS[4](self, provider_index)
        _ROW_SETTERS[5](self, rendered_prompt)
        _ROW_SETTERS[6](self, status)
        _ROW_SETTERS[7](self, score)
        _ROW_SETTERS[8](self, reason)
        _ROW_SETTERS[9](self, output)
        _ROW_SETTERS[10](self, error)
        _ROW_SETTERS[11](self, latency_ms)
        _ROW_SETTERS[12](self, cached)
        _ROW_SETTERS[13](self, cost)
        _ROW_SETTERS[14](self, usage)
        _ROW_SETTERS[15](self, grading_usage)
        _ROW_SETTERS[16](self, assertions)
        _ROW_SETTERS[17](self, {} if named_scores is _NEW_DICT else named_scores)
        _ROW_SETTERS[18](self, {} if named_score_weights is _NEW_DICT else named_score_weights)
        _ROW_SETTERS[19](self, repeat_index)
        _ROW_SETTERS[20](self, id)
        _ROW_SETTERS[21](self, trace)
        _ROW_SETTERS[22](self, rating)

    @classmethod
    def of_run(
        cls,
        test: TestCase,
        prompt: Prompt,
        provider: ProviderSpec,
        prompt_index: int,
        provider_index: int,
        rendered_prompt: Any,
        status: Status,
        score: float,
        reason: str,
        output: Any,
        error: str | None,
        latency_ms: float | None,
        cached: bool,
        cost: float | None,
        usage: Usage,
        grading_usage: Usage,
        assertions: tuple[GradedAssertion, ...],
        named_scores: Mapping[str, float],
        named_score_weights: Mapping[str, float],
        repeat_index: int,
        id: str,
        trace: RowTrace | None,
    ) -> TestResult:
        """``TestResult(...)`` of a row the runner just ran (every field but ``rating``, positional),
        made as a draft and then given its class (see ``model.suite._draft_of``): one per row."""
        row = _ROW_DRAFT()
        row.test = test
        row.prompt = prompt
        row.provider = provider
        row.prompt_index = prompt_index
        row.provider_index = provider_index
        row.rendered_prompt = rendered_prompt
        row.status = status
        row.score = score
        row.reason = reason
        row.output = output
        row.error = error
        row.latency_ms = latency_ms
        row.cached = cached
        row.cost = cost
        row.usage = usage
        row.grading_usage = grading_usage
        row.assertions = assertions
        row.named_scores = named_scores
        row.named_score_weights = named_score_weights
        row.repeat_index = repeat_index
        row.id = id
        row.trace = trace
        row.rating = None
        row.__class__ = cls
        return cast(TestResult, row)

    @property
    def passed(self) -> bool:
        return self.status is Status.PASS

    @property
    def asked_provider(self) -> bool:
        """Whether a provider was asked for the output (else the test recorded it)."""
        return asks_provider(self.test, self.provider)


_ROW_SETTERS = _slot_setters(TestResult)
_ROW_DRAFT = _draft_of(TestResult)  # see TestResult.of_run
