"""max-score's figure for each row (promptfoo's rules: weights by the type as written, average or sum,
comparisons and skipped assertions left out), and the registry's declaration of the two types. Who wins
is the runner's (tests/runner/test_comparing.py)."""

from __future__ import annotations

import pytest

from evalh.assertions.comparison import RowScore, max_score_options, row_score
from evalh.assertions.registry import get_assertion
from evalh.model import AssertionSpec, GradedAssertion


def _graded(*scores: tuple[str, float], skipped: bool = False) -> tuple[GradedAssertion, ...]:
    return tuple(
        GradedAssertion(AssertionSpec(type=kind), score >= 0.5, score, "", skipped=skipped)
        for kind, score in scores
    )


def test_weights_are_looked_up_by_the_type_as_written() -> None:
    options = max_score_options({"weights": {"not-contains": 3}})
    assert row_score(_graded(("contains", 1.0), ("not-contains", 0.0)), options) == RowScore(0.25, 2, 4.0)
    assert row_score(_graded(("contains", 0.0), ("not-contains", 1.0)), options) == RowScore(0.75, 2, 4.0)


def test_sum_adds_the_weighted_scores() -> None:
    options = max_score_options({"method": "sum", "weights": {"icontains": 2}, "threshold": 2})
    assert row_score(_graded(("contains", 1.0), ("icontains", 0.5)), options) == RowScore(2.0, 2, 3.0)
    assert options.threshold == 2.0


def test_comparisons_and_skipped_assertions_do_not_count() -> None:
    graded = _graded(("contains", 1.0), ("select-best", 0.0)) + _graded(("latency", 0.0), skipped=True)
    assert row_score(graded, max_score_options(None)) == RowScore(1.0, 1, 1.0)
    assert row_score((), max_score_options(None)) == RowScore(0.0, 0, 0.0)


@pytest.mark.parametrize("name", ["select-best", "max-score"])
def test_both_types_are_declared_as_comparing_outputs(name: str) -> None:
    definition = get_assertion(name)
    assert definition is not None and definition.compares_outputs
    contains = get_assertion("contains")
    assert contains is not None and not contains.compares_outputs
