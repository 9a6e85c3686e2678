"""evalh.stats.significance against scipy and statsmodels: Fisher's exact test both ways, McNemar's exact
test (scipy's binomial test one-sided, statsmodels' mcnemar two-sided), Holm's rejections and adjusted
p-values (statsmodels' multipletests)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats
from statsmodels.stats.contingency_tables import mcnemar
from statsmodels.stats.multitest import multipletests

from evalh.stats.significance import fisher_better, fisher_worse, holm, mcnemar_two_sided, mcnemar_worse


@st.composite
def two_runs(draw: st.DrawFn, max_runs: int = 5000) -> tuple[int, int, int, int]:
    new_runs = draw(st.integers(1, max_runs))
    old_runs = draw(st.integers(1, max_runs))
    return draw(st.integers(0, new_runs)), new_runs, draw(st.integers(0, old_runs)), old_runs


def scipy_fisher(new_passes: int, new_runs: int, old_passes: int, old_runs: int, alternative: str) -> float:
    table = [[new_passes, new_runs - new_passes], [old_passes, old_runs - old_passes]]
    return float(stats.fisher_exact(table, alternative=alternative).pvalue)


def assert_same_p(ours: float, reference: float) -> None:
    # relative for the small p-values a decision turns on, absolute near 1
    assert ours == pytest.approx(reference, rel=1e-9, abs=1e-12)


@settings(max_examples=150, deadline=None)
@given(two_runs(max_runs=60))
def test_fisher_matches_scipy_for_repeat_counts(case: tuple[int, int, int, int]) -> None:
    assert_same_p(fisher_worse(*case), scipy_fisher(*case, "less"))
    assert_same_p(fisher_better(*case), scipy_fisher(*case, "greater"))


@settings(max_examples=60, deadline=None)
@given(two_runs())
def test_fisher_matches_scipy_up_to_5000_runs(case: tuple[int, int, int, int]) -> None:
    assert_same_p(fisher_worse(*case), scipy_fisher(*case, "less"))
    assert_same_p(fisher_better(*case), scipy_fisher(*case, "greater"))


@pytest.mark.parametrize(
    "case",
    [(0, 1, 0, 1), (1, 1, 0, 1), (0, 1, 1, 1), (0, 20, 20, 20), (20, 20, 0, 20), (0, 5000, 5000, 5000),
     (2500, 5000, 2600, 5000), (3, 3, 3, 3), (0, 0, 2, 4)],
)  # fmt: skip
def test_fisher_edges_match_scipy(case: tuple[int, int, int, int]) -> None:
    assert_same_p(fisher_worse(*case), scipy_fisher(*case, "less"))
    assert_same_p(fisher_better(*case), scipy_fisher(*case, "greater"))


def test_fisher_refuses_impossible_counts() -> None:
    with pytest.raises(ValueError, match="between 0 and runs"):
        fisher_worse(6, 5, 1, 5)
    with pytest.raises(ValueError, match="between 0 and runs"):
        fisher_better(1, 5, -1, 5)


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 2500), st.integers(0, 2500))
def test_mcnemar_matches_scipy_and_statsmodels(pass_to_fail: int, fail_to_pass: int) -> None:
    trials = pass_to_fail + fail_to_pass
    worse = stats.binomtest(pass_to_fail, trials, 0.5, alternative="greater").pvalue if trials else 1.0
    assert_same_p(mcnemar_worse(pass_to_fail, fail_to_pass), worse)
    # the concordant cells do not enter McNemar's test: any counts there give the same p-value
    table = [[7, pass_to_fail], [fail_to_pass, 3]]
    two_sided = float(mcnemar(table, exact=True).pvalue) if trials else 1.0
    assert_same_p(mcnemar_two_sided(pass_to_fail, fail_to_pass), two_sided)
    assert_same_p(mcnemar_two_sided(pass_to_fail, fail_to_pass), stats.binomtest(pass_to_fail, trials).pvalue
                  if trials else 1.0)  # fmt: skip


p_value_lists = st.lists(
    st.one_of(st.floats(0.0, 1.0), st.sampled_from([0.0, 0.01, 0.0125, 0.025, 0.05, 1.0])),
    min_size=0,
    max_size=60,
)


@settings(max_examples=50, deadline=None)  # statsmodels' multipletests costs ~80 ms a call
@given(p_value_lists, st.sampled_from([0.01, 0.05, 0.1, 0.2]))
def test_holm_matches_statsmodels(p_values: list[float], alpha: float) -> None:
    rejected, adjusted = holm(p_values, alpha)
    if not p_values:
        assert (rejected, adjusted) == ([], [])
        return
    reference_rejected, reference_adjusted, _, _ = multipletests(np.array(p_values), alpha, method="holm")
    assert rejected == [bool(r) for r in reference_rejected]
    assert adjusted == pytest.approx([float(a) for a in reference_adjusted], rel=1e-12, abs=1e-15)


def test_holm_steps_down_and_stops_at_the_first_acceptance() -> None:
    # thresholds alpha/4, alpha/3, alpha/2, alpha: 0.04 > 0.05/2 stops the walk, so 0.045 <= 0.05 is kept
    rejected, adjusted = holm([0.045, 0.01, 0.04, 0.012], 0.05)
    reference_rejected, reference_adjusted, _, _ = multipletests([0.045, 0.01, 0.04, 0.012], 0.05, "holm")
    assert rejected == [False, True, False, True] == list(reference_rejected)
    assert adjusted == pytest.approx(list(reference_adjusted))
