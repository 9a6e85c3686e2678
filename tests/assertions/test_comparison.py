"""max-score's aggregation over each row's graded assertions (promptfoo's rules), and the registry's
declaration of the two comparison types."""

from __future__ import annotations

from evalh.assertions.comparison import max_score
from evalh.assertions.registry import get_assertion
from evalh.model import AssertionSpec, GradedAssertion


def _graded(*scores: tuple[str, float], skipped: bool = False) -> tuple[GradedAssertion, ...]:
    return tuple(
        GradedAssertion(AssertionSpec(type=kind), score >= 0.5, score, "", skipped=skipped)
        for kind, score in scores
    )


def test_weights_are_looked_up_by_the_type_as_written() -> None:
    rows = [
        _graded(("contains", 1.0), ("not-contains", 0.0)),
        _graded(("contains", 0.0), ("not-contains", 1.0)),
    ]
    results = max_score({"weights": {"not-contains": 3}}, rows)
    assert [r.passed for r in results] == [False, True]
    assert results[1].details == {"maxScore": 0.75, "assertionCount": 2, "totalWeight": 4.0}
    assert results[0].reason == "Not selected (score: 0.250, max: 0.750)"


def test_sum_and_threshold() -> None:
    rows = [_graded(("contains", 1.0), ("icontains", 1.0)), _graded(("contains", 1.0))]
    assert [r.passed for r in max_score({"method": "sum"}, rows)] == [True, False]
    below = max_score({"method": "sum", "threshold": 2.5}, rows)
    assert [r.passed for r in below] == [False, False]
    assert below[0].reason == "Not selected - score 2.000 below threshold 2.5"


def test_comparisons_skipped_assertions_and_rows_without_output_do_not_count() -> None:
    first = _graded(("contains", 1.0), ("select-best", 0.0)) + _graded(("latency", 0.0), skipped=True)
    results = max_score(None, [first, None, _graded(("contains", 1.0))])
    assert [r.passed for r in results] == [True, False, False]  # a tie goes to the first
    assert results[0].details["assertionCount"] == 1
    assert results[1].reason == "Not selected: the row has no graded output"


def test_both_types_are_declared_as_comparing_outputs() -> None:
    for name in ("select-best", "max-score"):
        definition = get_assertion(name)
        assert definition is not None and definition.compares_outputs
    contains = get_assertion("contains")
    assert contains is not None and not contains.compares_outputs
