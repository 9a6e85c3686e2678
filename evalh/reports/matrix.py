"""The results matrix of the console (promptfoo's table): one row per test (its vars), one column per
prompt x provider, each cell a status, a score, the output and the failing reasons beneath; a rated
cell says who rated it and their comment.

Built from a live run's rows or from a JSON report's rows (a stored run), so ``evalh run`` and
``evalh runs show`` print the same table. Only the tests shown are turned into cells; when the table
is cut, the tests with a failing or erroring cell come first.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from evalh.model import RowTrace, Status, TestResult
from evalh.providers.tools import tool_call_lines
from evalh.reports.codec_read import (
    column_indexes,
    row_components,
    row_description,
    row_error,
    row_line,
    row_prompt,
    row_provider,
    row_rating,
    row_response,
    row_score,
    row_status,
    row_trace,
    row_vars,
    trace_from_json,
)
from evalh.reports.textutil import collapse_whitespace, failed_assertion_lines, output_text

__all__ = [
    "Cell",
    "Matrix",
    "MatrixRow",
    "column_label",
    "matrix_of_report",
    "matrix_of_results",
    "rating_note",
    "trace_line",
]


@dataclass(frozen=True)
class Cell:
    status: str  # PASS, FAIL, ERROR
    score: float
    output: str
    reasons: tuple[str, ...]
    calls: tuple[str, ...] = ()  # an output that is tool calls, as ``name(arguments)`` lines to show
    rating: str | None = None  # a rated cell: ``rated by ana: the comment`` (its status is the rating's)


@dataclass
class MatrixRow:
    number: str  # the test's 1-based number, ".2" for a repeat
    description: str | None
    vars: Mapping[str, Any]
    cells: dict[int, Cell] = field(default_factory=dict)


@dataclass
class Matrix:
    columns: list[str]  # "[provider] prompt" headers, in the config's order
    rows: list[MatrixRow]
    hidden: int = 0  # tests not shown
    hidden_failing: int = 0  # of which with a failing or erroring cell
    failures_first: bool = False


def _plan(keys: Iterable[tuple[Hashable, bool]], max_rows: int) -> tuple[list[Hashable], int, int, bool]:
    """The tests to show in order, how many are hidden (and failing), and whether failures moved
    first. ``keys``: each row's test and whether the row failed or errored."""
    order: dict[Hashable, bool] = {}
    for key, failing in keys:
        order[key] = order.get(key, False) or failing
    tests = list(order)
    if max_rows <= 0 or len(tests) <= max_rows:
        return tests, 0, 0, False
    ranked = [t for t in tests if order[t]] + [t for t in tests if not order[t]]
    shown = set(ranked[:max_rows])
    hidden_failing = sum(1 for t in ranked[max_rows:] if order[t])
    return [t for t in ranked if t in shown], len(tests) - max_rows, hidden_failing, True


def _build(
    rows: Sequence[Any],
    max_rows: int,
    key_of: Callable[[Any], tuple[int, int]],
    column_of: Callable[[Any], tuple[tuple[int, int], str]],
    failing: Callable[[Any], bool],
    row_of: Callable[[Any], MatrixRow],
    cell_of: Callable[[Any], Cell],
) -> Matrix:
    shown, hidden, hidden_failing, moved = _plan(((key_of(r), failing(r)) for r in rows), max_rows)
    wanted = set(shown)
    columns: dict[tuple[int, int], str] = {}
    built: dict[Hashable, MatrixRow] = {}
    for row in rows:
        column, label = column_of(row)
        columns.setdefault(column, label)
        key = key_of(row)
        if key in wanted:
            built.setdefault(key, row_of(row))
    index = {column: i for i, column in enumerate(sorted(columns))}
    for row in rows:
        key = key_of(row)
        if key in wanted:
            built[key].cells[index[column_of(row)[0]]] = cell_of(row)
    return Matrix(
        [columns[c] for c in sorted(columns)], [built[k] for k in shown], hidden, hidden_failing, moved
    )


def column_label(provider: str, prompt: str) -> str:
    """``[provider] prompt``; recorded outputs (provider and prompt both ``recorded``) say it once."""
    return provider if provider == prompt else f"[{provider}] {prompt}"


def _number(test_index: int, repeat_index: int) -> str:
    return str(test_index + 1) + (f".{repeat_index + 1}" if repeat_index else "")


def trace_line(trace: RowTrace) -> str:
    """What a failed row's cell says of its trace: ``trace: 4 spans (1 error)``, for `evalh view` to show."""
    errors = sum(span.status_code == "ERROR" for span in trace.spans)
    notes = [f"{errors} error{'s' if errors != 1 else ''}"] if errors else []
    notes += [f"{trace.dropped} dropped"] if trace.dropped else []
    count = len(trace.spans)
    return f"trace: {count} span{'s' if count != 1 else ''}" + (f" ({', '.join(notes)})" if notes else "")


def _result_cell(row: TestResult) -> Cell:
    reasons: list[str] = []
    if row.status is not Status.PASS:
        reasons = failed_assertion_lines(row.assertions) or [collapse_whitespace(row.error or row.reason)]
        reasons += [trace_line(row.trace)] if row.trace is not None else []
    output = output_text(row.output) if row.output is not None else ""
    calls = tuple(tool_call_lines(row.output) or ())
    rated = None if row.rating is None else rating_note(row.rating.reviewer, row.rating.comment)
    return Cell(row.status.value, row.score, output, tuple(reasons), calls, rated)


def rating_note(reviewer: str, comment: str) -> str:
    """What a rated cell says of its rating: ``rated by ana: the comment``."""
    note = f"rated by {reviewer}" if reviewer else "rated"
    return f"{note}: {comment}" if comment else note


def _result_column(row: TestResult) -> tuple[tuple[int, int], str]:
    return (row.prompt_index, row.provider_index), column_label(row.provider.display, row.prompt.label)


def matrix_of_results(rows: Sequence[TestResult], max_rows: int) -> Matrix:
    """The matrix of a live run (``max_rows`` tests at most; 0: all)."""
    return _build(
        rows,
        max_rows,
        key_of=lambda r: (r.test.index, r.repeat_index),
        column_of=_result_column,
        failing=lambda r: r.status is not Status.PASS,
        row_of=lambda r: MatrixRow(
            _number(r.test.index, r.repeat_index), r.test.description, dict(r.test.vars)
        ),
        cell_of=_result_cell,
    )


def _report_reasons(row: Mapping[str, Any]) -> tuple[str, ...]:
    if row_status(row) is Status.PASS:
        return ()
    components = row_components(row)
    lines = [
        f"- {(c.get('assertion') or {}).get('type', '?')}: {collapse_whitespace(str(c.get('reason') or ''))}"
        for c in components
        if isinstance(c, Mapping) and not c.get("pass")
    ] or [collapse_whitespace(str(row_error(row) or ""))]
    trace = trace_from_json(row_trace(row))
    return (*lines, trace_line(trace)) if trace is not None else tuple(lines)


def _report_cell(row: Mapping[str, Any]) -> Cell:
    response = row_response(row)
    score = row_score(row)
    number = float(score) if isinstance(score, int | float) and not isinstance(score, bool) else 0.0
    output = response.get("output")
    calls = tuple(tool_call_lines(output) or ())
    rating = row_rating(row)
    rated = (
        None
        if rating is None
        else rating_note(str(rating.get("reviewer") or ""), str(rating.get("comment") or ""))
    )
    return Cell(row_status(row).value, number, output_text(output), _report_reasons(row), calls, rated)


def _report_label(row: Mapping[str, Any]) -> str:
    provider = row_provider(row) or {}
    prompt = row_prompt(row) or {}
    name = provider.get("label") or provider.get("id") if isinstance(provider, Mapping) else provider
    label = prompt.get("label") or prompt.get("raw") if isinstance(prompt, Mapping) else prompt
    return column_label(output_text(name), output_text(label))


def matrix_of_report(rows: Sequence[Mapping[str, Any]], max_rows: int) -> Matrix:
    """The matrix of a JSON report's ``results.results`` (a stored run or a report file)."""
    return _build(
        rows,
        max_rows,
        key_of=row_line,
        column_of=lambda r: (column_indexes(r), _report_label(r)),
        failing=lambda r: row_status(r) is not Status.PASS,
        row_of=lambda r: MatrixRow(
            _number(*row_line(r)),
            row_description(r),
            row_vars(r) if isinstance(row_vars(r), Mapping) else {},
        ),
        cell_of=_report_cell,
    )
