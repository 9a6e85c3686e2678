"""evalh.stats.power against independent implementations: the exact power summed over every outcome with
scipy's Fisher test and binomial law, and the detectable drop against a seeded simulation of the test."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from evalh.stats.power import EXACT_RUNS, detectable_drop, drop_power
from evalh.stats.significance import fisher_worse


def scipy_power(base_rate: float, new_rate: float, runs: int, old_runs: int, alpha: float) -> float:
    old = stats.binom(old_runs, base_rate)
    new = stats.binom(runs, new_rate)
    return sum(
        old.pmf(a) * new.pmf(b)
        for a in range(old_runs + 1)
        for b in range(runs + 1)
        if stats.fisher_exact([[b, runs - b], [a, old_runs - a]], alternative="less").pvalue <= alpha
    )


@pytest.mark.parametrize(
    ("base_rate", "new_rate", "runs", "old_runs", "alpha"),
    [(0.7, 0.7, 10, 10, 0.05), (0.95, 0.5, 10, 10, 0.05), (0.8, 0.3, 20, 20, 0.05), (0.5, 0.1, 5, 5, 0.05),
     (0.9, 0.6, 12, 7, 0.01), (1.0, 0.0, 4, 3, 0.05), (0.6, 0.2, 20, 20, 0.05 / 8)],
)  # fmt: skip
def test_the_exact_power_is_scipy_s_sum_over_every_outcome(
    base_rate: float, new_rate: float, runs: int, old_runs: int, alpha: float
) -> None:
    ours = drop_power(base_rate, new_rate, runs, alpha, baseline_runs=old_runs)
    assert ours == pytest.approx(scipy_power(base_rate, new_rate, runs, old_runs, alpha), abs=1e-12)


def simulated_power(base_rate: float, new_rate: float, runs: int, trials: int, seed: int) -> float:
    generator = np.random.default_rng(seed)
    olds = generator.binomial(runs, base_rate, trials)
    news = generator.binomial(runs, new_rate, trials)
    seen: dict[tuple[int, int], bool] = {}
    for new, old in zip(news, olds, strict=True):
        if (int(new), int(old)) not in seen:
            seen[int(new), int(old)] = fisher_worse(int(new), runs, int(old), runs) <= 0.05
    return float(np.mean([seen[int(n), int(o)] for n, o in zip(news, olds, strict=True)]))


@pytest.mark.parametrize(("base_rate", "runs"), [(0.5, 10), (0.8, 20), (0.95, 20), (0.7, 20), (0.8, 50)])
def test_the_detectable_drop_is_found_80_percent_of_the_time_in_simulation(
    base_rate: float, runs: int
) -> None:
    drop = detectable_drop(base_rate, runs)
    assert drop is not None and 0 < drop <= base_rate
    # 20,000 trials: a standard error of 0.3 points around 80%
    assert simulated_power(base_rate, base_rate - drop, runs, 20_000, seed=runs) == pytest.approx(
        0.8, abs=0.012
    )
    # and a drop 3 points smaller is missed more often: the drop is the smallest that is seen
    assert (
        drop_power(base_rate, base_rate - (drop - 0.03), runs)
        < 0.8
        <= drop_power(base_rate, base_rate - drop, runs)
    )


def test_beyond_the_exact_range_the_normal_approximation_agrees_with_simulation() -> None:
    runs = EXACT_RUNS + 100
    drop = detectable_drop(0.8, runs)
    assert drop is not None and 0.05 < drop < 0.15
    assert simulated_power(0.8, 0.8 - drop, runs, 2000, seed=4) == pytest.approx(0.8, abs=0.04)
    # the two methods meet at the boundary
    assert detectable_drop(0.8, EXACT_RUNS) == pytest.approx(detectable_drop(0.8, EXACT_RUNS + 1), abs=0.01)


def test_more_repeats_see_smaller_drops() -> None:
    drops = [detectable_drop(0.8, runs) for runs in (10, 20, 50, 100, 500)]
    assert all(d is not None for d in drops)
    assert drops == sorted(drops, reverse=True)  # type: ignore[type-var]


def test_when_no_drop_can_be_seen_the_answer_is_none() -> None:
    # 5 repeats at 50%: even a drop to 0% is flagged in only (1 + 5) / 32 of the baselines
    assert detectable_drop(0.5, 5) is None
    assert drop_power(0.5, 0.0, 5) == pytest.approx(6 / 32)
    assert detectable_drop(0.0, 20) is None  # nothing to drop from
    # 5 repeats at 80%: only 0 passes after 4 or 5 before is significant, and those baselines are too rare
    assert detectable_drop(0.8, 5) is None
    assert drop_power(0.8, 0.0, 5) == pytest.approx(stats.binom(5, 0.8).sf(3))


@pytest.mark.parametrize(
    "arguments",
    [
        (1.5, 20, 0.05, 0.8),
        (-0.1, 20, 0.05, 0.8),
        (0.8, 0, 0.05, 0.8),
        (0.8, 20, 0.0, 0.8),
        (0.8, 20, 0.05, 1.0),
    ],
)
def test_impossible_arguments_are_refused(arguments: tuple[float, int, float, float]) -> None:
    with pytest.raises(ValueError, match="must be"):
        detectable_drop(*arguments)
