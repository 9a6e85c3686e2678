"""The results matrix (:mod:`evalh.reports.matrix`) drawn as a rich table: ``#``, the test's
description, its vars, then one column per prompt x provider whose cells read ``PASS 0.96`` over the
output, with each failing reason beneath; a rated cell is marked ``(rated)``, its reviewer and comment
beneath (plain text: a comment is data, never rich markup).

``--table-cell-max-length`` cuts outputs, vars and reasons; its default fits the terminal's width
(promptfoo's 250 off a terminal, where nothing wraps).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from evalh.reports.console import safe_text, table_box
from evalh.reports.matrix import Cell, Matrix

__all__ = ["MAX_VAR_COLUMNS", "cell_limit_for", "hidden_note", "results_table"]

MAX_VAR_COLUMNS = 3  # more vars share one column, one k=v per line
UNWRAPPED_CELL_LIMIT = 250  # promptfoo's --table-cell-max-length default
_MIN_CELL_LIMIT = 40
_CELL_LINES = 4  # a default-sized cell wraps onto about this many lines on a terminal
_STATUS_STYLE = {"PASS": "bold green", "FAIL": "bold red", "ERROR": "bold yellow"}


def cell_limit_for(console: Console, matrix: Matrix) -> int:
    """The default cell length: promptfoo's 250 off a terminal, else what fits the terminal's width."""
    if not console.is_terminal:
        return UNWRAPPED_CELL_LIMIT
    fixed = 6 + (20 if any(row.description for row in matrix.rows) else 0) + 16 * min(_var_count(matrix), 2)
    per_column = max(console.width - fixed, 20) // max(len(matrix.columns), 1)
    return max(_MIN_CELL_LIMIT, min(UNWRAPPED_CELL_LIMIT, per_column * _CELL_LINES))


def _var_names(matrix: Matrix) -> list[str]:
    return list(dict.fromkeys(name for row in matrix.rows for name in row.vars))


def _var_count(matrix: Matrix) -> int:
    return len(_var_names(matrix))


def _cell_text(cell: Cell | None, limit: int, verbose: bool) -> Text:
    if cell is None:
        return Text("")
    text = Text()
    text.append(f"{cell.status} {cell.score:.2f}", style=_STATUS_STYLE.get(cell.status, ""))
    if cell.rating is not None:  # a person's verdict: marked, their comment shown as plain text
        text.append(" (rated)", style="bold magenta")
        text.append("\n")
        text.append_text(safe_text(cell.rating, 0 if verbose else 2 * limit, style="magenta"))
    for line in cell.calls:  # tool calls read as name(arguments), one a line
        text.append("\n")
        text.append_text(safe_text(line, limit))
    if cell.output and not cell.calls:
        text.append("\n")
        text.append_text(safe_text(cell.output, limit))
    for reason in cell.reasons:  # what failed matters more than the output: twice the room
        text.append("\n")
        text.append_text(safe_text(reason, 0 if verbose else 2 * limit, style="red"))
    return text


def _vars_text(values: Mapping[str, Any], limit: int) -> Text:
    text = Text()
    for i, (name, value) in enumerate(values.items()):
        text.append("\n" if i else "")
        text.append_text(safe_text(f"{name}={_plain(value)}", limit))
    return text


def _plain(value: Any) -> Any:
    return value if isinstance(value, str) else safe_text(value, 0).plain


def results_table(console: Console, matrix: Matrix, *, cell_limit: int | None, verbose: bool) -> Table:
    """The matrix as a table; ``cell_limit`` None picks :func:`cell_limit_for`."""
    limit = cell_limit or cell_limit_for(console, matrix)
    on_terminal = console.is_terminal
    table = Table(box=table_box(console), show_lines=True, title="Results", title_justify="left")
    table.add_column("#", justify="right", no_wrap=True)
    described = any(row.description for row in matrix.rows)
    if described:
        table.add_column("Test", overflow="fold", max_width=30 if on_terminal else None)
    names = _var_names(matrix)
    spread = len(names) <= MAX_VAR_COLUMNS
    for name in names if spread else ["vars"]:
        table.add_column(safe_text(name, 40), overflow="fold", max_width=30 if on_terminal else None)
    for column in matrix.columns:
        table.add_column(safe_text(column, 80), overflow="fold")
    for row in matrix.rows:
        cells: list[Text] = [Text(row.number)]
        if described:
            cells.append(safe_text(row.description or "", limit))
        if spread:
            cells.extend(safe_text(row.vars.get(name, ""), limit) for name in names)
        else:
            cells.append(_vars_text(row.vars, limit))
        cells.extend(_cell_text(row.cells.get(i), limit, verbose) for i in range(len(matrix.columns)))
        table.add_row(*cells)
    return table


def hidden_note(matrix: Matrix) -> Text | None:
    """What the cut table leaves out, or None when every test is shown."""
    if not matrix.hidden:
        return None
    failing = f", {matrix.hidden_failing} of them failing" if matrix.hidden_failing else ", all passing"
    order = " Tests with failures are shown first." if matrix.failures_first else ""
    return Text(
        f"... and {matrix.hidden} more tests not shown{failing}.{order} `evalh view` or -o results.html "
        "shows them all.",
        style="dim",
    )
