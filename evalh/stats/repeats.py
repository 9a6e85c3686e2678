"""Repeats as evidence: one test's figures over its repeats, and the suite's pass rate with tests as the unit.

A test (one test x prompt x provider cell) run n times with c passes gets its pass rate with a Wilson 95%
interval, pass^n (every repeat passed), pass@n (at least one did), ``flaky`` (0 < c < n) and its mean
score with a t interval. The suite's pass rate is the mean of its tests' pass rates, each test counting
once, because a test's repeats are not independent evidence about the suite: with one run per test it is a
Wilson interval over the tests; with repeats a t interval over the tests' pass rates (a Wilson interval
over the tests when they all have the same rate, where the t interval would shrink to a point).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from evalh.stats.means import mean_interval
from evalh.stats.proportions import Z95, wilson_interval

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
    if all(runs == 1 for _, runs in counted) or len(set(rates)) == 1:
        return wilson_interval(round(math.fsum(rates)), m) if _whole(rates) else _wilson_of_mean(rates)
    low, high = mean_interval(rates)
    return (max(0.0, low), min(1.0, high))


def _whole(rates: Sequence[float]) -> bool:
    return all(rate in (0.0, 1.0) for rate in rates)


def _wilson_of_mean(rates: Sequence[float]) -> tuple[float, float]:
    """Every test at the same fractional rate: a Wilson interval at that rate over the m tests."""
    m = len(rates)
    p = rates[0]
    z2 = Z95 * Z95
    denominator = 1 + z2 / m
    centre = (p + z2 / (2 * m)) / denominator
    half = Z95 * math.sqrt(p * (1 - p) / m + z2 / (4 * m * m)) / denominator
    return (max(0.0, centre - half), min(1.0, centre + half))
