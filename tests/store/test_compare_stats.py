"""The statistics of a comparison, each figure against scipy / statsmodels: per test over repeats (Fisher,
Holm, Newcombe), McNemar's test without repeats, the paired bootstrap of mean scores, and the power
sentence."""

from __future__ import annotations

import math
from typing import Any

import pytest
from scipy.stats import binom, fisher_exact
from statsmodels.stats.contingency_tables import mcnemar
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.proportion import confint_proportions_2indep

from evalh.stats.power import detectable_drop
from evalh.store.compare import compare_reports
from evalh.store.compare_stats import BOOTSTRAP_LIMIT

# (passes in the baseline, passes now) out of 20 repeats each
COUNTS = {"a": (19, 2), "b": (19, 3), "c": (14, 14), "d": (14, 9), "e": (10, 19), "f": (14, 12)}


def _rows(counts: dict[str, int], runs: int, score: float = 1.0) -> list[dict[str, Any]]:
    return [
        {
            "description": name,
            "vars": {"q": name},
            "prompt": {"raw": "x", "label": "p"},
            "provider": {"id": "echo", "label": "echo"},
            "repeatIdx": repeat,
            "success": repeat < passes,
            "score": score * (repeat < passes),
            "failureReason": 0 if repeat < passes else 1,
        }
        for name, passes in counts.items()
        for repeat in range(runs)
    ]


def _report(eval_id: str, rows: list[dict[str, Any]]) -> dict[str, Any]:
    return {"evalId": eval_id, "results": {"results": rows}}


def _compare(before: dict[str, int], after: dict[str, int], runs: int, **options: Any) -> Any:
    return compare_reports(_report("A", _rows(before, runs)), _report("B", _rows(after, runs)), **options)


def test_each_test_over_its_repeats_matches_scipy_and_statsmodels() -> None:
    before = {name: old for name, (old, _) in COUNTS.items()}
    after = {name: new for name, (_, new) in COUNTS.items()}
    comparison = _compare(before, after, 20, alpha=0.05)
    tests = comparison.statistics.tests
    worse = [
        fisher_exact([[new, 20 - new], [old, 20 - old]], alternative="less")[1]
        for old, new in COUNTS.values()
    ]
    better = [
        fisher_exact([[new, 20 - new], [old, 20 - old]], alternative="greater")[1]
        for old, new in COUNTS.values()
    ]
    worse_rejected, worse_adjusted, _, _ = multipletests(worse, 0.05, method="holm")
    better_rejected, better_adjusted, _, _ = multipletests(better, 0.05, method="holm")
    assert [t.p_worse for t in tests] == pytest.approx(list(worse_adjusted), rel=1e-9)
    assert [t.p_better for t in tests] == pytest.approx(list(better_adjusted), rel=1e-9)
    assert [t.verdict == "regressed" for t in tests] == list(worse_rejected)
    assert [t.verdict == "improved" for t in tests] == list(better_rejected)
    for test, (old, new) in zip(tests, COUNTS.values(), strict=True):
        expected = confint_proportions_2indep(new, 20, old, 20, method="newcomb")
        assert test.change_interval == pytest.approx(tuple(float(x) for x in expected), abs=1e-9)
    # every row that flipped is one draw: only the significant regressions fail the gate
    assert len(comparison.regressions) > comparison.failed == sum(worse_rejected)
    assert [t["verdict"] for t in comparison.to_json()["statistics"]["tests"]] == [t.verdict for t in tests]
    assert comparison.lines()[-1].startswith(f"{sum(worse_rejected)} significant regression(s)")


def test_a_test_new_in_the_run_that_fails_still_fails_the_gate_with_repeats() -> None:
    comparison = _compare({"a": 10}, {"a": 10, "new": 3}, 20)
    assert comparison.statistics.regressed == [] and comparison.failed == 17  # the new test's failing rows


def test_without_repeats_mcnemar_says_whether_the_change_is_beyond_chance() -> None:
    before = {f"t{i}": 1 for i in range(12)} | {f"u{i}": 0 for i in range(3)}
    after = {f"t{i}": int(i >= 9) for i in range(12)} | {f"u{i}": 1 for i in range(3)}
    comparison = _compare(before, after, 1)
    paired = comparison.statistics.paired
    expected = mcnemar([[3, 9], [3, 0]], exact=True).pvalue
    assert (paired.pass_to_fail, paired.fail_to_pass, paired.shared) == (9, 3, 15)
    assert paired.p_value == pytest.approx(expected, rel=1e-12)
    assert paired.p_worse == pytest.approx(binom.sf(8, 12, 0.5), rel=1e-12)
    verdict = "beyond chance" if expected <= 0.05 else "within chance"
    assert any(f"the change in pass rate is {verdict}" in line for line in comparison.lines())
    assert comparison.failed == len(comparison.regressions) == 9  # a flip stays a regression, as before
    assert comparison.statistics.tests is None


def test_mean_score_change_is_a_seeded_paired_bootstrap_interval() -> None:
    before = _rows({f"t{i}": 1 for i in range(10)}, 1)
    after = _rows({f"t{i}": 1 for i in range(10)}, 1)
    for index, row in enumerate(after):
        row["score"] = 0.5 + index / 20
    first = compare_reports(_report("A", before), _report("B", after)).statistics.scores
    again = compare_reports(_report("A", before), _report("B", after)).statistics.scores
    changes = [row["score"] - 1.0 for row in after]
    assert first == again  # seeded: a re-run prints the same figures
    assert first.after - first.before == pytest.approx(math.fsum(changes) / len(changes))
    low, high = first.interval
    assert min(changes) <= low < first.after - first.before < high <= max(changes)


def test_too_few_repeats_to_see_any_drop_say_so() -> None:
    assert detectable_drop(0.7, 5, 0.05) is None
    comparison = _compare({"a": 3, "b": 4}, {"a": 3, "b": 4}, 5)
    assert "Too weak to see a regression: with 5 repeats, no drop" in comparison.statistics.power


def test_mean_score_change_of_many_tests_is_a_paired_t_interval() -> None:
    import numpy as np
    from scipy.stats import sem, t

    count = BOOTSTRAP_LIMIT + 1
    before = _rows({f"t{i}": 1 for i in range(count)}, 1)
    after = _rows({f"t{i}": 1 for i in range(count)}, 1)
    for index, row in enumerate(after):
        row["score"] = (index * 7919 % 1000) / 1000
    changes = np.array([row["score"] - 1.0 for row in after])
    scores = compare_reports(_report("A", before), _report("B", after)).statistics.scores
    expected = t.interval(0.95, count - 1, loc=changes.mean(), scale=sem(changes))
    assert scores.interval == pytest.approx(expected, rel=1e-9)
    assert scores.to_json()["method"] == "paired-t" and "paired t interval" in scores.sentence()
