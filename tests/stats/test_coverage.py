"""Seeded simulations (not timed) of the promises the statistics make: Wilson's 95% interval and the
suite's interval cover the true rate 93-97% of the time, and the regression gate (one-sided Fisher per
test, Holm over the tests) false-alarms on unchanged suites at most alpha of the time and finds a real
drop. docs/statistics.md quotes the figures these measure."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from evalh.stats.proportions import wilson_interval
from evalh.stats.repeats import suite_pass_rate_interval
from evalh.stats.significance import fisher_worse, holm

Rates = Callable[[np.random.Generator, int], np.ndarray]


def test_wilson_covers_the_true_rate_95_percent_of_the_time() -> None:
    generator = np.random.default_rng(25)
    coverages = []
    for rate in (0.5, 0.7, 0.9):
        for runs in (10, 20, 50):
            intervals = [wilson_interval(passes, runs) for passes in range(runs + 1)]
            covered = np.array([low <= rate <= high for low, high in intervals])
            coverages.append(covered[generator.binomial(runs, rate, 20_000)].mean())
    assert 0.93 <= np.mean(coverages) <= 0.97
    assert min(coverages) >= 0.90  # one cell: Wilson's coverage oscillates with the discrete counts


# The suite's tests are drawn from a population of tests with these per-test pass rates (the truth is the
# population's mean): the suite interval is about the app, not only the tests that happened to be written.
SCENARIOS: dict[str, tuple[Rates, float]] = {
    "every test at 70%": (lambda g, m: np.full(m, 0.7), 0.7),
    "every test at 95%": (lambda g, m: np.full(m, 0.95), 0.95),
    "rates ~ Beta(2, 1)": (lambda g, m: g.beta(2, 1, m), 2 / 3),
    "rates ~ Beta(5, 1)": (lambda g, m: g.beta(5, 1, m), 5 / 6),
    "rates ~ U(0.3, 1)": (lambda g, m: g.uniform(0.3, 1.0, m), 0.65),
    "solid, broken, flaky": (lambda g, m: g.choice([1.0, 0.0, 0.5, 0.9], m, p=[0.5, 0.1, 0.2, 0.2]), 0.78),
}


def suite_coverage(rates: Rates, truth: float, tests: int, repeats: int, trials: int, seed: int) -> float:
    generator = np.random.default_rng(seed)
    covered = 0
    for _ in range(trials):
        passes = generator.binomial(repeats, rates(generator, tests))
        low, high = suite_pass_rate_interval([(int(p), repeats) for p in passes])
        covered += low <= truth <= high
    return covered / trials


@pytest.mark.parametrize("repeats", [5, 20, 1])
def test_the_suite_interval_covers_the_suite_rate_95_percent_of_the_time(repeats: int) -> None:
    coverages = {
        (name, tests): suite_coverage(rates, truth, tests, repeats, 2000, seed=tests * 100 + repeats)
        for name, (rates, truth) in SCENARIOS.items()
        for tests in (20, 50)
    }
    assert 0.93 <= np.mean(list(coverages.values())) <= 0.97, coverages
    # no scenario far off: the t interval over tests' rates this replaced fell to 89% at "every test at 95%"
    assert all(0.915 <= c <= 0.985 for c in coverages.values()), coverages


def gate_outcomes(old_rates: np.ndarray, new_rates: np.ndarray, trials: int, seed: int) -> np.ndarray:
    """Which tests Holm + one-sided Fisher at alpha 0.05 calls regressed, per trial (20 repeats a side)."""
    runs = 20
    p_value = [[fisher_worse(new, runs, old, runs) for old in range(runs + 1)] for new in range(runs + 1)]
    generator = np.random.default_rng(seed)
    olds = generator.binomial(runs, old_rates, (trials, old_rates.size))
    news = generator.binomial(runs, new_rates, (trials, new_rates.size))
    flagged = np.zeros((trials, old_rates.size), dtype=bool)
    for trial in range(trials):
        p_values = [p_value[new][old] for new, old in zip(news[trial], olds[trial], strict=True)]
        flagged[trial] = holm(p_values, 0.05)[0]
    return flagged


def test_the_regression_gate_false_alarms_at_most_alpha_on_unchanged_tests() -> None:
    # the case: 8 tests of an app that answers right 70% of the time, run twice with --repeat 20
    flagged = gate_outcomes(np.full(8, 0.7), np.full(8, 0.7), 20_000, seed=1)
    false_alarm_rate = flagged.any(axis=1).mean()
    assert false_alarm_rate <= 0.05
    assert false_alarm_rate > 0.005  # the gate is not simply deaf: Fisher's conservatism leaves ~1.7%


def test_the_regression_gate_names_exactly_the_tests_that_dropped() -> None:
    # 4 of the 8 tests drop from 95% to 10%, the other 4 stay at 95%
    old = np.full(8, 0.95)
    new = np.array([0.95, 0.10] * 4)
    flagged = gate_outcomes(old, new, 20_000, seed=2)
    exactly_those = (flagged == (new < old)).all(axis=1).mean()
    assert exactly_those >= 0.99
