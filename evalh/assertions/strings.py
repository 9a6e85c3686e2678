"""Pure text helpers of the deterministic assertions: JavaScript-like value strings, promptfoo's
comma-separated lists, strict JSON parsing and deep equality, edit distance, and reason previews.

No registration here: the handlers live in ``text.py`` and ``structured.py``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

__all__ = [
    "deep_equal",
    "json_default",
    "levenshtein_distance",
    "loads_strict",
    "parse_item_list",
    "parse_json_output",
    "preview",
    "split_comma_list",
    "stringify_value",
]

_PREVIEW_CHARS = 80


def preview(text: str, limit: int = _PREVIEW_CHARS) -> str:
    """``text`` quoted for a reason, shortened to ``limit`` characters."""
    if len(text) > limit:
        return repr(text[:limit]) + f"... ({len(text)} chars)"
    return repr(text)


def json_default(value: Any) -> Any:
    """``json.dumps`` hook: read-only mappings (frozen config values) serialize like dicts."""
    if isinstance(value, Mapping):
        return dict(value)
    raise TypeError(f"{type(value).__name__} is not JSON data")


def stringify_value(value: Any) -> str:
    """A scalar value as promptfoo's ``String(value)``: 42 -> "42", 1.0 -> "1", True -> "true"."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, int | float):
        return str(value)
    return json.dumps(value, ensure_ascii=False, default=json_default)


@lru_cache(maxsize=4096)
def split_comma_list(text: str) -> tuple[str, ...]:
    """promptfoo's CSV-like split: quoted items keep commas, ``""`` escapes a quote, empties dropped."""
    items: list[str] = []
    current: list[str] = []
    in_quotes = False
    index = 0
    while index < len(text):
        char = text[index]
        if char == '"':
            if in_quotes and text.startswith('"', index + 1):
                current.append('"')
                index += 1
            else:
                in_quotes = not in_quotes
        elif char == "," and not in_quotes:
            items.append("".join(current).strip())
            current = []
        else:
            current.append(char)
        index += 1
    items.append("".join(current).strip())
    return tuple(item for item in items if item)


def parse_item_list(value: Any) -> tuple[str, ...] | None:
    """A list value (items stringified) or a comma-separated string; None when the shape is wrong."""
    if isinstance(value, str):
        return split_comma_list(value)
    if isinstance(value, list | tuple):
        if all(type(item) is str for item in value):  # the usual list, read on every row: no copy per item
            return tuple(value)
        items: list[str] = []
        for item in value:
            if item is None or not isinstance(item, str | int | float):
                return None
            items.append(stringify_value(item))
        return tuple(items)
    return None


def deep_equal(left: Any, right: Any) -> bool:
    """JSON deep equality as JavaScript's isDeepStrictEqual sees it: 1 == 1.0, but True != 1."""
    if isinstance(left, bool) or isinstance(right, bool):
        return type(left) is type(right) and left == right
    if isinstance(left, int | float) and isinstance(right, int | float):
        return left == right
    if isinstance(left, Mapping) and isinstance(right, Mapping):
        return left.keys() == right.keys() and all(deep_equal(left[key], right[key]) for key in left)
    if isinstance(left, list | tuple) and isinstance(right, list | tuple):
        return len(left) == len(right) and all(deep_equal(a, b) for a, b in zip(left, right, strict=True))
    if isinstance(left, Mapping | list | tuple) or isinstance(right, Mapping | list | tuple):
        return False
    return type(left) is type(right) and bool(left == right)


_NESTED_TOO_DEEPLY = "nested too deeply to read (evalh reads JSON nested up to about 900 levels)"


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


# json.loads with a keyword builds a decoder on every call: 70% of parsing a tool call's short arguments
_STRICT_DECODER = json.JSONDecoder(parse_constant=_reject_constant)


def loads_strict(text: str) -> Any:
    """``json.loads`` as strict as JavaScript's JSON.parse: NaN and Infinity are rejected. JSON nested
    past Python's recursion bound (about 1,000 levels) is a ValueError too: it is an answer that fails
    a JSON check, not a crash of the check."""
    try:
        if type(text) is str and not text.startswith("\ufeff"):
            return _STRICT_DECODER.decode(text)
        return json.loads(text, parse_constant=_reject_constant)  # bytes, and the BOM's own error
    except RecursionError:
        raise ValueError(_NESTED_TOO_DEEPLY) from None


def parse_json_output(output: Any) -> tuple[bool, Any, str]:
    """(parsed?, data, problem) for a whole output; a non-string output is already JSON data."""
    if output is not None and not isinstance(output, str):
        return True, output, ""
    try:
        return True, loads_strict(output or ""), ""
    except ValueError as error:
        return False, None, str(error)


def levenshtein_distance(left: str, right: str) -> int:
    """Edit distance (insert, delete, substitute) by code point (an astral character is one, a lone
    surrogate is one), as evalh has always counted.

    rapidfuzz's bit-parallel C++ (Hyyrö's algorithm) gives the textbook distance ~50x faster than the
    same algorithm on Python ints; imported on first use: a run without levenshtein does not pay for it.
    """
    return int(_rapidfuzz_distance()(left, right))


@lru_cache(maxsize=1)
def _rapidfuzz_distance() -> Any:
    """rapidfuzz's ``Levenshtein.distance``, imported once: an import statement in the function looks
    the module up on every call (a fifth of a levenshtein check)."""
    from rapidfuzz.distance import Levenshtein

    return Levenshtein.distance
