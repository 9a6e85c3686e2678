"""Regular expressions the config author wrote, run on model outputs with a time limit.

A pattern such as ``(a|aa)+$`` backtracks for hours on a long output; Python's ``re`` cannot be stopped
and would hold the event loop (and Ctrl-C) for that long. The ``regex`` package takes a timeout, so every
search of an output goes through here. Syntax: Python's ``re`` (``regex`` in its ``re``-compatible
VERSION0 mode), no flags unless inline (``(?i)``).
"""

from __future__ import annotations

from functools import lru_cache

import regex

from evalh.runtimes.timeouts import TimedOut

__all__ = ["Match", "Pattern", "PatternTimedOut", "compile_pattern", "find_all", "search"]

Pattern = regex.Pattern[str]
Match = regex.Match[str]


class PatternTimedOut(TimedOut):
    """A search outlived its time limit; the message names the pattern and the text's length."""

    def __init__(self, pattern: str, text: str, seconds: float) -> None:
        super().__init__(seconds)
        self.args = (
            f"the regular expression /{pattern}/ {self} on a {len(text):,}-character output "
            "(catastrophic backtracking?); raise config.timeoutMs or simplify the pattern",
        )
        self.pattern = pattern


@lru_cache(maxsize=1024)
def compile_pattern(pattern: str) -> Pattern | str:
    """The compiled pattern, or the problem text ("invalid regular expression: ...") when it is invalid."""
    try:
        return regex.compile(pattern, regex.VERSION0)
    except regex.error as error:
        return f"invalid regular expression: {error} (Python re syntax)"


def search(pattern: Pattern, text: str, timeout_s: float) -> Match | None:
    """``pattern.search(text)``, or PatternTimedOut after ``timeout_s``."""
    try:
        return pattern.search(text, timeout=timeout_s)
    except TimeoutError:
        raise PatternTimedOut(pattern.pattern, text, timeout_s) from None


def find_all(pattern: Pattern, text: str, timeout_s: float) -> list[Match]:
    """Every match of ``pattern`` in ``text``, or PatternTimedOut when finding them takes longer."""
    try:
        return list(pattern.finditer(text, timeout=timeout_s))
    except TimeoutError:
        raise PatternTimedOut(pattern.pattern, text, timeout_s) from None
