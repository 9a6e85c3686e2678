"""Do judges agree? Cohen's kappa (one judge against the labels, or two judges), its seeded bootstrap
interval over items, and Fleiss' kappa (several judges rating the same items).

Cohen (1960): kappa = (p_o - p_e) / (1 - p_e), p_o the share of items both raters put in the same class,
p_e the share expected by chance from each rater's own class frequencies. 1 is perfect agreement, 0 what
chance gives, below 0 worse than chance. When both raters use one and the same class throughout,
p_e = 1 and kappa is undefined: it is reported as 1.0 when they agree on every item (as scikit-learn's
``cohen_kappa_score`` gives NaN there, the callers say why). Reference:
``sklearn.metrics.cohen_kappa_score``.

The interval resamples items with replacement (Efron's percentile bootstrap, seeded: a re-run prints the
same figures); resamples whose kappa is undefined are skipped. No minimum count: with few items the
interval is wide, and that is the message.

Fleiss (1971): for N items each rated by n raters into classes, kappa = (P̄ - P̄_e) / (1 - P̄_e), P̄ the
mean share of agreeing rater pairs per item, P̄_e the sum of squared overall class shares. Reference:
``statsmodels.stats.inter_rater.fleiss_kappa`` on the items x classes count table.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

from evalh.stats.resampling import DEFAULT_SEED

__all__ = ["agreement_rate", "cohen_kappa", "cohen_kappa_interval", "fleiss_kappa"]


def cohen_kappa(first: Sequence[Hashable], second: Sequence[Hashable]) -> float | None:
    """Cohen's kappa of two raters' classes for the same items; None when chance agreement is total
    (both used one class only) and they disagree somewhere, or when there are no items."""
    if len(first) != len(second):
        raise ValueError(f"two raters must rate the same items ({len(first)} and {len(second)} ratings)")
    count = len(first)
    if count == 0:
        return None
    observed = sum(1 for a, b in zip(first, second, strict=True) if a == b) / count
    classes = set(first) | set(second)
    expected = sum((list(first).count(c) / count) * (list(second).count(c) / count) for c in classes)
    if expected >= 1.0:
        return 1.0 if observed == 1.0 else None
    return (observed - expected) / (1 - expected)


def cohen_kappa_interval(
    first: Sequence[Hashable],
    second: Sequence[Hashable],
    *,
    confidence: float = 0.95,
    resamples: int = 2_000,
    seed: int = DEFAULT_SEED,
) -> tuple[float, float] | None:
    """A percentile bootstrap interval of Cohen's kappa, resampling items; None without two items or
    when no resample has a defined kappa."""
    import numpy as np  # lazily, as in resampling.py

    if len(first) != len(second):
        raise ValueError(f"two raters must rate the same items ({len(first)} and {len(second)} ratings)")
    if len(first) < 2:
        return None
    codes = {c: i for i, c in enumerate(sorted(set(first) | set(second), key=repr))}
    a = np.asarray([codes[x] for x in first])
    b = np.asarray([codes[x] for x in second])
    picks = np.random.default_rng(seed).integers(0, a.size, size=(resamples, a.size))
    kappas = np.array([_coded_kappa(a[row], b[row], len(codes)) for row in picks])
    kappas = kappas[~np.isnan(kappas)]
    if kappas.size == 0:
        return None
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(kappas, [tail, 100 - tail])
    return (float(low), float(high))


def _coded_kappa(a: object, b: object, classes: int) -> float:
    """Cohen's kappa of two integer-coded rating arrays (NaN where undefined), for the bootstrap's loop."""
    import numpy as np

    left, right = np.asarray(a), np.asarray(b)
    observed = float(np.mean(left == right))
    shares_a = np.bincount(left, minlength=classes) / left.size
    shares_b = np.bincount(right, minlength=classes) / right.size
    expected = float(np.dot(shares_a, shares_b))
    if expected >= 1.0:
        return 1.0 if observed == 1.0 else float("nan")
    return (observed - expected) / (1 - expected)


def fleiss_kappa(ratings: Sequence[Sequence[Hashable]]) -> float | None:
    """Fleiss' kappa of ``ratings``: one row per item, each the classes its raters gave (every item
    rated by the same number of raters, at least two). None when chance agreement is total."""
    if not ratings:
        return None
    raters = len(ratings[0])
    if raters < 2 or any(len(row) != raters for row in ratings):
        raise ValueError("Fleiss' kappa needs every item rated by the same number (>= 2) of raters")
    classes = sorted({c for row in ratings for c in row}, key=repr)
    table = [[list(row).count(c) for c in classes] for row in ratings]
    items = len(table)
    per_item = [(sum(n * n for n in row) - raters) / (raters * (raters - 1)) for row in table]
    mean_agreement = sum(per_item) / items
    shares = [sum(row[j] for row in table) / (items * raters) for j in range(len(classes))]
    expected = sum(p * p for p in shares)
    if expected >= 1.0:
        return 1.0 if mean_agreement == 1.0 else None
    return (mean_agreement - expected) / (1 - expected)


def agreement_rate(verdicts: Sequence[Hashable]) -> float:
    """The share of ``verdicts`` equal to the most common one (k samples of one judge: 1.0 unanimous)."""
    if not verdicts:
        raise ValueError("no verdicts")
    values = list(verdicts)
    return max(values.count(v) for v in set(values)) / len(values)
