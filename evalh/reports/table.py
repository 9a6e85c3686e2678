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

from evalh.model import GradedAssertion, RunResult, Status, TestResult
from evalh.reports.serialize import dumps
from evalh.reports.textutil import collapse_whitespace, escape_controls, output_text, truncate

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


def _failed_lines(graded: Sequence[GradedAssertion], depth: int = 0) -> list[str]:
    lines: list[str] = []
    for item in graded:
        if not item.passed:
            lines.append(f"{'  ' * depth}- {item.spec.full_type}: {collapse_whitespace(item.reason)}")
            lines.extend(_failed_lines(item.children, depth + 1))
    return lines


def _reason_cell(row: TestResult, verbose: bool) -> Text:
    if row.status is Status.PASS:
        return Text("")
    reason = row.reason or row.error or ""
    if not verbose:
        return _text(reason, REASON_LIMIT)
    lines = [collapse_whitespace(reason), *_failed_lines(row.assertions)]
    return Text(escape_controls("\n".join(lines)))


def _results_table(console: Console, rows: Sequence[TestResult], verbose: bool) -> Table:
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
        cells: list[Text] = [Text(number), _text(_describe(row))]
        if many_providers:
            cells.append(_text(row.provider.display, NAME_WIDTH * 2))
        if many_prompts:
            cells.append(_text(row.prompt.label, NAME_WIDTH * 2))
        cells.append(Text(row.status.value, style=_STATUS_STYLE[row.status]))
        cells.append(Text(f"{row.score:.2f}"))
        cells.append(_reason_cell(row, verbose))
        table.add_row(*cells)
    return table


def _named_metric_means(rows: Sequence[TestResult]) -> dict[str, float]:
    sums: dict[str, float] = {}
    counts: dict[str, int] = {}
    for row in rows:
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
        figures.append(("Interrupted", "yes (partial results)"))
    for name, mean in sorted(_named_metric_means(run.results).items()):
        figures.append((f"Mean {escape_controls(name, one_line=True)}", f"{mean:.3f}"))
    for label, value in figures:
        grid.add_row(label, value)
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


def _scalar(value: Any) -> bool:
    return value is None or isinstance(value, str | int | float | bool)


def _mapping_table(console: Console, title: str, value: Mapping[str, Any]) -> Table:
    """A name -> number map as two columns, or a name -> {field: number} map as one row per name."""
    fields = list(dict.fromkeys(k for v in value.values() if isinstance(v, Mapping) for k in v))
    table = Table(box=_box(console), title=title, title_justify="left")
    table.add_column("Name")
    for field_name in fields or ["Value"]:
        table.add_column(escape_controls(str(field_name), one_line=True), justify="right")
    for name, item in value.items():
        if isinstance(item, Mapping):
            cells = [
                _text(_number(item.get(f)), 30) if _scalar(item.get(f)) else _text(item.get(f))
                for f in fields
            ]
        else:
            cells = [_text(_number(item) if _scalar(item) else dumps(item))]
            cells.extend(Text("") for _ in fields[1:])
        table.add_row(_text(name, 50), *cells)
    return table


def _records_table(console: Console, title: str, records: Sequence[Mapping[str, Any]]) -> Table:
    fields = list(dict.fromkeys(k for r in records for k in r))
    table = Table(box=_box(console), title=title, title_justify="left")
    for field_name in fields:
        table.add_column(escape_controls(str(field_name), one_line=True))
    for record in records:
        table.add_row(
            *(
                _text(_number(record.get(f)) if _scalar(record.get(f)) else dumps(record.get(f)))
                for f in fields
            )
        )
    return table


def _print_aggregates(console: Console, aggregates: Mapping[str, Any]) -> None:
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold")
    grid.add_column(justify="right")
    tables: list[Table] = []
    for key, value in aggregates.items():
        title = escape_controls(str(key), one_line=True)
        if _scalar(value):
            grid.add_row(title, _number(value))
        elif isinstance(value, Mapping) and value:
            tables.append(_mapping_table(console, title, value))
        elif isinstance(value, list | tuple) and value and all(isinstance(v, Mapping) for v in value):
            tables.append(_records_table(console, title, value))
        elif value:
            grid.add_row(title, _text(dumps(value), 80))
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
) -> None:
    """Print the results table (first ``max_rows`` rows, ``max_rows <= 0`` for all), the aggregates when
    the run has any, the summary figures and the per-provider usage. ``verbose`` shows whole reasons and
    every failed assertion of a row."""
    console = _console(console_file)
    if show_table and run.results:
        limit = len(run.results) if max_rows <= 0 else max_rows
        console.print(_results_table(console, run.results[:limit], verbose))
        if len(run.results) > limit:
            console.print(Text(f"... and {len(run.results) - limit} more", style="dim"))
    if run.aggregates:
        _print_aggregates(console, run.aggregates)
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
