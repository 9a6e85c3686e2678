"""What the commands print besides their results: messages on stderr, prefixed ``evalh:``.

Every text may quote data (a report's field, a row's test, a path), so it goes through the console's
echo, which escapes control characters. rich loads only when there is something to print.
"""

from __future__ import annotations

__all__ = ["echo", "note", "warning"]


def echo(text: str, *, err: bool = False) -> None:
    """``text`` on stdout (stderr with ``err``), control characters escaped."""
    from evalh.reports.console import echo as console_echo

    console_echo(text, err=err)


def note(text: str) -> None:
    """A remark on stderr: ``evalh: <text>``."""
    echo(f"evalh: {text}", err=True)


def warning(text: str) -> None:
    """A warning on stderr: ``evalh: warning: <text>``."""
    echo(f"evalh: warning: {text}", err=True)
