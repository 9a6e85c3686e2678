"""One test's pass rate over repeats: the Wilson score interval, and the unbiased pass@k and pass^k.

Wilson (1927): for k passes in n runs the interval of rates p whose score test does not reject at the
given z. Unlike the Wald interval p ± z·sqrt(p(1-p)/n) it never leaves [0, 1] and does not collapse to
a point at k = 0 or k = n. Reference: ``scipy.stats.binomtest(k, n).proportion_ci(method="wilson")``.

pass@k (at least one of k runs passes) and pass^k (all k pass, the reliability figure of tau-bench) are
estimated from n >= k observed runs with c passes without bias, as the chance that k runs drawn without
replacement from the n contain a pass (pass@k = 1 - C(n-c, k) / C(n, k)) or are all passes
(pass^k = C(c, k) / C(n, k)). With k = n they are simply "some run passed" and "every run passed".

The change between two pass rates gets Newcombe's hybrid score interval (1998, method 10): each rate's
Wilson interval, combined as d - sqrt((p1 - l1)² + (u2 - p2)²) .. d + sqrt((u1 - p1)² + (p2 - l2)²). It
keeps the Wilson interval's good behaviour at 0 and 100% and stays within [-1, 1]. Reference:
``statsmodels.stats.proportion.confint_proportions_2indep(c1, n1, c2, n2, method="newcomb")``.
"""

from __future__ import annotations

import math

__all__ = ["Z95", "difference_interval", "pass_all_k", "pass_any_k", "wilson_interval"]

Z95 = 1.959963984540054  # the standard normal's 97.5% quantile: a two-sided 95% interval


def wilson_interval(passes: int, runs: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval of the pass rate ``passes / runs`` (95% with the default ``z``)."""
    if runs <= 0:
        return (0.0, 1.0)  # no evidence: every rate is possible
    if not 0 <= passes <= runs:
        raise ValueError(f"passes must be between 0 and runs ({runs}), got {passes}")
    low, high = wilson_bounds(passes / runs, runs, z)
    # exact at the ends: k = 0 starts at 0 and k = n ends at 1 (the formula gives them up to rounding)
    return (0.0 if passes == 0 else low, 1.0 if passes == runs else high)


def difference_interval(
    new_passes: int, new_runs: int, old_passes: int, old_runs: int, z: float = Z95
) -> tuple[float, float]:
    """Newcombe's hybrid score interval of the change in pass rate, new minus old (95% by default)."""
    if new_runs <= 0 or old_runs <= 0:
        return (-1.0, 1.0)  # no evidence on one side: every change is possible
    new_rate, old_rate = new_passes / new_runs, old_passes / old_runs
    new_low, new_high = wilson_interval(new_passes, new_runs, z)
    old_low, old_high = wilson_interval(old_passes, old_runs, z)
    change = new_rate - old_rate
    below = math.hypot(new_rate - new_low, old_high - old_rate)
    above = math.hypot(new_high - new_rate, old_rate - old_low)
    return (max(-1.0, change - below), min(1.0, change + above))


def pass_any_k(runs: int, passes: int, k: int) -> float:
    """pass@k: the chance that at least one of k runs passes, estimated without bias from the n runs."""
    _check_k(runs, passes, k)
    return 1.0 - math.comb(runs - passes, k) / math.comb(runs, k)


def pass_all_k(runs: int, passes: int, k: int) -> float:
    """pass^k: the chance that every one of k runs passes, estimated without bias from the n runs."""
    _check_k(runs, passes, k)
    return math.comb(passes, k) / math.comb(runs, k)


def _check_k(runs: int, passes: int, k: int) -> None:
    if not 0 <= passes <= runs:
        raise ValueError(f"passes must be between 0 and runs ({runs}), got {passes}")
    if not 1 <= k <= runs:
        raise ValueError(f"k must be between 1 and the runs observed ({runs}), got {k}")


def wilson_bounds(rate: float, size: float, z: float = Z95) -> tuple[float, float]:
    """Wilson's formula for an observed ``rate`` out of ``size`` trials (a real number: an effective
    size too), clipped to [0, 1]."""
    z2 = z * z
    denominator = 1 + z2 / size
    centre = (rate + z2 / (2 * size)) / denominator
    half = z * math.sqrt(rate * (1 - rate) / size + z2 / (4 * size * size)) / denominator
    return (max(0.0, centre - half), min(1.0, centre + half))
