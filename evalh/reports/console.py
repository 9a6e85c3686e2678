"""The console every printed table goes to: coloured with rounded boxes on a terminal, plain text with
ASCII boxes anywhere else.

Off a terminal (a pipe, a CI log, a captured stream) nothing is wrapped to a width, unless ``COLUMNS``
asks for one: each table row stays on its line and no word is cut, so ``evalh ... | grep WORD`` finds
whole words. Every string taken from a run is shown as :class:`rich.text.Text` with control characters
escaped, so neither rich markup nor terminal escape sequences in an output can take effect. Plain lines
(a command's messages, ``runs list``, ``diff``) go through :func:`echo`, JSON through :func:`echo_json`:
every command prints text from runs, reports and configs only through them or a rich ``Text``.

Colour follows the conventions, not rich's reading of them: ``NO_COLOR`` (any non-empty value) always
turns colour off, and ``FORCE_COLOR`` set to ``0``, ``false`` or nothing turns it off too (rich treats
any set ``FORCE_COLOR`` but the empty one as "force"); other values force it, as in rich.
"""

from __future__ import annotations

import json
import re
import sys
from typing import TYPE_CHECKING, Any, TextIO

from evalh.common.environment import getenv
from evalh.reports.textutil import collapse_whitespace, escape_controls, output_text, truncate

if TYPE_CHECKING:  # rich is imported when a table is drawn: a plain line (echo) needs none of it
    from rich import box
    from rich.console import Console
    from rich.text import Text

__all__ = [
    "UNWRAPPED_WIDTH",
    "colour_options",
    "echo",
    "echo_json",
    "make_console",
    "safe_text",
    "table_box",
    "terminal_json",
]

UNWRAPPED_WIDTH = 100_000  # off a terminal: wide enough that rich never wraps or folds a line
_FALSE_WORDS = frozenset({"", "0", "false", "no", "off"})
# What JSON text may still hold raw after json.dumps(ensure_ascii=False), which escapes C0 controls only:
# DEL and C1 controls (0x9b is an 8-bit CSI) and lone surrogates (which no terminal encoding can write).
_JSON_RAW_CONTROLS = re.compile("[\x7f-\x9f\ud800-\udfff]")


def _isatty(file: TextIO) -> bool:
    try:
        return file.isatty()
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        return False


def colour_options(file: TextIO) -> dict[str, Any]:
    """The rich ``Console`` arguments that make ``NO_COLOR`` and ``FORCE_COLOR=0`` mean "no colour"."""
    options: dict[str, Any] = {}
    force = getenv("FORCE_COLOR")
    if force is not None and force.strip().lower() in _FALSE_WORDS:
        # rich would force a terminal: keep the stream's own answer, without colour
        options.update(force_terminal=_isatty(file), color_system=None)
    if getenv("NO_COLOR", "") != "":
        options.update(color_system=None, no_color=True)
    return options


def make_console(file: TextIO | None = None, *, stderr: bool = False) -> Console:
    """The one place evalh makes a rich console (tables, listings, progress)."""
    from rich.console import Console

    target = file or (sys.stderr if stderr else sys.stdout)
    console = Console(file=target, highlight=False, emoji=False, soft_wrap=False, **colour_options(target))
    if not console.is_terminal and getenv("COLUMNS") is None:
        console.width = UNWRAPPED_WIDTH
    return console


def table_box(console: Console) -> box.Box:
    from rich import box

    return box.ROUNDED if console.is_terminal else box.ASCII


def safe_text(value: Any, limit: int, style: str = "") -> Text:
    """``value`` on one line, controls escaped, cut to ``limit`` characters (0: never cut)."""
    from rich.text import Text

    text = escape_controls(collapse_whitespace(output_text(value)), one_line=True)
    return Text(truncate(text, limit), style=style)


def echo(text: str, *, err: bool = False) -> None:
    """Print ``text`` and a newline as plain text (never read as markup) with control characters escaped,
    so an escape sequence from a run's data (an OSC retitling the terminal, a CSI clearing it) shows as
    ``\\x1b`` instead of acting."""
    print(escape_controls(text), file=sys.stderr if err else sys.stdout, flush=True)


def terminal_json(text: str) -> str:
    """JSON text (or a piece of it) with every control character escaped as JSON (``\\u009b``): the
    same JSON value, safe on a terminal."""
    return _JSON_RAW_CONTROLS.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def echo_json(value: Any) -> None:
    """Print ``value`` as indented JSON on stdout, non-ASCII text kept, control characters escaped."""
    print(terminal_json(json.dumps(value, indent=2, ensure_ascii=False, default=str)), flush=True)
