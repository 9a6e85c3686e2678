"""evalh.stats.resampling against scipy.stats.bootstrap(method="percentile"): the same data, a different
random generator, so the intervals agree within the Monte Carlo error of 10,000 resamples, and ours is the
same on every call with the same seed."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from evalh.stats.resampling import DEFAULT_SEED, cluster_interval, paired_interval


def scipy_percentile(values: list[float]) -> tuple[float, float]:
    result = stats.bootstrap(
        (np.asarray(values),), np.mean, method="percentile", n_resamples=10_000, random_state=7
    )
    return (float(result.confidence_interval.low), float(result.confidence_interval.high))


def assert_close_to_scipy(ours: tuple[float, float], values: list[float]) -> None:
    # the percentile ends wander by a few hundredths of a standard error between generators; and with few
    # distinct values the resampled means sit on a lattice (steps of the widest gap between neighbouring
    # values over n), where two generators' percentile ends may land one step apart
    reference = scipy_percentile(values)
    standard_error = float(np.std(values) / np.sqrt(len(values)))
    distinct = np.unique(values)
    lattice_step = float(np.max(np.diff(distinct))) / len(values) if distinct.size > 1 else 0.0
    tolerance = 0.15 * standard_error + lattice_step + 1e-12
    assert ours[0] == pytest.approx(reference[0], abs=tolerance)
    assert ours[1] == pytest.approx(reference[1], abs=tolerance)


@settings(max_examples=40, deadline=None, derandomize=True)  # the same examples on every run
@given(st.lists(st.floats(-1.0, 1.0), min_size=8, max_size=300).filter(lambda v: len(set(v)) > 2))
def test_paired_interval_is_close_to_scipy_s_percentile_bootstrap(differences: list[float]) -> None:
    assert_close_to_scipy(paired_interval(differences), differences)


@pytest.mark.parametrize("tests", [20, 50, 5000])
def test_cluster_interval_of_pass_rates_is_close_to_scipy_s(tests: int) -> None:
    generator = np.random.default_rng(tests)
    rates = list(generator.binomial(10, generator.beta(2, 1, tests)) / 10)
    assert_close_to_scipy(cluster_interval(rates), rates)


def test_the_seed_fixes_the_interval() -> None:
    values = [0.1, -0.2, 0.4, 0.0, 0.3, -0.1, 0.2, 0.5]
    assert paired_interval(values) == paired_interval(values) == cluster_interval(values, seed=DEFAULT_SEED)
    assert paired_interval(values, seed=1) != paired_interval(values, seed=2)


def test_one_value_is_a_point_and_none_is_refused() -> None:
    assert cluster_interval([0.5]) == (0.5, 0.5)
    with pytest.raises(ValueError, match="no values"):
        paired_interval([])
