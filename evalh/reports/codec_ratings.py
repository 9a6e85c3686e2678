"""A report's figures with its rows' ratings: ``results.stats`` and each column's ``metrics``
(``results.prompts[]``) as promptfoo updates them when a person rates a row, and evalh's figures made of
verdicts and row scores (``results.evalh.passRate``, the counts, pass rates and mean scores of
``results.aggregates`` and its columns, each test's verdict figures in ``results.evalh.repeats``), from
the graded figures a run stored and each rated row beside its graded one
(:func:`evalh.reports.codec.rated_row`). What the rating does not decide stays graded: the named scores
and assertion types (a rating is no assertion and scores no metric, as in promptfoo), the classification
(it compares outputs with labels) and a repeated test's mean score and its interval (a t interval of the
graders' scores, which a person's 1 or 0 is not a draw of).

Part of the row codec: only the codec spells the report's keys. The graded figures are never edited,
so clearing a rating gives them back exactly.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

from evalh.model import Status
from evalh.model.verdict import pass_rate
from evalh.reports.codec import HUMAN_ASSERTION
from evalh.reports.codec_read import column_indexes, row_cell, row_components, row_score, row_status
from evalh.stats.proportions import wilson_interval
from evalh.stats.repeats import repeat_stats, suite_pass_rate_interval

__all__ = ["rated_results"]

_STATS = {Status.PASS: "successes", Status.FAIL: "failures", Status.ERROR: "errors"}
_TESTS = {Status.PASS: "testPassCount", Status.FAIL: "testFailCount", Status.ERROR: "testErrorCount"}
_ASSERTS = {True: "assertPassCount", False: "assertFailCount"}
_FIGURES = {Status.PASS: "passed", Status.FAIL: "failed", Status.ERROR: "errors"}  # results.aggregates'

Changes = list[tuple[Mapping[str, Any], Mapping[str, Any]]]  # each rated row as (graded, rated)


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
    """``results`` (a report's, rows aside) with ``stats``, each column's ``metrics``, the pass rate and
    repeats of ``evalh`` and ``aggregates`` counting each ``(graded, rated)`` row of ``changes`` as rated:
    its status counts, its score, and its ``human`` component among the assertions."""
    changes = list(changes)
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
    if isinstance(results.get("evalh"), Mapping):
        out["evalh"] = _rated_block(results["evalh"], out.get("stats"), changes)
        if _has_repeats(out) and isinstance(stats, Mapping) and "passRateInterval" in stats:
            out["stats"]["passRateInterval"] = list(_repeats_interval(out["evalh"]["repeats"]))
    if isinstance(results.get("aggregates"), Mapping):
        out["aggregates"] = _rated_aggregates(results["aggregates"], changes)
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


def _rated_block(block: Mapping[str, Any], stats: Any, changes: Changes) -> dict[str, Any]:
    """``results.evalh`` with its pass rate (rows that passed) and each repeated test's verdict figures
    as the ratings make them."""
    out = dict(block)
    if "passRate" in block and isinstance(stats, Mapping):
        counts = [int(_number(stats.get(key))) for key in _STATS.values()]
        out["passRate"] = pass_rate(counts[0], sum(counts))
    if isinstance(block.get("repeats"), Mapping) and isinstance(block["repeats"].get("tests"), list):
        out["repeats"] = _rated_repeats(block["repeats"], changes)
    return out


def _rated_repeats(repeats: Mapping[str, Any], changes: Changes) -> dict[str, Any]:
    """``results.evalh.repeats`` with each rated row's test counting its rated verdict among its passes."""
    moved: Counter[tuple[int, int, int]] = Counter()
    for graded, rated in changes:
        moved[row_cell(rated)[:3]] += _passes(rated) - _passes(graded)
    required = _number(repeats.get("requiredPassRate"))
    tests = [_rated_test(test, moved, required) for test in repeats["tests"]]
    if tests == repeats["tests"]:
        return dict(repeats)
    passed = sum(1 for test in tests if isinstance(test, Mapping) and test.get("pass") is True)
    return {**repeats, "testsPassed": passed, "tests": tests}


def _passes(row: Mapping[str, Any]) -> int:
    return 1 if row_status(row) is Status.PASS else 0


def _rated_test(test: Any, moved: Mapping[tuple[int, int, int], int], required: float) -> Any:
    if not isinstance(test, Mapping):
        return test
    key = (int(test.get("testIdx") or 0), int(test.get("promptIdx") or 0), int(test.get("providerIdx") or 0))
    runs = int(_number(test.get("runs")))
    passes = int(_number(test.get("passes"))) + moved.get(key, 0)
    if not moved.get(key) or not 0 <= passes <= runs:
        return test
    stats = repeat_stats([True] * passes + [False] * (runs - passes), [])
    return {
        **test,
        "passes": passes,
        "passRate": stats.pass_rate,
        "passRateInterval": list(stats.pass_rate_interval),
        "passAll": stats.pass_all,
        "passAny": stats.pass_any,
        "flaky": stats.flaky,
        "pass": stats.passed_at(required),
    }


def _repeats_interval(repeats: Mapping[str, Any]) -> tuple[float, float]:
    """The suite's pass rate interval of a run with repeats, each test (over its repeats) a unit."""
    tests = [test for test in repeats["tests"] if isinstance(test, Mapping)]
    return suite_pass_rate_interval(
        [(int(_number(t.get("passes"))), int(_number(t.get("runs")))) for t in tests]
    )


def _rated_aggregates(aggregates: Mapping[str, Any], changes: Changes) -> dict[str, Any]:
    """``results.aggregates`` with the counts, pass rate and mean score of the run and of each column
    counting the rated rows as rated."""
    out = dict(aggregates)
    if isinstance(aggregates.get("counts"), Mapping):
        counts, rate, mean = _rated_figures(aggregates["counts"], aggregates, changes)
        out.update(counts=counts, passRate=rate, meanScore=mean)
    if isinstance(aggregates.get("columns"), list):
        out["columns"] = [_rated_aggregate_column(column, changes) for column in aggregates["columns"]]
    return out


def _rated_aggregate_column(column: Any, changes: Changes) -> Any:
    if not isinstance(column, Mapping):
        return column
    at = (int(column.get("promptIndex") or 0), int(column.get("providerIndex") or 0))
    mine = [(graded, rated) for graded, rated in changes if column_indexes(rated) == at]
    if not mine:
        return column
    counts, rate, mean = _rated_figures(column, column, mine)
    return {**column, **counts, "passRate": rate, "meanScore": mean}


def _rated_figures(
    counts: Mapping[str, Any], figures: Mapping[str, Any], changes: Changes
) -> tuple[dict[str, Any], Any, Any]:
    """The rows' counts (``rows``, ``passed``, ``failed``, ``errors`` of ``counts``), pass rate and mean
    score (of ``figures``: over the rows that are not ERROR) with ``changes`` rated."""
    by: Counter[str] = Counter()
    scores = 0.0
    for graded, rated in changes:
        for row, sign in ((rated, 1), (graded, -1)):
            status = row_status(row)
            by[_FIGURES[status]] += sign
            scores += 0.0 if status is Status.ERROR else sign * _number(row_score(row))
    keys = ("rows", *_FIGURES.values())
    moved = {key: _adjusted(counts, key, by) for key in keys if key in counts}
    rate = figures.get("passRate")
    if isinstance(moved.get("passed"), int) and isinstance(moved.get("rows"), int):
        rate = pass_rate(moved["passed"], moved["rows"])
    scored_before, scored_after = (_scored(c) for c in (counts, moved))
    mean = figures.get("meanScore")
    if scored_before != scored_after or scores:
        total = _number(mean) * scored_before + scores
        mean = total / scored_after if scored_after else None
    return moved, rate, mean


def _scored(counts: Mapping[str, Any]) -> int:
    """How many rows have a score that counts (not ERROR)."""
    return int(_number(counts.get("passed")) + _number(counts.get("failed")))
