"""Did it get worse? Exact tests on pass counts, and Holm's step-down over many tests.

* One test with repeats on both sides: Fisher's exact test on the 2x2 table (passes, fails) x (new,
  baseline), one-sided. Under "no change" the new run's passes, given the total passes, follow the
  hypergeometric law; the p-value of "worse" is P(X <= new passes). Reference:
  ``scipy.stats.fisher_exact([[new_passes, new_fails], [old_passes, old_fails]], alternative="less")``.
* One run per test, the tests both runs share: McNemar's exact test on the discordant pairs (b tests went
  pass -> fail, c went fail -> pass): under "no change" b ~ Binomial(b + c, 1/2). References:
  ``scipy.stats.binomtest(b, b + c, 0.5, alternative="greater")`` (worse) and
  ``statsmodels.stats.contingency_tables.mcnemar([[., b], [c, .]], exact=True)`` (two-sided).
* Holm (1979): sort the m p-values, reject the j-th smallest while p(j) <= alpha / (m - j + 1); the
  family-wise error (any false alarm among the m) stays at most alpha. Adjusted p-values are
  max over i <= j of min(1, (m - i + 1) p(i)). Reference:
  ``statsmodels.stats.multitest.multipletests(p, alpha, method="holm")``.

Counts are exact integers: the tail sums are ratios of Python integers, so no p-value is lost to
floating-point cancellation even for thousands of runs.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

__all__ = ["fisher_better", "fisher_worse", "holm", "mcnemar_two_sided", "mcnemar_worse"]


def fisher_worse(new_passes: int, new_runs: int, old_passes: int, old_runs: int) -> float:
    """One-sided p-value that the new pass rate is lower than the old one (Fisher's exact test)."""
    low, weights = _hypergeometric(new_passes, new_runs, old_passes, old_runs)
    return _ratio(sum(weights[: new_passes - low + 1]), sum(weights))


def fisher_better(new_passes: int, new_runs: int, old_passes: int, old_runs: int) -> float:
    """One-sided p-value that the new pass rate is higher than the old one (Fisher's exact test)."""
    low, weights = _hypergeometric(new_passes, new_runs, old_passes, old_runs)
    return _ratio(sum(weights[new_passes - low :]), sum(weights))


def _hypergeometric(new_passes: int, new_runs: int, old_passes: int, old_runs: int) -> tuple[int, list[int]]:
    """The support of the new run's passes given the margins, and each value's count of tables."""
    for passes, runs in ((new_passes, new_runs), (old_passes, old_runs)):
        if runs < 0 or not 0 <= passes <= runs:
            raise ValueError(f"passes must be between 0 and runs ({runs}), got {passes}")
    total_passes = new_passes + old_passes
    low = max(0, total_passes - old_runs)
    high = min(new_runs, total_passes)
    # tables by recurrence, one small multiplication and exact division each: math.comb per value costs
    # seconds at thousands of runs
    weight = math.comb(new_runs, low) * math.comb(old_runs, total_passes - low)
    weights = [weight]
    for x in range(low, high):
        weight = weight * (new_runs - x) * (total_passes - x)
        weight //= (x + 1) * (old_runs - total_passes + x + 1)
        weights.append(weight)
    return low, weights


def _ratio(numerator: int, denominator: int) -> float:
    return min(1.0, numerator / denominator) if denominator else 1.0


def mcnemar_worse(pass_to_fail: int, fail_to_pass: int) -> float:
    """One-sided p-value that more tests went pass -> fail than chance allows (McNemar's exact test)."""
    trials = pass_to_fail + fail_to_pass
    if trials == 0:
        return 1.0
    return _ratio(sum(_binomial_row(trials)[pass_to_fail:]), 2**trials)


def mcnemar_two_sided(pass_to_fail: int, fail_to_pass: int) -> float:
    """Two-sided p-value of McNemar's exact test: is the change in pass rate beyond chance either way?"""
    trials = pass_to_fail + fail_to_pass
    if trials == 0:
        return 1.0
    return _ratio(2 * sum(_binomial_row(trials)[: min(pass_to_fail, fail_to_pass) + 1]), 2**trials)


def _binomial_row(trials: int) -> list[int]:
    """C(trials, 0), ..., C(trials, trials) by recurrence (exact integers)."""
    row = [1]
    for x in range(trials):
        row.append(row[-1] * (trials - x) // (x + 1))
    return row


def holm(p_values: Sequence[float], alpha: float) -> tuple[list[bool], list[float]]:
    """Holm's step-down: which hypotheses are rejected at family-wise error ``alpha``, and the adjusted
    p-values, both in the order given."""
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i])
    rejected = [False] * m
    adjusted = [1.0] * m
    running = 0.0
    still_rejecting = True
    for rank, index in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p_values[index]))
        adjusted[index] = running
        still_rejecting = still_rejecting and p_values[index] <= alpha / (m - rank)
        rejected[index] = still_rejecting
    return rejected, adjusted
