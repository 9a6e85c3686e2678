"""evalh.stats.proportions against independent implementations: scipy's Wilson interval, and pass@k /
pass^k against enumerating every k-subset of the runs (small n) or scipy's hypergeometric law (large n)."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from evalh.stats.proportions import pass_all_k, pass_any_k, wilson_interval


def scipy_wilson(passes: int, runs: int) -> tuple[float, float]:
    ci = stats.binomtest(passes, runs).proportion_ci(confidence_level=0.95, method="wilson")
    return (ci.low, ci.high)


@st.composite
def counts(draw: st.DrawFn, max_runs: int = 5000) -> tuple[int, int]:
    runs = draw(st.integers(1, max_runs))
    return draw(st.integers(0, runs)), runs


@settings(max_examples=300, deadline=None)
@given(counts())
def test_wilson_matches_scipy(case: tuple[int, int]) -> None:
    passes, runs = case
    assert wilson_interval(passes, runs) == pytest.approx(scipy_wilson(passes, runs), abs=1e-12)


@pytest.mark.parametrize(
    ("passes", "runs"), [(0, 1), (1, 1), (0, 5000), (5000, 5000), (1, 5000), (4999, 5000), (2500, 5000)]
)
def test_wilson_edges_match_scipy_and_stay_in_bounds(passes: int, runs: int) -> None:
    low, high = wilson_interval(passes, runs)
    assert (low, high) == pytest.approx(scipy_wilson(passes, runs), abs=1e-12)
    assert 0.0 <= low <= passes / runs <= high <= 1.0
    assert (low == 0.0) == (passes == 0) and (high == 1.0) == (passes == runs)


def test_wilson_without_runs_is_the_whole_range_and_bad_counts_are_refused() -> None:
    assert wilson_interval(0, 0) == (0.0, 1.0)
    for passes, runs in ((-1, 5), (6, 5)):
        with pytest.raises(ValueError, match="between 0 and runs"):
            wilson_interval(passes, runs)


def enumerate_subsets(runs: int, passes: int, k: int) -> tuple[float, float]:
    """pass@k and pass^k by brute force: the share of k-subsets of the runs with some / only passes."""
    outcomes = [True] * passes + [False] * (runs - passes)
    subsets = list(itertools.combinations(outcomes, k))
    return (sum(any(s) for s in subsets) / len(subsets), sum(all(s) for s in subsets) / len(subsets))


@st.composite
def small_cases(draw: st.DrawFn) -> tuple[int, int, int]:
    runs = draw(st.integers(1, 12))
    return runs, draw(st.integers(0, runs)), draw(st.integers(1, runs))


@settings(max_examples=200, deadline=None)
@given(small_cases())
def test_pass_at_k_and_pass_power_k_match_enumeration(case: tuple[int, int, int]) -> None:
    runs, passes, k = case
    any_k, all_k = enumerate_subsets(runs, passes, k)
    assert pass_any_k(runs, passes, k) == pytest.approx(any_k, abs=1e-12)
    assert pass_all_k(runs, passes, k) == pytest.approx(all_k, abs=1e-12)


@st.composite
def large_cases(draw: st.DrawFn) -> tuple[int, int, int]:
    runs = draw(st.integers(13, 5000))
    return runs, draw(st.integers(0, runs)), draw(st.integers(1, runs))


@settings(max_examples=200, deadline=None)
@given(large_cases())
def test_pass_at_k_and_pass_power_k_match_the_hypergeometric_law(case: tuple[int, int, int]) -> None:
    # k runs drawn without replacement from n with c passes: the number of passes drawn is hypergeometric
    runs, passes, k = case
    drawn = stats.hypergeom(runs, passes, k)
    assert pass_any_k(runs, passes, k) == pytest.approx(drawn.sf(0), abs=1e-9)
    assert pass_all_k(runs, passes, k) == pytest.approx(drawn.pmf(k), abs=1e-9)


def test_pass_k_at_the_ends() -> None:
    # k = n: "some run passed" and "every run passed"; n = 1: the one run's verdict
    assert (pass_any_k(5, 0, 5), pass_any_k(5, 1, 5), pass_all_k(5, 4, 5), pass_all_k(5, 5, 5)) == (
        0.0,
        1.0,
        0.0,
        1.0,
    )
    assert (pass_any_k(1, 1, 1), pass_all_k(1, 0, 1)) == (1.0, 0.0)
    # k = 1: both are the observed pass rate
    assert pass_any_k(5000, 3500, 1) == pytest.approx(0.7) and pass_all_k(5000, 3500, 1) == pytest.approx(0.7)


@pytest.mark.parametrize(("runs", "passes", "k"), [(5, 3, 0), (5, 3, 6), (5, 6, 2), (5, -1, 2), (0, 0, 1)])
def test_pass_k_refuses_impossible_arguments(runs: int, passes: int, k: int) -> None:
    with pytest.raises(ValueError, match="between"):
        pass_any_k(runs, passes, k)
    with pytest.raises(ValueError, match="between"):
        pass_all_k(runs, passes, k)
