"""A finished run: :class:`RunRecord` with the figures ``runner/aggregates.py`` computes once
(:class:`Aggregates`, per :class:`Column`) and reports only format. Frozen dataclasses; imports nothing
of evalh outside this package."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from evalh.model.caching import CacheMode, CacheShare
from evalh.model.repeats import RepeatSummary
from evalh.model.results import ProviderUsage, Status, TestResult, Usage
from evalh.model.suite import Prompt, ProviderSpec, Suite
from evalh.model.verdict import pass_rate

__all__ = [
    "Aggregates",
    "Column",
    "NamedTotal",
    "RowFigures",
    "RunRecord",
    "ScoreStats",
    "TypeFigures",
]


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
    """A named score summed over a column's rows (promptfoo's per-prompt metrics): ``total`` is the sum of
    score x weight, ``count`` the assertions carrying the name, ``weight`` their summed weight."""

    total: float = 0.0
    count: int = 0
    weight: float = 0.0


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
    derived: Mapping[str, float | None] = field(default_factory=dict)  # derivedMetrics, in order

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
    # the suite's pass rate (a fraction) with a 95% interval that counts each test once (docs/statistics.md)
    pass_rate_interval: tuple[float, float] = (0.0, 1.0)
    repeats: RepeatSummary | None = None  # each test over its repeats; only when the run repeats (N > 1)


@dataclass(frozen=True, repr=False)  # the generated repr printed every row and the whole suite
class RunRecord:
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
    cache_mode: CacheMode | None = None  # None: not known (a run merged from reports)

    def count(self, status: Status) -> int:
        return sum(1 for r in self.results if r.status is status)

    def __repr__(self) -> str:
        return f"RunRecord({self.summary()})"

    def summary(self) -> str:
        """The run in a line: its rows by status, pass rate, and whether it was stopped early."""
        counts = ", ".join(f"{status.name.lower()}={self.count(status)}" for status in Status)
        stopped = f", interrupted by {self.interrupted_by or 'a stop'}" if self.interrupted else ""
        return f"rows={len(self.results)}, {counts}, pass_rate={self.pass_rate:.1f}%{stopped}"

    @property
    def pass_rate(self) -> float:
        """Percentage of rows that passed; errors count against it. 100.0 for an empty run."""
        return pass_rate(self.count(Status.PASS), len(self.results))

    @property
    def cache_share(self) -> CacheShare:
        """How many of the outputs providers were asked for came from the cache."""
        return CacheShare.of_rows(self.results, self.cache_mode)
