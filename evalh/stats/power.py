"""How big a drop can a comparison see? The smallest drop in one test's pass rate that one-sided Fisher's
exact test (:func:`evalh.stats.significance.fisher_worse`) detects at ``alpha`` with the given power.

The power is exact: the baseline's passes A ~ Binomial(n_old, base) and the new run's B ~ Binomial(n_new,
base - drop) are independent, and the test rejects "no change" when B is at most a cut-off that depends on
A (the one-sided Fisher p-value grows with B). So power(drop) = sum over a of P(A = a) P(B <= cut(a)),
which grows as the drop grows; the smallest drop reaching the target power is found by bisection. The
cut-offs come from the same ``fisher_worse`` the comparisons use, so the figure describes the very test
that calls a test regressed. Above :data:`EXACT_RUNS` runs per side the exact tables get slow and the
normal approximation of the two-proportion z test with continuity correction (Fleiss, Levin & Paik
2003, 4.2) is used instead.
Holm over m tests: pass ``alpha / m`` for the strictest step (what the first rejection needs).
"""

from __future__ import annotations

import math
from functools import lru_cache
from statistics import NormalDist

from evalh.stats.significance import fisher_worse

__all__ = ["EXACT_RUNS", "detectable_drop", "drop_power"]

EXACT_RUNS = 200  # runs per side up to which the power is computed exactly


def detectable_drop(
    base_rate: float,
    runs: int,
    alpha: float = 0.05,
    power: float = 0.8,
    baseline_runs: int | None = None,
) -> float | None:
    """The smallest drop from ``base_rate`` detected with probability ``power`` by one-sided Fisher at
    ``alpha``, with ``runs`` repeats in the new run and ``baseline_runs`` (default: as many) in the
    baseline; ``None`` when even a drop to 0% is not detected that often."""
    old_runs = runs if baseline_runs is None else baseline_runs
    _check(base_rate, runs, old_runs, alpha, power)
    if drop_power(base_rate, base_rate, runs, alpha, old_runs) >= power:
        return None if base_rate == 0 else 0.0  # alpha >= power: degenerate, but answered honestly
    if drop_power(base_rate, 0.0, runs, alpha, old_runs) < power:
        return None
    low, high = 0.0, base_rate  # power(low) < target <= power(high)
    while high - low > 1e-6:
        middle = (low + high) / 2
        if drop_power(base_rate, base_rate - middle, runs, alpha, old_runs) >= power:
            high = middle
        else:
            low = middle
    return high


def drop_power(
    base_rate: float, new_rate: float, runs: int, alpha: float = 0.05, baseline_runs: int | None = None
) -> float:
    """The chance that one-sided Fisher at ``alpha`` calls the new run worse when its true pass rate is
    ``new_rate`` and the baseline's is ``base_rate`` (``runs`` new repeats, ``baseline_runs`` old)."""
    old_runs = runs if baseline_runs is None else baseline_runs
    if max(runs, old_runs) > EXACT_RUNS:
        return _normal_power(base_rate, new_rate, runs, old_runs, alpha)
    cuts = _cut_offs(runs, old_runs, alpha)
    old_pmf = _binomial_pmf(old_runs, base_rate)
    new_cdf = _cumulative(_binomial_pmf(runs, new_rate))
    return math.fsum(old_pmf[a] * new_cdf[cut] for a, cut in enumerate(cuts) if cut >= 0)


@lru_cache(maxsize=256)
def _cut_offs(new_runs: int, old_runs: int, alpha: float) -> tuple[int, ...]:
    """For each baseline pass count a, the largest new pass count that Fisher rejects at (-1: none).
    The cut-off never falls as a grows, so one walk upwards finds them all."""
    cuts: list[int] = []
    cut = -1
    for old_passes in range(old_runs + 1):
        while cut < new_runs and fisher_worse(cut + 1, new_runs, old_passes, old_runs) <= alpha:
            cut += 1
        cuts.append(cut)
    return tuple(cuts)


def _binomial_pmf(runs: int, rate: float) -> list[float]:
    rate = min(1.0, max(0.0, rate))
    return [math.comb(runs, k) * rate**k * (1 - rate) ** (runs - k) for k in range(runs + 1)]


def _cumulative(pmf: list[float]) -> list[float]:
    total, out = 0.0, []
    for p in pmf:
        total += p
        out.append(min(1.0, total))
    return out


def _normal_power(base_rate: float, new_rate: float, new_runs: int, old_runs: int, alpha: float) -> float:
    """The power of the one-sided pooled two-proportion z test with Yates' continuity correction, the
    large-sample form of Fisher's test (within a point of the exact power at 200 runs a side)."""
    normal = NormalDist()
    drop = base_rate - new_rate
    pooled = (base_rate * old_runs + new_rate * new_runs) / (old_runs + new_runs)
    null_sd = math.sqrt(pooled * (1 - pooled) * (1 / old_runs + 1 / new_runs))
    alt_sd = math.sqrt(base_rate * (1 - base_rate) / old_runs + new_rate * (1 - new_rate) / new_runs)
    if alt_sd == 0:
        return 1.0 if drop > 0 else 0.0
    correction = (1 / old_runs + 1 / new_runs) / 2
    return normal.cdf((drop - correction - normal.inv_cdf(1 - alpha) * null_sd) / alt_sd)


def _check(base_rate: float, runs: int, old_runs: int, alpha: float, power: float) -> None:
    if not 0 <= base_rate <= 1:
        raise ValueError(f"base_rate must be between 0 and 1, got {base_rate}")
    if runs < 1 or old_runs < 1:
        raise ValueError(f"runs must be at least 1 on each side, got {runs} and {old_runs}")
    if not 0 < alpha < 1 or not 0 < power < 1:
        raise ValueError(f"alpha and power must be between 0 and 1, got {alpha} and {power}")
