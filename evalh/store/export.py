"""A stored run written out as its indented JSON report piece by piece (``evalh runs show --json``).

The text is exactly ``json.dumps(store.load_run(ref), indent=2, ensure_ascii=False)``, but neither every
row nor the config (every test of the suite: tens of MB at 50,000 tests) is held as Python values at
once: the report's frame is dumped with markers in their places, and the rows (read from the store one
at a time) and the config's top-level values (its tests one at a time) are dumped on their own and
indented to their place. Indenting a dumped value is prefixing its line breaks: JSON text has no other
line break (one in a string is the escape ``\\n``).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

__all__ = ["JSONItems", "JSONText", "indented_report", "top_level_items"]

_INDENT = 2
_DECODER = json.JSONDecoder()
_SPACE = " \t\n\r"


def _dumped(value: Any, prefix: str) -> str:
    """``json.dumps(value, indent=2)`` as it reads inside a document where its line starts at ``prefix``."""
    return json.dumps(value, indent=_INDENT, ensure_ascii=False).replace("\n", "\n" + prefix)


@dataclass(frozen=True)
class JSONText:
    """A JSON value held as its text (a stored config): decoded piece by piece when written. Not a
    tuple: json.dumps would write a tuple as a list instead of asking what it is."""

    text: str


@dataclass(frozen=True)
class JSONItems:
    """A list whose items come one at a time (a stored run's rows), read once when written."""

    items: Iterable[Any]


def indented_report(document: Any) -> Iterator[str]:
    """``json.dumps(document, indent=2, ensure_ascii=False)`` in pieces, where ``document`` may hold
    :class:`JSONText` and :class:`JSONItems` values: written as the values they stand for, one
    top-level piece of a text and one item at a time."""
    token = uuid.uuid4().hex  # markers no report holds
    lazy: dict[str, JSONText | JSONItems] = {}

    def mark(value: Any) -> str:
        if not isinstance(value, JSONText | JSONItems):
            raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")
        name = f"evalh-lazy-{token}-{len(lazy)}"
        lazy[json.dumps(name)] = value
        return name

    text = json.dumps(document, indent=_INDENT, ensure_ascii=False, default=mark)
    start = 0
    for at, name in sorted((text.index(name), name) for name in lazy):
        yield text[start:at]
        line = text[text.rfind("\n", 0, at) + 1 : at]
        prefix = " " * (len(line) - len(line.lstrip(" ")))
        value = lazy[name]
        if isinstance(value, JSONText):
            yield from _config_pieces(value.text, prefix)
        else:
            yield from _list_pieces(value.items, prefix)
        start = at + len(name)
    yield text[start:]


def _list_pieces(items: Iterable[Any], prefix: str) -> Iterator[str]:
    """A list at ``prefix``, its items dumped one at a time (an empty list is ``[]``, as json.dumps
    has it)."""
    inner = prefix + " " * _INDENT
    empty = True
    for item in items:
        yield ("[\n" if empty else ",\n") + inner + _dumped(item, inner)
        empty = False
    yield "[]" if empty else "\n" + prefix + "]"


def _config_pieces(config: str, prefix: str) -> Iterator[str]:
    """The config's JSON text indented at ``prefix``: each top-level value, and each item of a top-level
    list (the tests), decoded and dumped on its own."""
    inner = prefix + " " * _INDENT
    entries = top_level_items(config)
    if entries is None:
        yield _dumped(json.loads(config), prefix)
        return
    yield "{"
    for position, (key, value) in enumerate(entries):
        yield ("\n" if position == 0 else ",\n") + inner + json.dumps(key, ensure_ascii=False) + ": "
        if isinstance(value, _Items):
            yield from _list_pieces(value, inner)
        else:
            yield _dumped(value, inner)
    yield "\n" + prefix + "}"


class _Items:
    """A top-level list of the config, decoded one item at a time (iterated once)."""

    def __init__(self, text: str, start: int) -> None:
        self._text, self._at = text, _skip(text, start + 1)
        self.end = self._at + 1 if text[self._at] == "]" else -1

    def __iter__(self) -> Iterator[Any]:
        text, at = self._text, self._at
        if self.end >= 0:  # empty
            return
        while True:
            item, at = _DECODER.raw_decode(text, at)
            yield item
            at = _skip(text, at)
            if text[at] == "]":
                self.end = at + 1
                return
            at = _skip(text, at + 1)  # past the comma


def _skip(text: str, at: int) -> int:
    while text[at] in _SPACE:
        at += 1
    return at


def top_level_items(text: str) -> Iterator[tuple[str, Any]] | None:
    """The keys and values of a JSON object's text in order, a non-empty list value as an iterable of
    its items decoded one by one (consume it before the next pair); None when ``text`` is not a
    non-empty object."""
    at = _skip(text, 0) if text.strip() else 0
    if not text.strip() or text[at] != "{" or text[_skip(text, at + 1)] == "}":
        return None
    return _pairs(text, _skip(text, at + 1))


def _pairs(text: str, at: int) -> Iterator[tuple[str, Any]]:
    while True:
        key, at = _DECODER.raw_decode(text, at)
        at = _skip(text, _skip(text, at) + 1)  # past the colon
        if text[at] == "[":
            items = _Items(text, at)
            yield str(key), items
            at = items.end
        else:
            value, at = _DECODER.raw_decode(text, at)
            yield str(key), value
        at = _skip(text, at)
        if text[at] == "}":
            return
        at = _skip(text, at + 1)  # past the comma
