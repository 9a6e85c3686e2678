"""Text helpers shared by the report formats: stringify outputs, make text safe for XML and terminals,
list the failed assertions of a row."""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterable
from typing import Any

from evalh.model import GradedAssertion

__all__ = [
    "collapse_whitespace",
    "escape_controls",
    "failed_assertion_lines",
    "interval_text",
    "output_text",
    "rate_text",
    "truncate",
    "xml_safe",
]

# Characters XML 1.0 forbids (C0 controls except tab/LF/CR, lone surrogates, U+FFFE/U+FFFF). Compiled by
# the first XML report (:func:`_xml_illegal`): its class of ~1.1 million characters takes milliseconds,
# which every run importing this module paid.
_XML_ILLEGAL = "[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]"
# What a terminal, a spreadsheet or a browser should never receive raw: C0/C1 controls (ESC above all,
# so a model output cannot drive the terminal), DEL and lone surrogates. Tab and newline are kept.
_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff]")
# One-line cells (terminal tables, the Markdown summary) also show the Unicode bidi embeddings, overrides
# and isolates escaped: in a cell they would reorder what a reader sees of the text after them ("Trojan
# Source"). A multi-line output (the viewer, CSV) keeps them, as right-to-left text may use them.
_CONTROLS_ONE_LINE = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff\u202a-\u202e\u2066-\u2069]")
_WHITESPACE = re.compile(r"\s+")


def _escape_char(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code == 0x0A:
        return "\\n"
    if code == 0x09:
        return "\\t"
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def output_text(value: Any) -> str:
    """An output (or var) as text: strings as they are, None as "", anything else as compact JSON."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)


@functools.cache
def _xml_illegal() -> re.Pattern[str]:
    return re.compile(_XML_ILLEGAL)


def xml_safe(text: str) -> str:
    """``text`` with every character XML 1.0 cannot hold replaced by a visible ``\\xNN`` / ``\\uXXXX``."""
    return _xml_illegal().sub(_escape_char, text)


def escape_controls(text: str, *, one_line: bool = False) -> str:
    """``text`` with control characters and lone surrogates shown as escapes (``\\x1b``, ``\\udcff``).

    ``one_line`` also escapes tabs, newlines and the bidi embeddings, overrides and isolates, for table
    cells.
    """
    pattern = _CONTROLS_ONE_LINE if one_line else _CONTROLS
    return pattern.sub(_escape_char, text)


def collapse_whitespace(text: str) -> str:
    """Runs of whitespace (newlines included) as one space, stripped."""
    return _WHITESPACE.sub(" ", text).strip()


def truncate(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, ending in an ellipsis when cut."""
    if limit <= 0 or len(text) <= limit:
        return text
    return text[: max(limit - 1, 0)] + "…"


def failed_assertion_lines(graded: Iterable[GradedAssertion], depth: int = 0) -> list[str]:
    """``- type: reason`` for every failed assertion, an assert-set's failed children indented below it."""
    lines: list[str] = []
    for item in graded:
        if not item.passed:
            lines.append(f"{'  ' * depth}- {item.spec.full_type}: {collapse_whitespace(item.reason)}")
            lines.extend(failed_assertion_lines(item.children, depth + 1))
    return lines


def interval_text(interval: tuple[float, float]) -> str:
    """``[48-85%]``: a 95% interval of a rate (fractions) in whole percent."""
    low, high = interval
    return f"[{100 * low:.0f}-{100 * high:.0f}%]"


def rate_text(passes: int, runs: int, interval: tuple[float, float]) -> str:
    """``14/20 70% [48-85%]``: passes of runs, the pass rate and its 95% interval (the console, the
    Markdown summary and the viewer write a test's figures over its repeats so)."""
    return f"{passes}/{runs} {100 * passes / runs:.0f}% {interval_text(interval)}" if runs else "0/0"
