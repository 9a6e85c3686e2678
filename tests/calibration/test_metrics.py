"""The calibration math against scikit-learn on generated data, and on hand-made cases whose
answer is known."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score
from sklearn.metrics import roc_curve as sk_roc_curve

from evalh.calibration.metrics import (
    bootstrap_auc,
    confusion_at,
    roc_auc,
    roc_curve,
    sweep,
    why_not_calibratable,
)


@pytest.mark.parametrize("seed", range(8))
def test_auc_agrees_with_sklearn_on_generated_data_with_ties(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(20, 300))
    labels = rng.random(n) < 0.5
    # rounded scores: many ties, within and across labels
    scores = np.round(rng.normal(size=n) + labels * rng.uniform(0, 2), int(rng.integers(0, 3)))
    labels[0], labels[1] = True, False
    assert roc_auc(scores, labels) == pytest.approx(roc_auc_score(labels, scores), abs=1e-12)
    # a distance: lower is better, so the AUC is sklearn's on the negated scores
    assert roc_auc(scores, labels, "lower") == pytest.approx(roc_auc_score(labels, -scores), abs=1e-12)


def test_roc_curve_points_agree_with_sklearn() -> None:
    rng = np.random.default_rng(3)
    labels = rng.random(120) < 0.5
    scores = np.round(rng.normal(size=120) + labels, 1)
    fpr, tpr, _ = roc_curve(scores, labels)
    sk_fpr, sk_tpr, _ = sk_roc_curve(labels, scores, drop_intermediate=False)
    assert np.allclose(fpr, sk_fpr) and np.allclose(tpr, sk_tpr)
    assert np.trapezoid(tpr, fpr) == pytest.approx(roc_auc(scores, labels))


def test_bootstrap_interval_is_seeded_and_contains_the_auc() -> None:
    rng = np.random.default_rng(5)
    labels = rng.random(80) < 0.5
    scores = rng.normal(size=80) + labels
    low, high = bootstrap_auc(scores, labels, rounds=300, seed=7)
    assert low < roc_auc(scores, labels) < high
    assert bootstrap_auc(scores, labels, rounds=300, seed=7) == (low, high)
    assert bootstrap_auc(scores, labels, rounds=300, seed=8) != (low, high)


def test_separable_similarities_give_the_gap_threshold() -> None:
    scores = np.array([0.2, 0.3, 0.4, 0.7, 0.8, 0.9])
    labels = np.array([False, False, False, True, True, True])
    result = sweep(scores, labels, precision=1.0)
    assert result.best_accuracy.threshold == 0.7 and result.best_accuracy.accuracy == 1.0
    assert result.best_youden.threshold == 0.7 and result.best_youden.youden_j == 1.0
    assert result.at_precision is not None and result.at_precision.threshold == 0.7
    assert roc_auc(scores, labels) == 1.0


def test_distances_are_lower_is_better() -> None:
    distances = np.array([0.1, 0.2, 0.3, 1.5, 2.0, 2.5])
    labels = np.array([True, True, True, False, False, False])
    result = sweep(distances, labels, "lower", precision=0.95)
    assert result.best_accuracy.threshold == 0.3
    assert (result.best_accuracy.tp, result.best_accuracy.tn) == (3, 3)
    assert roc_auc(distances, labels, "lower") == 1.0
    assert roc_auc(distances, labels, "higher") == 0.0


def test_precision_target_takes_the_most_lenient_threshold_that_reaches_it() -> None:
    # from the top: P P F P P F F; precision at 0.6 is 4/5=0.8, at 0.7 is 3/4, at 0.8 is 2/2
    scores = np.array([0.9, 0.85, 0.8, 0.7, 0.6, 0.5, 0.4])
    labels = np.array([True, True, False, True, True, False, False])
    assert sweep(scores, labels, precision=0.8).at_precision.threshold == 0.6  # type: ignore[union-attr]
    assert sweep(scores, labels, precision=0.9).at_precision.threshold == 0.85  # type: ignore[union-attr]
    assert sweep(scores, labels, precision=1.01).at_precision is None


def test_confusion_at_is_inclusive_like_the_scorer() -> None:
    scores = np.array([0.5, 0.5, 0.4])
    labels = np.array([True, False, False])
    c = confusion_at(scores, labels, 0.5)
    assert (c.tp, c.fp, c.tn, c.fn) == (1, 1, 1, 0)
    d = confusion_at(scores, labels, 0.4, "lower")
    assert (d.tp, d.fp, d.tn, d.fn) == (0, 1, 1, 1)


def test_ties_prefer_the_stricter_threshold() -> None:
    # 0.6 and 0.5 give the same accuracy (one error each): the stricter 0.6 is suggested
    scores = np.array([0.9, 0.6, 0.5, 0.1])
    labels = np.array([True, True, False, True])
    accs = {t: confusion_at(scores, labels, t).accuracy for t in (0.9, 0.6, 0.5, 0.1)}
    best = sweep(scores, labels).best_accuracy
    assert best.accuracy == max(accs.values())
    assert best.threshold == max(t for t, a in accs.items() if a == best.accuracy)


def test_meaningless_inputs_are_named() -> None:
    many = np.linspace(0, 1, 30)
    assert "both labels" in (why_not_calibratable(many, np.ones(30, dtype=bool)) or "")
    assert "same" in (why_not_calibratable(np.full(30, 0.5), np.arange(30) % 2 == 0) or "")
    few = why_not_calibratable(many[:12], np.arange(12) < 4)
    assert few is not None and "4 pass, 8 fail" in few
    assert why_not_calibratable(many, np.arange(30) % 2 == 0) is None
