"""Judge agreement against independent implementations: scikit-learn's Cohen's kappa, statsmodels'
Fleiss' kappa, and a bootstrap interval that contains the point estimate and is reproducible."""

from __future__ import annotations

import random

import pytest
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.inter_rater import aggregate_raters
from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss

from evalh.stats.agreement import agreement_rate, cohen_kappa, cohen_kappa_interval, fleiss_kappa


def _ratings(seed: int, items: int, raters: int, classes: int, accuracy: float) -> list[list[int]]:
    rng = random.Random(seed)
    rows = []
    for _ in range(items):
        truth = rng.randrange(classes)
        rows.append([truth if rng.random() < accuracy else rng.randrange(classes) for _ in range(raters)])
    return rows


@pytest.mark.parametrize("seed", range(12))
def test_cohen_kappa_matches_sklearn(seed: int) -> None:
    rows = _ratings(seed, items=5 + seed * 7, raters=2, classes=2 + seed % 3, accuracy=0.3 + 0.05 * seed)
    first, second = [r[0] for r in rows], [r[1] for r in rows]
    expected = cohen_kappa_score(first, second)
    if expected != expected:  # sklearn's NaN: one class throughout
        pytest.skip("undefined kappa for this draw")
    assert cohen_kappa(first, second) == pytest.approx(expected, abs=1e-12)


def test_cohen_kappa_on_booleans_matches_sklearn() -> None:
    labels = [True, True, False, True, False, False, True, True, False, True]
    judge = [True, False, False, True, False, True, True, True, False, True]
    assert cohen_kappa(judge, labels) == pytest.approx(cohen_kappa_score(judge, labels), abs=1e-12)


def test_cohen_kappa_where_chance_agreement_is_total() -> None:
    assert cohen_kappa([True, True], [True, True]) == 1.0
    assert cohen_kappa([], []) is None
    with pytest.raises(ValueError, match="same items"):
        cohen_kappa([True], [True, False])


@pytest.mark.parametrize("seed", range(8))
def test_fleiss_kappa_matches_statsmodels(seed: int) -> None:
    rows = _ratings(100 + seed, items=10 + 5 * seed, raters=3 + seed % 3, classes=2 + seed % 2, accuracy=0.6)
    table, _ = aggregate_raters(rows)
    assert fleiss_kappa(rows) == pytest.approx(sm_fleiss(table, method="fleiss"), abs=1e-12)


def test_fleiss_kappa_needs_even_raters() -> None:
    with pytest.raises(ValueError, match="same number"):
        fleiss_kappa([[1, 0], [1]])


def test_kappa_interval_is_seeded_and_holds_the_estimate() -> None:
    rows = _ratings(7, items=60, raters=2, classes=2, accuracy=0.7)
    first, second = [r[0] for r in rows], [r[1] for r in rows]
    interval = cohen_kappa_interval(first, second)
    assert interval is not None
    low, high = interval
    assert low <= cohen_kappa(first, second) <= high  # type: ignore[operator]
    assert cohen_kappa_interval(first, second) == interval
    assert cohen_kappa_interval(first, second, seed=1) != interval


def test_kappa_interval_matches_a_numpy_percentile_bootstrap() -> None:
    import numpy as np

    rows = _ratings(9, items=40, raters=2, classes=2, accuracy=0.6)
    first, second = np.array([r[0] for r in rows]), np.array([r[1] for r in rows])
    picks = np.random.default_rng(5).integers(0, 40, size=(500, 40))
    kappas = np.array([cohen_kappa_score(first[p], second[p]) for p in picks])
    reference = np.percentile(kappas[~np.isnan(kappas)], [2.5, 97.5])
    got = cohen_kappa_interval(list(first), list(second), resamples=500, seed=5)
    assert got == pytest.approx(tuple(reference), abs=1e-12)


def test_agreement_rate() -> None:
    assert agreement_rate([True, True, False]) == pytest.approx(2 / 3)
    assert agreement_rate([0.5, 0.5]) == 1.0
