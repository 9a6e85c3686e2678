"""Repeats as evidence: one test's figures over its repeats, and the suite's pass rate with tests as the unit.

A test (one test x prompt x provider cell) run n times with c passes gets its pass rate with a Wilson 95%
interval, pass^n (every repeat passed), pass@n (at least one did), ``flaky`` (0 < c < n) and its mean
score with a t interval. The suite's pass rate is the mean of its tests' pass rates, each test counting
once, because a test's repeats are not independent evidence about the suite. With one run per test it is
a Wilson interval over the tests. With repeats it is a Wilson interval over the effective number of tests
(Kish's design effect; Korn & Graubard 1998 for the t quantile on m - 1 degrees of freedom): the spread of
the tests' pass rates says how many independent pass/fail draws their mean is worth, somewhere between
m - 1 (tests that always pass or always fail) and all the runs (every test at the same rate). A plain t
interval over the tests' rates, the first method, covered the suite rate as little as 88% of the time when
most tests pass (seeded simulation in tests/stats/test_coverage.py; docs/statistics.md has the figures);
Wilson's interval stays asymmetric near 100%, where suites live.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from evalh.stats.means import mean_interval, t_quantile
from evalh.stats.proportions import wilson_bounds, wilson_interval

K = TypeVar("K", bound=Hashable)

__all__ = ["RepeatStats", "repeat_stats", "repeat_stats_by_key", "suite_pass_rate_interval"]


@dataclass(frozen=True, slots=True)
class RepeatStats:
    """One test's repeats: ``runs`` draws, ``passes`` of them passed."""

    runs: int
    passes: int
    pass_rate: float
    pass_rate_interval: tuple[float, float]
    mean_score: float
    mean_score_interval: tuple[float, float]

    @property
    def pass_all(self) -> bool:
        """pass^n: every repeat passed."""
        return self.passes == self.runs

    @property
    def pass_any(self) -> bool:
        """pass@n: at least one repeat passed."""
        return self.passes > 0

    @property
    def flaky(self) -> bool:
        """Some repeats passed and some did not."""
        return 0 < self.passes < self.runs

    def passed_at(self, required_rate: float) -> bool:
        """The verdict over its repeats: its pass rate reaches ``required_rate`` (1.0: every repeat)."""
        return self.runs > 0 and self.passes >= math.ceil(required_rate * self.runs - 1e-9)


def repeat_stats(passed: Sequence[bool], scores: Sequence[float]) -> RepeatStats:
    """The figures of one test from its repeats' verdicts and scores (in the same order)."""
    runs = len(passed)
    passes = sum(1 for p in passed if p)
    finite = [s for s in scores if math.isfinite(s)]
    mean = math.fsum(finite) / len(finite) if finite else math.nan
    score_interval = mean_interval(finite) if finite else (math.nan, math.nan)
    return RepeatStats(
        runs=runs,
        passes=passes,
        pass_rate=passes / runs if runs else math.nan,
        pass_rate_interval=wilson_interval(passes, runs),
        mean_score=mean,
        mean_score_interval=score_interval,
    )


def repeat_stats_by_key(rows: Iterable[tuple[K, bool, float]]) -> dict[K, RepeatStats]:
    """Each key's figures from ``(key, passed, score)`` rows, in the order keys first appear: O(rows)."""
    verdicts: dict[K, list[bool]] = {}
    scores: dict[K, list[float]] = {}
    for key, passed, score in rows:
        verdicts.setdefault(key, []).append(passed)
        scores.setdefault(key, []).append(score)
    return {key: repeat_stats(verdicts[key], scores[key]) for key in verdicts}


def suite_pass_rate_interval(tests: Sequence[tuple[int, int]]) -> tuple[float, float]:
    """A 95% interval of the suite's pass rate from each test's ``(passes, runs)``, tests as the unit."""
    counted = [(passes, runs) for passes, runs in tests if runs > 0]
    if not counted:
        return (0.0, 1.0)
    m = len(counted)
    rates = [passes / runs for passes, runs in counted]
    if all(runs == 1 for _, runs in counted):
        return wilson_interval(sum(passes for passes, _ in counted), m)
    mean = math.fsum(rates) / m
    spread = math.fsum((rate - mean) ** 2 for rate in rates) / (m - 1) if m > 1 else 0.0
    if spread == 0:  # every test at one rate: nothing says how they vary, count each test once
        return wilson_interval(round(mean * m), m) if mean in (0.0, 1.0) else wilson_bounds(mean, m)
    total_runs = sum(runs for _, runs in counted)
    effective_tests = min(total_runs, mean * (1 - mean) / (spread / m))
    return wilson_bounds(mean, effective_tests, t_quantile(0.5 + 0.95 / 2, m - 1))
