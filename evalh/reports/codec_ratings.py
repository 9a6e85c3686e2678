"""A report's figures with its rows' ratings: ``results.stats`` and each column's ``metrics``
(``results.prompts[]``) as promptfoo updates them when a person rates a row, from the graded figures a
run stored and each rated row beside its graded one (:func:`evalh.reports.codec.rated_row`).

Part of the row codec: only the codec spells the report's keys. The graded figures are never edited,
so clearing a rating gives them back exactly.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

from evalh.model import Status
from evalh.reports.codec import HUMAN_ASSERTION
from evalh.reports.codec_read import column_indexes, row_components, row_score, row_status
from evalh.stats.proportions import wilson_interval

__all__ = ["rated_results"]

_STATS = {Status.PASS: "successes", Status.FAIL: "failures", Status.ERROR: "errors"}
_TESTS = {Status.PASS: "testPassCount", Status.FAIL: "testFailCount", Status.ERROR: "testErrorCount"}
_ASSERTS = {True: "assertPassCount", False: "assertFailCount"}


def _number(value: Any) -> float:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0.0


def _human_verdicts(row: Mapping[str, Any]) -> list[bool]:
    """The verdicts of the row's ``human`` components (a rating adds or replaces one)."""
    verdicts = []
    for component in row_components(row):
        assertion = component.get("assertion") if isinstance(component, Mapping) else None
        if isinstance(assertion, Mapping) and assertion.get("type") == HUMAN_ASSERTION:
            verdicts.append(bool(component.get("pass")))
    return verdicts


def _row_figures(row: Mapping[str, Any], sign: int, into: Counter[str]) -> float:
    """Add the row's counts, times ``sign``, to ``into``; returns its score times ``sign``."""
    status = row_status(row)
    into[_STATS[status]] += sign
    into[_TESTS[status]] += sign
    for passed in _human_verdicts(row):
        into[_ASSERTS[passed]] += sign
    return sign * _number(row_score(row))


def rated_results(
    results: Mapping[str, Any], changes: Iterable[tuple[Mapping[str, Any], Mapping[str, Any]]]
) -> dict[str, Any]:
    """``results`` (a report's, rows aside) with ``stats`` and each column's ``metrics`` counting each
    ``(graded, rated)`` row of ``changes`` as rated: its status counts, its score, and its ``human``
    component among the assertions."""
    overall: Counter[str] = Counter()
    columns: dict[tuple[int, int], tuple[Counter[str], list[float]]] = {}
    for graded, rated in changes:
        figures, score = columns.setdefault(column_indexes(rated), (Counter(), [0.0]))
        score[0] += _row_figures(rated, 1, figures) + _row_figures(graded, -1, figures)
        _row_figures(rated, 1, overall)
        _row_figures(graded, -1, overall)
    out = dict(results)
    stats = results.get("stats")
    if isinstance(stats, Mapping):
        out["stats"] = {**stats, **{key: _adjusted(stats, key, overall) for key in _STATS.values()}}
        if "passRateInterval" in stats and not _has_repeats(results):
            out["stats"]["passRateInterval"] = list(_interval(out["stats"]))
    prompts = results.get("prompts")
    if isinstance(prompts, list):
        out["prompts"] = [_rated_column(column, columns) for column in prompts]
    return out


def _has_repeats(results: Mapping[str, Any]) -> bool:
    block = results.get("evalh")
    return isinstance(block, Mapping) and block.get("repeats") is not None


def _interval(stats: Mapping[str, Any]) -> tuple[float, float]:
    """The suite's pass rate interval of a run without repeats (each row a test, as the run has it)."""
    counts = [int(_number(stats.get(key))) for key in _STATS.values()]
    return wilson_interval(counts[0], sum(counts)) if sum(counts) else (0.0, 1.0)


def _adjusted(figures: Mapping[str, Any], key: str, by: Counter[str]) -> Any:
    value = figures.get(key)
    return value + by[key] if isinstance(value, int) and not isinstance(value, bool) else value


def _rated_column(column: Any, columns: Mapping[tuple[int, int], tuple[Counter[str], list[float]]]) -> Any:
    if not isinstance(column, Mapping) or not isinstance(column.get("metrics"), Mapping):
        return column
    found = columns.get(column_indexes(column))
    if found is None:
        return column
    by, (score,) = found
    metrics = column["metrics"]
    counts = (*_TESTS.values(), *_ASSERTS.values())
    rated = {**metrics, **{key: _adjusted(metrics, key, by) for key in counts if key in metrics}}
    if isinstance(metrics.get("score"), int | float) and not isinstance(metrics.get("score"), bool):
        rated["score"] = metrics["score"] + score
    return {**column, "metrics": rated}
