"""A run as CSV in promptfoo's web-UI export layout.

One line per test (and repeat): ``Description`` (when any test has one), one column per var, then for each
``[provider] prompt-label`` column six cells: the output text (headed by the column name), ``Status``
(PASS/FAIL/ERROR), ``Score`` (2 decimals), ``Named Scores`` (JSON), ``Grader Reason`` and ``Comment``
(as promptfoo fills it: the comment of a person's rating, empty when the row is not rated).

Every text cell (outputs, reasons, vars, descriptions, column names) is guarded against formula
injection as OWASP recommends: a cell starting with ``=``, ``+``, ``-``, ``@``, a tab or a carriage
return gets a leading ``'``, so a spreadsheet shows it as text instead of evaluating it
(``=HYPERLINK(...)`` from a model stays inert). A cell that is a plain number (``-0.5``, ``+3``,
``-1e-3``) is left as it is: it cannot hold a formula, and spreadsheets still read it as a number.
"""

from __future__ import annotations

import csv
import io
import re
from typing import Any

from evalh.model import RunRecord, TestCase, TestResult
from evalh.reports.serialize import dumps
from evalh.reports.textutil import escape_controls, output_text

__all__ = ["formula_safe", "to_csv_text"]

_PER_COLUMN = ("Status", "Score", "Named Scores", "Grader Reason", "Comment")
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")


def formula_safe(text: str) -> str:
    """``text`` with a leading ``'`` when a spreadsheet would read it as a formula (OWASP CSV injection)."""
    if text.startswith(_FORMULA_START) and not _NUMBER.fullmatch(text):
        return "'" + text
    return text


def _cell(value: Any) -> str:
    return formula_safe(escape_controls(output_text(value)))


def _var_names(tests: list[TestCase]) -> list[str]:
    names: dict[str, None] = {}
    for test in tests:
        names.update(dict.fromkeys(test.vars))
    return list(names)


def _row_cells(row: TestResult | None) -> list[str]:
    if row is None:
        return ["", "", "", "", "", ""]
    reason = row.error if row.error and not row.reason else row.reason
    return [
        _cell(row.output if row.output is not None else row.error),
        row.status.value,
        f"{row.score:.2f}",
        dumps(dict(row.named_scores)) if row.named_scores else "",
        _cell(reason),
        _cell(row.rating.comment) if row.rating is not None else "",
    ]


def to_csv_text(run: RunRecord) -> str:
    """The CSV document of ``run`` (header line first, ``\\r\\n`` line ends as the csv module writes)."""
    columns = run.aggregates.columns
    lines: dict[tuple[int, int], dict[tuple[int, int], TestResult]] = {}
    tests: dict[tuple[int, int], TestCase] = {}
    for column in columns:
        for row in column.rows:
            key = (row.test.index, row.repeat_index)
            lines.setdefault(key, {})[column.key] = row
            tests.setdefault(key, row.test)
    keys = sorted(lines)
    test_list = [tests[k] for k in keys]
    with_description = any(t.description for t in test_list)
    var_names = _var_names(test_list)
    header = (["Description"] if with_description else []) + [_cell(name) for name in var_names]
    for column in columns:
        header.extend([_cell(column.name), *_PER_COLUMN])
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(header)
    for key in keys:
        test = tests[key]
        cells = [_cell(test.description or "")] if with_description else []
        cells.extend(_cell(test.vars.get(name, "")) for name in var_names)
        for column in columns:
            cells.extend(_row_cells(lines[key].get(column.key)))
        writer.writerow(cells)
    return buffer.getvalue()
