"""The console every printed table goes to: coloured with rounded boxes on a terminal, plain text with
ASCII boxes anywhere else.

Off a terminal (a pipe, a CI log, a captured stream) nothing is wrapped to a width, unless ``COLUMNS``
asks for one: each table row stays on its line and no word is cut, so ``evalh ... | grep WORD`` finds
whole words. Every string taken from a run is shown as :class:`rich.text.Text` with control characters
escaped, so neither rich markup nor terminal escape sequences in an output can take effect.
"""

from __future__ import annotations

import os
import sys
from typing import Any, TextIO

from rich import box
from rich.console import Console
from rich.text import Text

from evalh.reports.textutil import collapse_whitespace, escape_controls, output_text, truncate

__all__ = ["UNWRAPPED_WIDTH", "make_console", "safe_text", "table_box"]

UNWRAPPED_WIDTH = 100_000  # off a terminal: wide enough that rich never wraps or folds a line


def make_console(file: TextIO | None = None, *, stderr: bool = False) -> Console:
    target = file or (sys.stderr if stderr else sys.stdout)
    console = Console(file=target, highlight=False, emoji=False, soft_wrap=False)
    if not console.is_terminal and "COLUMNS" not in os.environ:
        console.width = UNWRAPPED_WIDTH
    return console


def table_box(console: Console) -> box.Box:
    return box.ROUNDED if console.is_terminal else box.ASCII


def safe_text(value: Any, limit: int, style: str = "") -> Text:
    """``value`` on one line, controls escaped, cut to ``limit`` characters (0: never cut)."""
    text = escape_controls(collapse_whitespace(output_text(value)), one_line=True)
    return Text(truncate(text, limit), style=style)
