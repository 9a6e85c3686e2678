"""The console: results table, aggregates and summary of a run, and the progress bar (the only module of
evalh that imports ``rich`` for results).

On a terminal the output is coloured with rounded boxes; anywhere else (a CI log, a pipe, a captured
stream) it is plain text with ASCII boxes, 120 columns wide unless ``COLUMNS`` says otherwise. Every
string taken from a run is shown as :class:`rich.text.Text` with control characters escaped, so neither
rich markup nor terminal escape sequences in an output can take effect.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, TextIO

from rich import box
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
from rich.table import Table
from rich.text import Text

from evalh.model import RunResult, Status, TestResult
from evalh.reports.json import aggregates_to_json
from evalh.reports.textutil import (
    collapse_whitespace,
    escape_controls,
    failed_assertion_lines,
    output_text,
    truncate,
)

__all__ = ["PROGRESS_MIN_ROWS", "print_summary", "progress"]

PROGRESS_MIN_ROWS = 50
PLAIN_WIDTH = 120
CELL_LIMIT = 60
TEST_WIDTH = 40
NAME_WIDTH = 24
REASON_LIMIT = 100
_STATUS_STYLE = {Status.PASS: "bold green", Status.FAIL: "bold red", Status.ERROR: "bold yellow"}


def _console(file: TextIO | None) -> Console:
    console = Console(file=file or sys.stdout, highlight=False, emoji=False, soft_wrap=False)
    if not console.is_terminal and "COLUMNS" not in os.environ:
        console.width = PLAIN_WIDTH
    return console


def _box(console: Console) -> box.Box:
    return box.ROUNDED if console.is_terminal else box.ASCII


def _text(value: Any, limit: int = CELL_LIMIT, style: str = "") -> Text:
    text = escape_controls(collapse_whitespace(output_text(value)), one_line=True)
    return Text(truncate(text, limit), style=style)


def _number(value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return escape_controls(output_text(value), one_line=True)
    return str(value) if isinstance(value, int) else f"{value:.3f}"


def _describe(row: TestResult) -> str:
    if row.test.description:
        return row.test.description
    return ", ".join(f"{k}={output_text(v)}" for k, v in row.test.vars.items())


def _reason_cell(row: TestResult, verbose: bool, limit: int | None) -> Text:
    if row.status is Status.PASS:
        return Text("")
    reason = row.reason or row.error or ""
    if not verbose:
        return _text(reason, limit or REASON_LIMIT)
    lines = [collapse_whitespace(reason), *failed_assertion_lines(row.assertions)]
    return Text(escape_controls("\n".join(lines)))


def _results_table(
    console: Console, rows: Sequence[TestResult], verbose: bool, cell_limit: int | None = None
) -> Table:
    """``cell_limit`` (--table-cell-max-length) cuts the test and reason cells at that many characters."""
    many_providers = len({r.provider_index for r in rows}) > 1
    many_prompts = len({r.prompt_index for r in rows}) > 1
    table = Table(box=_box(console), show_lines=verbose, title="Results", title_justify="left")
    table.add_column("#", justify="right", no_wrap=True)
    table.add_column("Test", overflow="fold", max_width=TEST_WIDTH)
    if many_providers:
        table.add_column("Provider", overflow="fold", max_width=NAME_WIDTH)
    if many_prompts:
        table.add_column("Prompt", overflow="fold", max_width=NAME_WIDTH)
    table.add_column("Status", no_wrap=True)
    table.add_column("Score", justify="right", no_wrap=True)
    table.add_column("Reason", overflow="fold")
    for row in rows:
        number = str(row.test.index + 1) + (f".{row.repeat_index + 1}" if row.repeat_index else "")
        cells: list[Text] = [Text(number), _text(_describe(row), cell_limit or CELL_LIMIT)]
        if many_providers:
            cells.append(_text(row.provider.display, NAME_WIDTH * 2))
        if many_prompts:
            cells.append(_text(row.prompt.label, NAME_WIDTH * 2))
        cells.append(Text(row.status.value, style=_STATUS_STYLE[row.status]))
        cells.append(Text(f"{row.score:.2f}"))
        cells.append(_reason_cell(row, verbose, cell_limit))
        table.add_row(*cells)
    return table


def _named_metric_means(rows: Sequence[TestResult]) -> dict[str, float]:
    sums: dict[str, float] = {}
    counts: dict[str, int] = {}
    for row in rows:
        if row.status is Status.ERROR:
            continue
        for name, value in row.named_scores.items():
            sums[name] = sums.get(name, 0.0) + value
            counts[name] = counts.get(name, 0) + 1
    return {name: sums[name] / counts[name] for name in sums}


def _summary_table(run: RunResult) -> Table:
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold")
    grid.add_column(justify="right")
    figures = [
        ("Tests", str(len(run.results))),
        ("Passed", str(run.count(Status.PASS))),
        ("Failed", str(run.count(Status.FAIL))),
        ("Errors", str(run.count(Status.ERROR))),
        ("Pass rate", f"{run.pass_rate:.2f}%"),
        ("Duration", f"{run.duration_ms / 1000.0:.2f} s"),
    ]
    if run.interrupted:
        signal_name = run.interrupted_by or "SIGINT"
        figures.append(("Interrupted", f"by {signal_name} (partial results, {run.not_run} not run)"))
    means = {} if run.aggregates.named_scores else _named_metric_means(run.results)
    for name, mean in sorted(means.items()):
        figures.append((f"Mean {escape_controls(name, one_line=True)}", f"{mean:.3f}"))
    for label, value in figures:
        grid.add_row(Text(label), Text(value))
    return grid


def _usage_table(console: Console, run: RunResult) -> Table:
    table = Table(box=_box(console), title="Provider usage", title_justify="left")
    for header in ("Provider", "Requests", "Texts", "Tokens", "Cache hits", "Cost"):
        table.add_column(header, justify="left" if header == "Provider" else "right")
    for item in run.provider_usage:
        u = item.usage
        table.add_row(
            _text(item.provider, 50),
            str(u.requests),
            str(u.texts),
            str(u.total_tokens),
            str(u.cached),
            f"${u.cost:.4f}",
        )
    return table


# Aggregates (evalh.runner.aggregates): known keys get tailored tables, unknown ones a generic view.
_LABELS = {
    "mean": "Mean",
    "min": "Min",
    "max": "Max",
    "count": "Count",
    "rows": "Rows",
    "passed": "Passed",
    "failed": "Failed",
    "errors": "Errors",
    "passRate": "Pass rate",
    "meanScore": "Mean score",
    "namedScores": "Named scores",
    "macroF1": "Macro-F1",
    "accuracy": "Accuracy",
    "unknownPredictions": "Unknown",
    "provider": "Provider",
    "assertionTypes": "Assertion types",
    "columns": "Side by side (provider x prompt)",
    "classification": "Classification",
    "derivedMetrics": "Derived metrics",
    "metric": "Metric",
    "type": "Type",
    "class": "Class",
    "prompt": "Prompt",
    "precision": "Precision",
    "recall": "Recall",
    "f1": "F1",
    "support": "Support",
}
_NAME_COLUMNS = {"namedScores": "metric", "assertionTypes": "type"}
_HIDDEN_FIELDS = frozenset({"providerIndex", "promptIndex", "perClass"})
_IN_SUMMARY = frozenset({"passRate", "counts"})  # already among the summary figures


def _figure(field_name: str, value: Any) -> str:
    if value is None:
        return "-"
    if field_name.endswith("Rate") and isinstance(value, int | float) and not isinstance(value, bool):
        return f"{value:.2f}%"
    if isinstance(value, Mapping):
        return ", ".join(f"{k}={_number(v)}" for k, v in value.items())
    return _number(value)


def _label(field_name: str) -> str:
    return _LABELS.get(field_name, escape_controls(str(field_name), one_line=True))


def _records_table(
    console: Console, title: str, records: Sequence[Mapping[str, Any]], key: str = ""
) -> Table:
    """One row per record; ``key`` names the first column when records come from a name -> record map."""
    fields = [f for f in dict.fromkeys(k for r in records for k in r) if f not in _HIDDEN_FIELDS and f != key]
    table = Table(box=_box(console), title=Text(title), title_justify="left")
    if key:
        table.add_column(Text(_label(key)))
    for field_name in fields:
        numeric = all(isinstance(r.get(field_name), int | float | None) for r in records)
        table.add_column(Text(_label(field_name)), justify="right" if numeric else "left")
    for record in records:
        cells = [_text(record.get(key), 50)] if key else []
        cells.extend(_text(_figure(f, record.get(f)), 80) for f in fields)
        table.add_row(*cells)
    return table


def _named_records(value: Mapping[str, Any], key: str) -> list[dict[str, Any]]:
    return [
        {key: name, **(item if isinstance(item, Mapping) else {"value": item})}
        for name, item in value.items()
    ]


def _per_class_tables(console: Console, classification: Sequence[Mapping[str, Any]]) -> list[Table]:
    tables = []
    for record in classification:
        per_class = record.get("perClass")
        if isinstance(per_class, Mapping) and per_class:
            title = f"Per class: [{record.get('provider')}] {record.get('prompt')}"
            tables.append(
                _records_table(console, escape_controls(title), _named_records(per_class, "class"), "class")
            )
    return tables


def _aggregate_tables(
    console: Console, aggregates: Mapping[str, Any], verbose: bool
) -> tuple[Table, list[Table]]:
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold")
    grid.add_column(justify="right")
    tables: list[Table] = []
    for key, value in aggregates.items():
        if key in _IN_SUMMARY or value in (None, [], {}):
            continue
        title = _label(key)
        if key == "columns" and isinstance(value, list) and len(value) < 2:
            continue  # a side-by-side view of one column says nothing the summary does not
        if isinstance(value, Mapping):
            name = _NAME_COLUMNS.get(key, "name")
            tables.append(_records_table(console, title, _named_records(value, name), name))
        elif isinstance(value, list | tuple) and all(isinstance(v, Mapping) for v in value):
            tables.append(_records_table(console, title, value))
            if key == "classification" and verbose:
                tables.extend(_per_class_tables(console, value))
        else:
            grid.add_row(Text(title), _text(_figure(key, value), 80))
    return grid, tables


def _print_aggregates(console: Console, aggregates: Mapping[str, Any], verbose: bool) -> None:
    grid, tables = _aggregate_tables(console, aggregates, verbose)
    if not grid.row_count and not tables:
        return
    console.print(Text("Aggregates", style="bold"))
    if grid.row_count:
        console.print(grid)
    for table in tables:
        console.print(table)


def print_summary(
    run: RunResult,
    *,
    console_file: TextIO | None = None,
    show_table: bool = True,
    max_rows: int = 50,
    verbose: bool = False,
    cell_limit: int | None = None,
) -> None:
    """Print the results table (first ``max_rows`` rows, ``max_rows <= 0`` for all), the aggregates when
    the run has any, the summary figures and the per-provider usage. ``verbose`` shows whole reasons and
    every failed assertion of a row."""
    console = _console(console_file)
    if show_table and run.results:
        limit = len(run.results) if max_rows <= 0 else max_rows
        console.print(_results_table(console, run.results[:limit], verbose, cell_limit))
        if len(run.results) > limit:
            console.print(Text(f"... and {len(run.results) - limit} more", style="dim"))
    _print_aggregates(console, aggregates_to_json(run.aggregates), verbose)
    console.print(_summary_table(run))
    if run.provider_usage:
        console.print(_usage_table(console, run))


@contextlib.contextmanager
def progress(total: int) -> Iterator[Callable[[int], None]]:
    """A progress bar on stderr for ``total`` rows; yields ``advance(n)``. A no-op when stderr is not a
    terminal or the run is small (fewer than :data:`PROGRESS_MIN_ROWS` rows)."""
    console = Console(stderr=True)
    if total < PROGRESS_MIN_ROWS or not console.is_terminal:
        yield lambda n: None
        return
    bar = Progress(
        TextColumn("Evaluating"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        console=console,
        transient=True,
    )
    with bar:
        task = bar.add_task("rows", total=total)
        yield lambda n: bar.advance(task, n)
