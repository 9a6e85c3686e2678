"""The mean of a few numbers with a Student t interval: a test's mean score over its repeats, and a suite's
mean of per-test pass rates with tests as the unit.

The t quantile is found by bisection on the t distribution's CDF, written with the regularized incomplete
beta function (continued fraction, Lentz's method; Numerical Recipes 6.4), so no scipy is needed at run
time. Reference: ``scipy.stats.t.ppf`` and ``scipy.stats.t.interval(confidence, n - 1, mean, sem)``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import lru_cache

__all__ = ["mean_interval", "t_quantile"]


def mean_interval(values: Sequence[float], confidence: float = 0.95) -> tuple[float, float]:
    """The t interval of the mean of ``values`` (a point for one value; as wide as the spread allows)."""
    n = len(values)
    if n == 0:
        raise ValueError("no values")
    mean = math.fsum(values) / n
    if n == 1:
        return (mean, mean)
    variance = math.fsum((v - mean) ** 2 for v in values) / (n - 1)
    half = t_quantile(0.5 + confidence / 2, n - 1) * math.sqrt(variance / n)
    return (mean - half, mean + half)


@lru_cache(maxsize=1024)  # bisection costs a millisecond; suites ask for the same few quantiles
def t_quantile(probability: float, df: int) -> float:
    """The ``probability`` quantile of Student's t with ``df`` degrees of freedom (0 < probability < 1)."""
    if not 0 < probability < 1 or df < 1:
        raise ValueError(f"need 0 < probability < 1 and df >= 1, got {probability}, {df}")
    if probability < 0.5:
        return -t_quantile(1 - probability, df)
    low, high = 0.0, 1.0
    while _t_cdf(high, df) < probability:
        high *= 2
    for _ in range(200):
        middle = (low + high) / 2
        if _t_cdf(middle, df) < probability:
            low = middle
        else:
            high = middle
        if high - low <= 1e-12 * max(1.0, high):
            break
    return (low + high) / 2


def _t_cdf(t: float, df: int) -> float:
    """P(T <= t) for t >= 0."""
    x = df / (df + t * t)
    return 1 - 0.5 * _betainc(df / 2, 0.5, x)


def _betainc(a: float, b: float, x: float) -> float:
    """The regularized incomplete beta function I_x(a, b)."""
    if x <= 0:
        return 0.0
    if x >= 1:
        return 1.0
    log_front = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    if x < (a + 1) / (a + b + 2):
        return math.exp(log_front) * _continued_fraction(a, b, x) / a
    return 1 - math.exp(log_front) * _continued_fraction(b, a, 1 - x) / b


def _continued_fraction(a: float, b: float, x: float) -> float:
    tiny = 1e-300
    c, d = 1.0, 1 - (a + b) * x / (a + 1)
    d = 1 / (d if abs(d) > tiny else tiny)
    result = d
    for m in range(1, 1000):
        for numerator in (
            m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
            -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1)),
        ):
            d = 1 + numerator * d
            d = 1 / (d if abs(d) > tiny else tiny)
            c = 1 + numerator / c
            c = c if abs(c) > tiny else tiny
            result *= c * d
        if abs(c * d - 1) < 1e-15:
            break
    return result
