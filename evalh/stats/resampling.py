"""Seeded bootstrap intervals (Efron's percentile interval): the same data and seed give the same figures,
so a re-run prints the same interval.

* :func:`paired_interval`: the mean of paired differences (a test's score in the new run minus its score in
  the baseline), resampling the tests with replacement.
* :func:`cluster_interval`: the mean over clusters of each cluster's mean (a suite's pass rate with tests as
  the unit: a test's repeats stay together, since they are not independent evidence about the suite).
Reference for both: ``scipy.stats.bootstrap((data,), np.mean, method="percentile")`` on the same values.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["DEFAULT_RESAMPLES", "DEFAULT_SEED", "cluster_interval", "paired_interval"]

DEFAULT_RESAMPLES = 10_000
DEFAULT_SEED = 20_261_128


def paired_interval(
    differences: Sequence[float],
    *,
    confidence: float = 0.95,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
) -> tuple[float, float]:
    """A percentile bootstrap interval of the mean of ``differences``."""
    return cluster_interval(
        [float(d) for d in differences], confidence=confidence, resamples=resamples, seed=seed
    )


def cluster_interval(
    cluster_means: Sequence[float],
    *,
    confidence: float = 0.95,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
) -> tuple[float, float]:
    """A percentile bootstrap interval of the mean of ``cluster_means`` (each cluster resampled whole)."""
    import numpy as np  # lazily: a run without statistics never loads numpy for them

    values = np.asarray(cluster_means, dtype=float)
    if values.size == 0:
        raise ValueError("no values to bootstrap")
    if values.size == 1:
        return (float(values[0]), float(values[0]))
    generator = np.random.default_rng(seed)
    means = np.empty(resamples)
    block = max(1, min(resamples, 250_000 // values.size))  # about 4 MB at a time, however many clusters
    for start in range(0, resamples, block):
        stop = min(resamples, start + block)
        picks = generator.integers(0, values.size, size=(stop - start, values.size))
        means[start:stop] = values[picks].mean(axis=1)
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(means, [tail, 100 - tail])
    return (float(low), float(high))
