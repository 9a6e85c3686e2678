"""The data evalh passes between its layers: frozen dataclasses, no behaviour beyond small derivations.

A leaf module: it imports nothing of evalh, so every other module may import it.

Flow: ``config`` builds a :class:`Suite` (prompts, providers, tests with their merged, rendered
assertions); ``runner`` turns it into :class:`TestResult` rows holding :class:`GradedAssertion` trees;
``reports`` read a :class:`RunResult`.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "MAX_CONCURRENCY",
    "MAX_REPEAT",
    "Aggregates",
    "AssertionResult",
    "AssertionSpec",
    "Column",
    "EvaluateOptions",
    "GradedAssertion",
    "Measurement",
    "NamedTotal",
    "Prompt",
    "ProviderChoice",
    "ProviderResponse",
    "ProviderSpec",
    "ProviderUsage",
    "RowFigures",
    "RunResult",
    "ScoreStats",
    "Status",
    "Suite",
    "TestCase",
    "TestResult",
    "TypeFigures",
    "Usage",
    "weighted_mean",
]


@dataclass(frozen=True)
class ProviderSpec:
    """One provider as the config names it: ``openai:chat:gpt-4o-mini`` or ``{id, label, config}``."""

    id: str
    label: str | None = None
    config: Mapping[str, Any] = field(default_factory=dict)
    path: str = ""  # JSON path in the config, for messages: "providers[1]"
    base_dir: str = ""  # the config file's directory: script paths resolve against it

    @property
    def display(self) -> str:
        return self.label or self.id


@dataclass(frozen=True)
class ProviderChoice:
    """A provider override (assertion ``provider`` or ``options.provider``).

    Either one provider for every purpose (``default``), or promptfoo's typed map
    ``{embedding: ..., text: ...}``: ``similar`` takes ``embedding``, judges take ``text``. Embedding
    assertions may name several ``models`` instead (``provider: [a, b]`` or ``config.providers``):
    each scores, and the mean is reported.
    """

    default: ProviderSpec | None = None
    embedding: ProviderSpec | None = None
    text: ProviderSpec | None = None
    models: tuple[ProviderSpec, ...] = ()  # several embedders that each score: ``provider: [a, b]``

    def for_kind(self, kind: str) -> ProviderSpec | None:
        """The provider this choice names for ``kind`` ("embedding", "tokens" or "text"), or None.

        Token vectors (BERTScore) come from the embedding slot of a typed map."""
        typed = self.embedding if kind in ("embedding", "tokens") else self.text
        return typed or self.default


@dataclass(frozen=True)
class Prompt:
    """A prompt template: a string, or a chat message list (``[{role, content}]``); or, with
    ``function`` (``file://x.py:fn``, ``file://x.js``), code that returns the prompt for each row."""

    raw: str | tuple[Mapping[str, Any], ...]
    label: str
    id: str = ""
    path: str = ""
    function: str = ""


@dataclass(frozen=True)
class AssertionSpec:
    """One assertion of one test, after the defaultTest merge and template rendering of its value.

    ``type`` is the base type (``similar:cosine``), ``negate`` is true for ``not-`` types.
    ``threshold`` is what the config says (None when unset); the registry supplies defaults.
    """

    type: str
    negate: bool = False
    value: Any = None
    threshold: float | None = None
    weight: float = 1.0
    metric: str | None = None
    provider: ProviderChoice | None = None
    config: Mapping[str, Any] = field(default_factory=dict)
    children: tuple[AssertionSpec, ...] = ()  # assert-set members
    rubric_prompt: Any = None
    raw: Mapping[str, Any] = field(default_factory=dict)  # the assertion as written, for reports
    path: str = ""  # "tests[3].assert[1]"

    @property
    def full_type(self) -> str:
        return f"not-{self.type}" if self.negate else self.type


@dataclass(frozen=True)
class TestCase:
    """One test after the defaultTest merge. ``output`` is a recorded output, graded without a provider."""

    __test__ = False  # not a pytest class

    index: int
    description: str | None = None
    vars: Mapping[str, Any] = field(default_factory=dict)
    asserts: tuple[AssertionSpec, ...] = ()
    threshold: float | None = None
    options: Mapping[str, Any] = field(default_factory=dict)
    provider: ProviderChoice | None = None  # options.provider (grader / embedder override)
    metadata: Mapping[str, Any] = field(default_factory=dict)
    output: Any = None
    has_output: bool = False
    path: str = ""


# Upper bounds of --repeat / evaluateOptions.repeat and -j / maxConcurrency (the schema says the same):
# beyond them a run is a typo, not a plan, and would exhaust memory or sockets before any call.
MAX_REPEAT = 10_000
MAX_CONCURRENCY = 1_000


@dataclass(frozen=True)
class EvaluateOptions:
    max_concurrency: int = 4
    repeat: int = 1
    cache: bool = True
    timeout_ms: int = 0
    strict: bool = False  # template and config warnings are errors (--strict)
    delay_ms: int = 0  # wait after each provider call not served from the cache (--delay)


@dataclass(frozen=True)
class Suite:
    """A validated, fully resolved config."""

    tests: tuple[TestCase, ...]
    prompts: tuple[Prompt, ...] = ()
    providers: tuple[ProviderSpec, ...] = ()
    description: str | None = None
    default_provider: ProviderChoice | None = None  # --grader, or the suite-wide default
    evaluate_options: EvaluateOptions = field(default_factory=EvaluateOptions)
    output_paths: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    metadata: Mapping[str, Any] = field(default_factory=dict)
    config_path: str | None = None
    raw_config: Mapping[str, Any] = field(default_factory=dict)  # secrets redacted
    input_files: tuple[str, ...] = ()  # every file the load read, config first: no report may overwrite one
    nunjucks_filters: Mapping[str, str] = field(default_factory=dict)  # name -> file:// reference


@dataclass(frozen=True)
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

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
            total_tokens=self.total_tokens + other.total_tokens,
            requests=self.requests + other.requests,
            cached=self.cached + other.cached,
            texts=self.texts + other.texts,
            cost=self.cost + other.cost,
            latency_ms=self.latency_ms + other.latency_ms,
        )


@dataclass(frozen=True)
class ProviderUsage:
    """Usage of one provider over a run, for the summary and the JSON report."""

    provider: str
    usage: Usage


@dataclass(frozen=True)
class ProviderResponse:
    """What a completion provider returned. ``error`` set means the row becomes an ERROR."""

    output: Any = None
    error: str | None = None
    usage: Usage = field(default_factory=Usage)
    latency_ms: float | None = None
    cached: bool = False
    cost: float | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class AssertionResult:
    """A positive-form (non-negated) verdict: what a check with no threshold returns (``contains``),
    and what ``runner/scoring.py`` makes of a :class:`Measurement`.

    ``error`` means the assertion could not run (bad value, provider failure): the row is an ERROR,
    and negation never turns it into a pass. ``applicable`` false means there was nothing to measure
    (an empty output for ``similar``): it fails both the type and its ``not-`` form.
    """

    passed: bool
    score: float
    reason: str
    error: bool = False
    details: Mapping[str, Any] = field(default_factory=dict)
    usage: Usage | None = None
    children: tuple[GradedAssertion, ...] = ()
    applicable: bool = True

    @classmethod
    def failure(cls, reason: str, **details: Any) -> AssertionResult:
        """An assertion that could not run: an ERROR, never a pass."""
        return cls(passed=False, score=0.0, reason=reason, error=True, details=details)


@dataclass(frozen=True)
class Measurement:
    """What an assertion with a threshold returns: the figure it measured, never a verdict.

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

    @classmethod
    def pass_fail(cls, passed: bool, reason: str, **details: Any) -> Measurement:
        """A pass/fail check's measurement: 1 or 0 with its reason (scoring passes ``value > 0``)."""
        return cls(value=1.0 if passed else 0.0, subject=reason, plain=reason, details=details)

    @classmethod
    def not_applicable(cls, reason: str, **details: Any) -> Measurement:
        return cls(value=0.0, subject=reason, applicable=False, details=details)


@dataclass(frozen=True)
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


def weighted_mean(graded: Sequence[GradedAssertion]) -> float:
    """Σ(score·weight) / Σweight over graded assertions; 0 when every weight is 0 (promptfoo's rule)."""
    total_weight = sum(g.spec.weight for g in graded)
    if total_weight <= 0:
        return 0.0
    return sum(g.score * g.spec.weight for g in graded) / total_weight


class Status(enum.Enum):
    PASS = "PASS"
    FAIL = "FAIL"
    ERROR = "ERROR"


@dataclass(frozen=True)
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
    usage: Usage = field(default_factory=Usage)  # provider usage for the output
    grading_usage: Usage = field(default_factory=Usage)  # graders and embedders
    assertions: tuple[GradedAssertion, ...] = ()
    named_scores: Mapping[str, float] = field(default_factory=dict)
    named_score_weights: Mapping[str, float] = field(default_factory=dict)
    repeat_index: int = 0
    id: str = ""

    @property
    def passed(self) -> bool:
        return self.status is Status.PASS


@dataclass(frozen=True)
class RowFigures:
    """Pass counts and mean score of some rows: the whole run, or one column."""

    rows: int = 0
    passed: int = 0
    failed: int = 0
    errors: int = 0
    pass_rate: float = 100.0  # % of rows that passed; ERROR rows count against; 100 with no rows
    mean_score: float | None = None  # over the rows that are not ERROR; None if there are none


@dataclass(frozen=True)
class ScoreStats:
    """One named score (``metric``) over the non-ERROR rows that carry it."""

    mean: float
    min: float
    max: float
    count: int


@dataclass(frozen=True)
class TypeFigures:
    """One assertion type (``not-x`` apart from ``x``) over every graded assertion, set children too."""

    count: int
    passed: int
    errors: int
    pass_rate: float  # % of these assertions that passed (errors count against)
    mean_score: float | None  # over the ones that ran; None if none ran


@dataclass(frozen=True)
class NamedTotal:
    """A named score summed over a column's rows (promptfoo's per-prompt metrics)."""

    total: float = 0.0
    count: int = 0
    weight: float = 0.0

    @property
    def mean(self) -> float | None:
        return self.total / self.count if self.count else None


@dataclass(frozen=True)
class Column:
    """One provider x prompt column of a run (promptfoo's ``CompletedPrompt``): its rows and figures."""

    prompt: Prompt
    provider: ProviderSpec
    prompt_index: int
    provider_index: int
    rows: tuple[TestResult, ...] = ()
    figures: RowFigures = field(default_factory=RowFigures)
    named_scores: Mapping[str, ScoreStats] = field(default_factory=dict)  # as the run's, per column
    named_totals: Mapping[str, NamedTotal] = field(default_factory=dict)  # every row, promptfoo's sums
    assertions_passed: int = 0  # every graded assertion, assert-set children included
    assertions_failed: int = 0
    score_total: float = 0.0
    latency_ms: float = 0.0
    cost: float = 0.0
    usage: Usage = field(default_factory=Usage)
    classification: Mapping[str, Any] | None = None  # when the suite has labelled tests

    @property
    def key(self) -> tuple[int, int]:
        return (self.provider_index, self.prompt_index)

    @property
    def name(self) -> str:
        """``[provider] prompt-label``, the header promptfoo's table and CSV use."""
        return f"[{self.provider.display}] {self.prompt.label}"


@dataclass(frozen=True)
class Aggregates:
    """The run's figures, computed once by ``runner/aggregates.py``; reports only format them."""

    figures: RowFigures = field(default_factory=RowFigures)
    named_scores: Mapping[str, ScoreStats] = field(default_factory=dict)
    assertion_types: Mapping[str, TypeFigures] = field(default_factory=dict)
    columns: tuple[Column, ...] = ()  # by provider, then prompt
    labelled: bool = False  # some test has metadata.label: columns carry a classification


@dataclass(frozen=True)
class RunResult:
    """Everything a report needs."""

    suite: Suite
    results: tuple[TestResult, ...]
    started_at: str  # ISO 8601
    duration_ms: float
    provider_usage: tuple[ProviderUsage, ...] = ()
    interrupted: bool = False
    interrupted_by: str | None = None  # the signal that stopped the run: "SIGINT", "SIGTERM", "SIGHUP"
    not_run: int = 0  # rows the run planned but did not finish (interrupted)
    aggregates: Aggregates = field(default_factory=Aggregates)

    def count(self, status: Status) -> int:
        return sum(1 for r in self.results if r.status is status)

    @property
    def pass_rate(self) -> float:
        """Percentage of rows that passed; errors count against it. 100.0 for an empty run."""
        if not self.results:
            return 100.0
        return 100.0 * self.count(Status.PASS) / len(self.results)
