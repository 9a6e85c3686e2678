"""evalh.stats.means against scipy: the t quantile (scipy.stats.t.ppf) and the t interval of a mean
(scipy.stats.t.interval with the standard error of the mean)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from evalh.stats.means import mean_interval, t_quantile


@settings(max_examples=300, deadline=None)
@given(st.floats(0.0005, 0.9995), st.integers(1, 5000))
def test_t_quantile_matches_scipy(probability: float, df: int) -> None:
    assert t_quantile(probability, df) == pytest.approx(stats.t.ppf(probability, df), rel=1e-9, abs=1e-9)


@pytest.mark.parametrize("df", [1, 2, 3, 4, 9, 19, 49, 4999])
def test_the_95_percent_quantiles_match_scipy(df: int) -> None:
    assert t_quantile(0.975, df) == pytest.approx(stats.t.ppf(0.975, df), rel=1e-10)
    assert t_quantile(0.025, df) == pytest.approx(stats.t.ppf(0.025, df), rel=1e-10)


@pytest.mark.parametrize(("probability", "df"), [(0.0, 5), (1.0, 5), (0.5, 0), (-0.1, 3)])
def test_t_quantile_refuses_impossible_arguments(probability: float, df: int) -> None:
    with pytest.raises(ValueError, match="need 0 < probability < 1"):
        t_quantile(probability, df)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.floats(-1e3, 1e3, allow_nan=False), min_size=2, max_size=5000),
    st.sampled_from([0.8, 0.9, 0.95, 0.99]),
)
def test_mean_interval_matches_scipy(values: list[float], confidence: float) -> None:
    data = np.asarray(values)
    sem = float(stats.sem(data))
    ours = mean_interval(values, confidence)
    if sem == 0:  # every value the same: scipy answers nan, the interval is the point
        assert ours == pytest.approx((data.mean(), data.mean()))
        return
    reference = stats.t.interval(confidence, data.size - 1, loc=data.mean(), scale=sem)
    assert ours == pytest.approx(reference, rel=1e-9, abs=1e-9)


def test_mean_interval_of_one_value_is_that_value_and_of_none_is_refused() -> None:
    assert mean_interval([0.25]) == (0.25, 0.25)
    with pytest.raises(ValueError, match="no values"):
        mean_interval([])


def test_mean_interval_of_scores_is_scipy_s() -> None:
    scores = [0.9, 0.7, 1.0, 0.4, 0.8]
    reference = stats.t.interval(0.95, 4, loc=np.mean(scores), scale=stats.sem(scores))
    assert mean_interval(scores) == pytest.approx(reference, rel=1e-12)
    assert not math.isclose(*mean_interval(scores))
