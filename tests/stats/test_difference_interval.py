"""Newcombe's hybrid score interval of a change in pass rate, against statsmodels."""

from __future__ import annotations

import pytest
from statsmodels.stats.proportion import confint_proportions_2indep

from evalh.stats.proportions import difference_interval


@pytest.mark.parametrize(
    ("new_passes", "new_runs", "old_passes", "old_runs"),
    [(2, 20, 19, 20), (14, 20, 14, 20), (0, 5, 5, 5), (5, 5, 0, 5), (7, 10, 30, 50), (1, 1, 0, 3)],
)
def test_matches_statsmodels_newcombe(new_passes: int, new_runs: int, old_passes: int, old_runs: int) -> None:
    expected = confint_proportions_2indep(new_passes, new_runs, old_passes, old_runs, method="newcomb")
    assert difference_interval(new_passes, new_runs, old_passes, old_runs) == pytest.approx(
        tuple(float(x) for x in expected), abs=1e-9
    )


def test_no_runs_on_one_side_allows_every_change() -> None:
    assert difference_interval(3, 4, 0, 0) == (-1.0, 1.0)
