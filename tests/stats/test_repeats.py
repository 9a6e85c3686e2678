"""evalh.stats.repeats against references: a test's figures (scipy's Wilson interval and t interval, the
definitions of pass^n, pass@n, flaky and the verdict at a required rate), grouping by key, and the suite's
interval (scipy's Wilson over tests with one run each; statsmodels' Wilson over the effective number of
tests, at the t quantile, with repeats)."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats
from statsmodels.stats.proportion import proportion_confint

from evalh.stats.repeats import repeat_stats, repeat_stats_by_key, suite_pass_rate_interval


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.floats(0.0, 1.0)), min_size=1, max_size=200))
def test_a_test_s_figures_match_scipy_and_the_definitions(draws: list[tuple[bool, float]]) -> None:
    verdicts = [passed for passed, _ in draws]
    scores = [score for _, score in draws]
    figures = repeat_stats(verdicts, scores)
    runs, passes = len(draws), sum(verdicts)
    assert (figures.runs, figures.passes, figures.pass_rate) == (runs, passes, passes / runs)
    ci = stats.binomtest(passes, runs).proportion_ci(method="wilson")
    assert figures.pass_rate_interval == pytest.approx((ci.low, ci.high), abs=1e-12)
    assert figures.mean_score == pytest.approx(np.mean(scores))
    sem = stats.sem(scores) if runs > 1 else 0.0
    if sem > 0:
        reference = stats.t.interval(0.95, runs - 1, loc=np.mean(scores), scale=sem)
        assert figures.mean_score_interval == pytest.approx(reference, rel=1e-9, abs=1e-12)
    else:
        assert figures.mean_score_interval == pytest.approx((np.mean(scores), np.mean(scores)))
    assert figures.pass_all == all(verdicts) and figures.pass_any == any(verdicts)
    assert figures.flaky == (any(verdicts) and not all(verdicts))


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 5000).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n))), st.integers(0, 100))
def test_the_verdict_at_a_required_rate_is_the_exact_comparison(case: tuple[int, int], percent: int) -> None:
    passes, runs = case
    figures = repeat_stats([True] * passes + [False] * (runs - passes), [1.0] * runs)
    assert figures.passed_at(percent / 100) == (Fraction(passes, runs) >= Fraction(percent, 100))


def test_unscored_repeats_are_left_out_of_the_mean_score() -> None:
    figures = repeat_stats([True, False, True], [1.0, math.nan, 0.5])
    assert figures.mean_score == 0.75
    assert figures.mean_score_interval == pytest.approx(
        stats.t.interval(0.95, 1, loc=0.75, scale=stats.sem([1.0, 0.5]))
    )
    assert all(math.isnan(v) for v in (repeat_stats([True], [math.nan]).mean_score_interval))


def test_grouping_by_key_is_each_key_s_own_figures_in_first_seen_order() -> None:
    generator = np.random.default_rng(3)
    rows = [
        (int(k), bool(generator.random() < 0.7), float(generator.random()))
        for k in generator.integers(0, 9, 400)
    ]
    grouped = repeat_stats_by_key(rows)
    assert list(grouped) == list(dict.fromkeys(key for key, _, _ in rows))
    for key, figures in grouped.items():
        own = [(passed, score) for k, passed, score in rows if k == key]
        assert figures == repeat_stats([p for p, _ in own], [s for _, s in own])
    assert repeat_stats_by_key([]) == {}


@settings(max_examples=200, deadline=None)
@given(st.lists(st.booleans(), min_size=1, max_size=500))
def test_the_suite_with_one_run_per_test_is_scipy_s_wilson_over_tests(verdicts: list[bool]) -> None:
    ci = stats.binomtest(sum(verdicts), len(verdicts)).proportion_ci(method="wilson")
    interval = suite_pass_rate_interval([(int(v), 1) for v in verdicts])
    assert interval == pytest.approx((ci.low, ci.high), abs=1e-12)


@st.composite
def suites(draw: st.DrawFn) -> list[tuple[int, int]]:
    tests = draw(st.integers(2, 80))
    runs = draw(st.lists(st.integers(2, 30), min_size=tests, max_size=tests))
    return [(draw(st.integers(0, n)), n) for n in runs]


@settings(max_examples=200, deadline=None)
@given(suites())
def test_the_suite_with_repeats_is_statsmodels_wilson_over_the_effective_tests(
    tests: list[tuple[int, int]],
) -> None:
    rates = np.array([passes / runs for passes, runs in tests])
    m, mean, spread = rates.size, rates.mean(), rates.var(ddof=1)
    interval = suite_pass_rate_interval(tests)
    if spread == 0:  # one rate for all: each test counts once
        ci = stats.binomtest(round(mean * m), m).proportion_ci(method="wilson") if mean in (0, 1) else None
        expected = (ci.low, ci.high) if ci else proportion_confint(mean * m, m, method="wilson")
        assert interval == pytest.approx(expected, abs=1e-12)
        return
    effective = min(sum(runs for _, runs in tests), mean * (1 - mean) * m / spread)
    # Wilson at the t quantile on m - 1 df: statsmodels' Wilson at the alpha whose z is that quantile
    alpha = 2 * stats.norm.sf(stats.t.ppf(0.975, m - 1))
    low, high = proportion_confint(mean * effective, effective, alpha=alpha, method="wilson")
    assert interval == pytest.approx((max(0.0, low), min(1.0, high)), rel=1e-7, abs=1e-9)
    assert 0 <= interval[0] <= mean <= interval[1] <= 1


def test_the_suite_interval_ignores_tests_without_runs_and_knows_nothing_without_any() -> None:
    assert suite_pass_rate_interval([]) == (0.0, 1.0) == suite_pass_rate_interval([(0, 0)])
    assert suite_pass_rate_interval([(3, 5), (0, 0), (5, 5)]) == suite_pass_rate_interval([(3, 5), (5, 5)])
