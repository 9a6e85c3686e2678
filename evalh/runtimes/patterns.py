"""Regular expressions the config author wrote, run on model outputs with a time limit.

A pattern such as ``(a|aa)+$`` backtracks for hours on a long output; Python's ``re`` cannot be stopped
and would hold the event loop (and Ctrl-C) for that long. The ``regex`` package takes a timeout, so every
search of an output goes through here. Syntax: Python's ``re`` (``regex`` in its ``re``-compatible
VERSION0 mode), no flags unless inline (``(?i)``).

The time limit costs about 4 us a search (the ``regex`` package sets up its clock on every call with a
``timeout``): more than the search of a short output itself. A search whose work has a small proven
bound goes without it (:func:`_work_bound`): the pattern's shape is read once (:func:`_shape`, a
conservative reading that knows only plain atoms and repetitions of one character), and its bound on
this text's length must stay far inside the time limit. Every other search keeps the limit.
"""

from __future__ import annotations

import string
from functools import lru_cache
from typing import TYPE_CHECKING, NamedTuple, TypeAlias

from evalh.runtimes.timeouts import TimedOut

if TYPE_CHECKING:  # the regex package is imported by the first pattern compiled, not by every run
    import regex

__all__ = ["Match", "Pattern", "PatternTimedOut", "compile_pattern", "find_all", "search"]

Pattern: TypeAlias = "regex.Pattern[str]"
Match: TypeAlias = "regex.Match[str]"


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
    import regex

    try:
        return regex.compile(pattern, regex.VERSION0)
    except regex.error as error:
        return f"invalid regular expression: {error} (Python re syntax)"


def search(pattern: Pattern, text: str, timeout_s: float) -> Match | None:
    """``pattern.search(text)``, or PatternTimedOut after ``timeout_s``."""
    if _work_bound(pattern.pattern, len(text)) <= timeout_s * _WORK_PER_SECOND:
        return pattern.search(text)  # bounded far inside the limit: the same search, without its clock
    try:
        return pattern.search(text, timeout=timeout_s)
    except TimeoutError:
        raise PatternTimedOut(pattern.pattern, text, timeout_s) from None


def find_all(pattern: Pattern, text: str, timeout_s: float) -> list[Match]:
    """Every match of ``pattern`` in ``text``, or PatternTimedOut when finding them takes longer."""
    if _work_bound(pattern.pattern, len(text)) <= timeout_s * _WORK_PER_SECOND:
        return list(pattern.finditer(text))  # each start is tried at most once, as by one search
    try:
        return list(pattern.finditer(text, timeout=timeout_s))
    except TimeoutError:
        raise PatternTimedOut(pattern.pattern, text, timeout_s) from None


# The bound's units per second of a time limit. The slowest searches measured run about 7e8 units a
# second (``[ab]*[bc]$`` on 3,000 characters: 1.1e8 units in 0.15 s), so a search given no clock
# stays under 0.3% of its limit even on a machine ten times slower.
_WORK_PER_SECOND = 2e6
_NO_BOUND = float("inf")


class _Shape(NamedTuple):
    """What bounds a pattern's backtracking: its repetitions (each of one character: at most n + 1
    counts to try), its alternatives (``|``: each doubles the branches at most) and its length: the
    steps of one path, the pattern's characters and the characters its counts force (``a{m}`` is m
    steps on every path, from every start)."""

    repeats: int
    bars: int
    length: int


def _work_bound(pattern: str, text_length: int) -> float:
    """An upper bound of the backtracking search's work on a text of ``text_length`` characters, or
    infinity for a pattern :func:`_shape` does not vouch for.

    With repetitions of single characters only and no backreference, lookaround or repeated group,
    the search tree from each of the n + 1 starts branches only at the k repetitions (n + 1 counts
    each) and the alternatives: at most (n + 1) ** k * 2 ** bars paths, each through the pattern's
    items once, and each repetition scans at most n characters when the search reaches it."""
    shape = _shape(pattern)
    if shape is None:
        return _NO_BOUND
    paths = (text_length + 1) ** (shape.repeats + 1) * 2**shape.bars
    return float(paths * (shape.length + shape.repeats + 1))


# Escapes of one character class or one literal character; anchors match no character.
_CLASS_ESCAPES = frozenset("dDwWsS")
_LITERAL_ESCAPES = frozenset("ntrfv") | frozenset(string.punctuation)
_ANCHOR_ESCAPES = frozenset("bBAZ")
_LEADING_FLAGS = frozenset("ims")
_MAX_REPEATS = 8  # more repetitions than this: the bound is beyond any limit anyway


@lru_cache(maxsize=1024)
def _shape(pattern: str) -> _Shape | None:
    """The shape of a pattern made only of literal characters, ``.``, character classes, the escapes
    above, anchors, groups (never repeated), ``|`` and repetitions (``* + ? {m,n}``, lazy or not) of
    one character; None for anything else (a backreference, a lookaround, a repeated group, an inline
    flag after the start, a possessive repetition, a fuzzy match, a nested set): those keep the limit."""
    index = _leading_flags_end(pattern)
    repeats = bars = forced = 0
    repeatable = False  # the item just read is one character: a repetition may follow
    while index < len(pattern):
        char = pattern[index]
        if char in "*+?{":
            repetition = _repetition(pattern, index)
            if not repeatable or repetition is None:
                return None
            if repetition.end < len(pattern) and pattern[repetition.end] in "*+{":
                return None
            repeats += not repetition.fixed  # {m}: one count, nothing to try
            forced += repetition.least
            index, repeatable = repetition.end, False
            continue
        if char == "\\":
            if index + 1 >= len(pattern):
                return None
            escaped = pattern[index + 1]
            if escaped in _ANCHOR_ESCAPES:
                repeatable = False
            elif escaped in _CLASS_ESCAPES or escaped in _LITERAL_ESCAPES:
                repeatable = True
            else:
                return None
            index += 2
        elif char == "[":
            end = _set_end(pattern, index)
            if end is None:
                return None
            index, repeatable = end, True
        elif char == "(":
            end = _group_start_end(pattern, index)
            if end is None:
                return None
            index, repeatable = end, False
        elif char in ")^$|":
            bars += char == "|"
            index, repeatable = index + 1, False
        else:  # a literal character or "."
            index, repeatable = index + 1, True
    return _Shape(repeats, bars, len(pattern) + forced) if repeats <= _MAX_REPEATS else None


def _leading_flags_end(pattern: str) -> int:
    """Where the pattern starts after its leading flags, ``(?i)``, ``(?ims)(?s)``... (0 without)."""
    index = 0
    while pattern.startswith("(?", index):
        close = pattern.find(")", index)
        if close <= index + 2 or not set(pattern[index + 2 : close]) <= _LEADING_FLAGS:
            break
        index = close + 1
    return index


class _Repetition(NamedTuple):
    end: int  # past the repetition and its lazy ``?``
    least: int  # the characters it must match: m of ``{m}`` / ``{m,}`` / ``{m,n}``, 1 of ``+``
    fixed: bool  # ``{m}``: a single count, nothing to try


def _repetition(pattern: str, index: int) -> _Repetition | None:
    """The repetition at ``index``, or None for a ``{`` that is not ``{m}``, ``{m,}``, ``{,n}`` or
    ``{m,n}``."""
    if pattern[index] == "{":
        close = pattern.find("}", index)
        low, comma, high = pattern[index + 1 : close].partition(",")
        counts = [part for part in (low, high) if part]
        if close < 0 or not counts or not all(part.isascii() and part.isdigit() for part in counts):
            return None
        end, least, fixed = close + 1, int(low) if low else 0, not comma
    else:
        end, least, fixed = index + 1, int(pattern[index] == "+"), False
    lazy = end < len(pattern) and pattern[end] == "?"
    return _Repetition(end + 1 if lazy else end, least, fixed)


def _set_end(pattern: str, index: int) -> int | None:
    """The end of the character class at ``index``: plain characters, ranges and the escapes above;
    None for a nested ``[`` (POSIX classes, set operations) or another escape."""
    index += 1
    if index < len(pattern) and pattern[index] == "^":
        index += 1
    if index < len(pattern) and pattern[index] == "]":
        index += 1
    while index < len(pattern):
        char = pattern[index]
        if char == "]":
            return index + 1
        if char == "[":
            return None
        if char == "\\":
            if index + 1 >= len(pattern):
                return None
            escaped = pattern[index + 1]
            if not (escaped in _CLASS_ESCAPES or escaped in _LITERAL_ESCAPES or escaped == "b"):
                return None
            index += 2
        else:
            index += 1
    return None


def _group_start_end(pattern: str, index: int) -> int | None:
    """Past the opening of a plain group ``(``, ``(?:`` or ``(?P<name>``; None for any other
    ``(?`` (a lookaround, an atomic group, a condition, a backreference, a flag)."""
    if not pattern.startswith("(?", index):
        return index + 1
    if pattern.startswith("(?:", index):
        return index + 3
    if pattern.startswith("(?P<", index):
        close = pattern.find(">", index)
        return close + 1 if close > index + 4 and pattern[index + 4 : close].isidentifier() else None
    return None
