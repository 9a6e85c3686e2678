"""A run's repeats as people read them (console, ``evalh runs show``, ``-o summary.md``): a test's pass
rate with its interval (``14/20 70% [48-85%]``), a flaky mark, its verdict over the repeats, and the
suite's pass rate with its interval. The figures are :class:`evalh.model.RepeatSummary`'s; only the
wording lives here."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from evalh.model import RepeatSummary, TestRepeats
from evalh.reports.codec_read import (
    column_indexes,
    interval_from_json,
    row_cell,
    row_description,
    row_vars,
)
from evalh.reports.console import safe_text, table_box
from evalh.reports.textutil import interval_text, output_text, rate_text

__all__ = [
    "FLAKY_MARK",
    "ordered_tests",
    "print_repeats",
    "repeats_headline",
    "repeats_table",
    "report_columns",
    "report_descriptions",
    "report_interval_text",
    "test_label",
    "test_rate_text",
]

FLAKY_MARK = "flaky"
_DESCRIPTION_LIMIT = 60


def test_label(description: Any, variables: Any) -> str:
    """A test as the tables name it: its description, else its vars (``k=v, k=v``)."""
    if description:
        return str(description)
    if isinstance(variables, Mapping):
        return ", ".join(f"{key}={output_text(value)}" for key, value in variables.items())
    return ""


def test_rate_text(test: TestRepeats) -> str:
    """``14/20 70% [48-85%]``: a test's passes over its repeats, its pass rate and interval."""
    return rate_text(test.passes, test.runs, test.pass_rate_interval)


def repeats_headline(summary: RepeatSummary) -> str:
    """``5/8 tests passed at least 60% of 20 repeats (3 flaky)``: the verdict the exit code follows."""
    tests, flaky = len(summary.tests), summary.flaky
    required = (
        "every one" if summary.required_pass_rate >= 1 else f"at least {summary.required_pass_rate:.0%}"
    )
    return f"{summary.tests_passed}/{tests} tests passed {required} of {summary.count} repeats" + (
        f" ({flaky} flaky)" if flaky else ""
    )


def ordered_tests(summary: RepeatSummary, max_rows: int) -> tuple[list[TestRepeats], int]:
    """The tests to list (all, in order, when they fit in ``max_rows``; else the failing ones first,
    then the flaky ones) and how many were left out. ``max_rows <= 0``: all."""
    tests = list(summary.tests)
    if max_rows <= 0 or len(tests) <= max_rows:
        return tests, 0
    shown = sorted(tests, key=lambda test: (test.passed, not test.flaky))[:max_rows]
    order = {id(test): position for position, test in enumerate(tests)}
    return sorted(shown, key=lambda test: order[id(test)]), len(tests) - max_rows


def repeats_table(
    console: Console,
    summary: RepeatSummary,
    *,
    descriptions: Mapping[int, str],
    columns: Mapping[tuple[int, int], str],
    max_rows: int = 50,
) -> Sequence[Table | Text]:
    """Each test over its repeats as a table (``descriptions`` by test index, ``columns`` by (provider,
    prompt) index; a column is shown when the run has several), then a note of the tests left out."""
    several = len({(t.provider_index, t.prompt_index) for t in summary.tests}) > 1
    table = Table(box=table_box(console), title="Tests over repeats", title_justify="left")
    for header in (
        "#",
        "Test",
        *(("Column",) if several else ()),
        "Passes, pass rate [95% interval]",
        "",
        "",
    ):
        table.add_column(header, justify="right" if header == "#" else "left")
    shown, hidden = ordered_tests(summary, max_rows)
    for test in shown:
        column = (
            (safe_text(columns.get((test.provider_index, test.prompt_index), ""), 40),) if several else ()
        )
        table.add_row(
            str(test.test_index + 1),
            safe_text(descriptions.get(test.test_index, ""), _DESCRIPTION_LIMIT),
            *column,
            test_rate_text(test),
            Text(FLAKY_MARK, style="yellow") if test.flaky else "",
            Text("PASS", style="bold green") if test.passed else Text("FAIL", style="bold red"),
        )
    parts: list[Table | Text] = [table]
    if hidden:
        parts.append(Text(f"{hidden} more test(s) not shown (failing and flaky ones are listed first)."))
    return parts


def print_repeats(
    console: Console,
    repeats: RepeatSummary | None,
    descriptions: Mapping[int, str],
    columns: Mapping[tuple[int, int], str],
    max_rows: int,
) -> None:
    """Print :func:`repeats_table` when the run has repeats."""
    if repeats is not None:
        for part in repeats_table(
            console, repeats, descriptions=descriptions, columns=columns, max_rows=max_rows
        ):
            console.print(part)


def report_interval_text(stats: Mapping[str, Any]) -> str:
    """`` [48-85%]``: the suite's interval a report holds ("" in a report from before it)."""
    interval = interval_from_json(stats.get("passRateInterval"))
    return "" if interval is None else f" {interval_text(interval)}"


def report_descriptions(rows: Sequence[Mapping[str, Any]]) -> dict[int, str]:
    """Each test's description by test index, from a report's rows."""
    return {row_cell(row).test: test_label(row_description(row), row_vars(row)) for row in rows}


def report_columns(results: Mapping[str, Any]) -> dict[tuple[int, int], str]:
    """Each column's ``[provider] prompt`` name by (provider, prompt) index, from a report's ``results``."""
    names: dict[tuple[int, int], str] = {}
    for column in results.get("prompts") or ():
        prompt_index, provider_index = column_indexes(column)
        names[(provider_index, prompt_index)] = f"[{column.get('provider')}] {column.get('label')}"
    return names
