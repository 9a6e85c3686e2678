"""The console: results matrix, aggregates and summary of a run, and the progress bar.

How text reaches the console (terminal or plain, nothing wrapped off a terminal, controls escaped) is
:mod:`evalh.reports.console`'s; the matrix is :mod:`evalh.reports.results_table`'s.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TextIO

from rich.console import Console
from rich.table import Table
from rich.text import Text

from evalh.common import activity
from evalh.model import CacheShare, RepeatSummary, RunRecord, Status, TestResult
from evalh.model.verdict import pass_rate
from evalh.reports.codec_read import repeats_from_json
from evalh.reports.console import make_console, safe_text, table_box
from evalh.reports.errorreasons import error_reasons_line
from evalh.reports.json import aggregates_to_json
from evalh.reports.repeats_view import (
    print_repeats,
    repeats_headline,
    report_columns,
    report_descriptions,
    report_interval_text,
    test_label,
)
from evalh.reports.textutil import (
    escape_controls,
    interval_text,
    output_text,
)

if TYPE_CHECKING:  # the matrix (reports/matrix.py, results_table.py): imported when a table is printed
    from evalh.reports.matrix import Matrix

__all__ = [
    "HEARTBEAT_S",
    "PROGRESS_MIN_ROWS",
    "print_lines",
    "print_report",
    "print_summary",
    "progress",
    "status_line",
]

PROGRESS_MIN_ROWS = 50  # a run that calls no provider shows progress from this many rows
HEARTBEAT_S = 15.0  # off a terminal: a status line this often while providers are called


def _number(value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return escape_controls(output_text(value), one_line=True)
    return str(value) if isinstance(value, int) else f"{value:.3f}"


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


def _summary_table(run: RunRecord) -> Table:
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold")
    grid.add_column(justify="right")
    figures = [
        ("Tests", str(len(run.results))),
        ("Passed", str(run.count(Status.PASS))),
        ("Failed", str(run.count(Status.FAIL))),
        ("Errors", str(run.count(Status.ERROR))),
        ("Pass rate", f"{run.pass_rate:.2f}% {interval_text(run.aggregates.pass_rate_interval)}"),
        *_repeats_line(run.aggregates.repeats),
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


def _repeats_line(repeats: RepeatSummary | None) -> list[tuple[str, str]]:
    return [] if repeats is None else [("Repeats", repeats_headline(repeats))]


def _usage_table(console: Console, run: RunRecord) -> Table:
    table = Table(box=table_box(console), title="Provider usage", title_justify="left")
    for header in ("Provider", "Requests", "Texts", "Tokens", "Cache hits", "Cost"):
        table.add_column(header, justify="left" if header == "Provider" else "right")
    for item in run.provider_usage:
        u = item.usage
        table.add_row(
            safe_text(item.provider, 50),
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
    table = Table(box=table_box(console), title=Text(title), title_justify="left")
    if key:
        table.add_column(Text(_label(key)))
    for field_name in fields:
        numeric = all(isinstance(r.get(field_name), int | float | None) for r in records)
        table.add_column(Text(_label(field_name)), justify="right" if numeric else "left")
    for record in records:
        cells = [safe_text(record.get(key), 50)] if key else []
        cells.extend(safe_text(_figure(f, record.get(f)), 80) for f in fields)
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
            grid.add_row(Text(title), safe_text(_figure(key, value), 80))
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


def print_lines(lines: Sequence[str], *, console_file: TextIO | None = None) -> None:
    """Plain lines of run text (a comparison), control characters escaped and no markup read."""
    console = make_console(console_file)
    for line in lines:
        console.print(Text(escape_controls(line)), soft_wrap=True)


def print_summary(
    run: RunRecord,
    *,
    console_file: TextIO | None = None,
    show_table: bool = True,
    max_rows: int = 50,
    verbose: bool = False,
    cell_limit: int | None = None,
) -> None:
    """Print the results matrix (``max_rows`` tests at most, failing ones first when cut; ``max_rows <=
    0`` for all), the aggregates when the run has any, the summary figures and the per-provider usage.
    ``verbose`` shows whole reasons."""
    console = make_console(console_file)
    if show_table and run.results:
        from evalh.reports.matrix import matrix_of_results

        _print_matrix(console, matrix_of_results(run.results, max_rows), verbose, cell_limit)
    _print_aggregates(console, aggregates_to_json(run.aggregates), verbose)
    descriptions = {row.test.index: test_label(row.test.description, row.test.vars) for row in run.results}
    columns = {column.key: column.name for column in run.aggregates.columns}
    print_repeats(console, run.aggregates.repeats, descriptions, columns, max_rows)
    console.print(_summary_table(run))
    _print_cache_share(console, run.cache_share)
    reasons = None if show_table else error_reasons_line(run.results)
    if reasons is not None:  # no table shows them: CI logs still say why rows errored
        console.print(reasons)
    if run.provider_usage:
        console.print(_usage_table(console, run))


def _print_cache_share(console: Console, share: CacheShare | None) -> None:
    """The run's cache sentence, on a line of its own (with or without the table)."""
    sentence = share.sentence() if share is not None else None
    if sentence is not None:
        console.print(Text(sentence + "."))


def _print_matrix(console: Console, matrix: Matrix, verbose: bool, cell_limit: int | None) -> None:
    from evalh.reports.results_table import hidden_note, results_table

    console.print(results_table(console, matrix, cell_limit=cell_limit, verbose=verbose))
    note = hidden_note(matrix)
    if note is not None:
        console.print(note)


def print_report(
    document: Mapping[str, Any],
    *,
    console_file: TextIO | None = None,
    max_rows: int = 50,
    verbose: bool = False,
    cell_limit: int | None = None,
) -> None:
    """:func:`print_summary` for a JSON report (a stored run, ``evalh runs show``)."""
    console = make_console(console_file)
    results = document.get("results") or {}
    rows = results.get("results") or []
    if rows:
        from evalh.reports.matrix import matrix_of_report

        _print_matrix(console, matrix_of_report(rows, max_rows), verbose, cell_limit)
    _print_aggregates(console, results.get("aggregates") or {}, verbose)
    extra = results.get("evalh")
    repeats = repeats_from_json(extra.get("repeats") if isinstance(extra, Mapping) else None)
    print_repeats(console, repeats, report_descriptions(rows), report_columns(results), max_rows)
    stats = results.get("stats") or {}
    passed, failed, errors = (int(stats.get(k) or 0) for k in ("successes", "failures", "errors"))
    total = passed + failed + errors
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold")
    grid.add_column(justify="right")
    for name, figure in (
        ("Tests", str(total)),
        ("Passed", str(passed)),
        ("Failed", str(failed)),
        ("Errors", str(errors)),
        ("Pass rate", f"{pass_rate(passed, total):.2f}%{report_interval_text(stats)}"),
        *_repeats_line(repeats),
        ("Duration", f"{float(stats.get('durationMs') or 0) / 1000.0:.2f} s"),
    ):
        grid.add_row(name, figure)
    console.print(grid)
    _print_cache_share(
        console, CacheShare.from_json(extra.get("cache") if isinstance(extra, Mapping) else None)
    )


@contextlib.contextmanager
def progress(
    total: int, *, calls: bool = False, heartbeat_s: float = HEARTBEAT_S
) -> Iterator[Callable[[int], None]]:
    """Progress on stderr for ``total`` rows; yields ``advance(n)``. On a terminal: a bar with each
    provider's activity beneath, for every run that calls a provider (``calls``) and for runs of at
    least :data:`PROGRESS_MIN_ROWS` rows. Off a terminal, a run that calls providers prints a status
    line every ``heartbeat_s`` seconds while it lasts, so a slow or dead endpoint shows in a CI log."""
    activity.reset()
    console = make_console(stderr=True)
    if total <= 0 or (total < PROGRESS_MIN_ROWS and not calls):
        yield lambda n: None
        return
    if not console.is_terminal:
        if not calls:
            yield lambda n: None
            return
        with _heartbeat(console, total, heartbeat_s) as advance:
            yield advance
        return
    from evalh.reports.progress_bar import activity_bar  # rich's progress: only on a terminal

    bar = activity_bar(console)
    with bar:
        task = bar.add_task("rows", total=total)
        yield lambda n: bar.advance(task, n)


def status_line(done: int, total: int) -> str:
    """``evalh: 12/40 rows done; echo: 4 in flight (oldest 31 s), 8 done``."""
    providers = "; ".join(activity.describe(item) for item in activity.snapshot())
    return f"evalh: {done}/{total} rows done" + (f"; {providers}" if providers else "")


@contextlib.contextmanager
def _heartbeat(console: Console, total: int, every_s: float) -> Iterator[Callable[[int], None]]:
    done = [0]
    stop = threading.Event()

    def beat() -> None:
        while not stop.wait(every_s):
            console.print(Text(escape_controls(status_line(done[0], total))), soft_wrap=True)

    def advance(n: int) -> None:
        done[0] += n

    thread = threading.Thread(target=beat, name="evalh-progress", daemon=True)
    thread.start()
    try:
        yield advance
    finally:
        stop.set()
        thread.join()
