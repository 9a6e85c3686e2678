"""The fast path for reading YAML: data and positions built straight from libyaml's parse events.

Composing a node tree (a node object per value, resolved and then constructed in a second walk) was
most of the time spent reading a large suite. Plain documents (no
anchors, aliases, explicit tags, merge keys, duplicate or non-text-scalar keys, one document, within
MAX_DEPTH) are built here in one pass with the same scalar rules as ``SafeLoader``; anything else,
including text that is not valid YAML, answers ``None`` and takes the full, locating path, which also
words every error.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import yaml

from evalh.config.safeload import MAX_DEPTH, SafeLoader, resolve_plain

__all__ = ["Positions", "key_text", "load_plain", "mark_at"]

_STR = "tag:yaml.org,2002:str"
_NULL = "tag:yaml.org,2002:null"
_MERGE = "tag:yaml.org,2002:merge"


# The mark of every mapping key and sequence item, nested as the data is: {key: (mark, inner)} for a
# mapping, [(mark, inner)] for a sequence, None for a scalar. Far lighter than a node tree.
Positions = dict[str, tuple[Any, Any]] | list[tuple[Any, Any]] | None


class _NotPlain(Exception):
    """The document needs the full loader."""


def key_text(key: Any) -> str:
    """A mapping key as text, as in JSON and promptfoo: `null:`, `1.5:` and `true:` are the keys
    "null", "1.5" and "true" (a None or float key broke every path and message built from it)."""
    if isinstance(key, str):
        return key
    return json.dumps(key) if key is None or isinstance(key, bool) else str(key)


def load_plain(text: str, *, located: bool = True) -> tuple[Any, Positions] | None:
    """``(data, positions)`` for a plain YAML document, or None when the full loader must read it.
    Without ``located`` the positions are None: keeping them took more memory than the data (32 of
    54 MB for 5,000 tests), so a config is read without them and located again when a message needs."""
    loader = SafeLoader(text)
    try:
        return _build(loader, located)
    except (_NotPlain, yaml.YAMLError):
        return None
    finally:
        loader.dispose()


def mark_at(positions: Positions, path: tuple[str | int, ...]) -> Any:
    """The mark of the mapping key or sequence item at ``path`` (or of its nearest ancestor)."""
    mark = None
    for part in path:
        in_mapping = isinstance(positions, dict) and isinstance(part, str) and part in positions
        in_sequence = isinstance(positions, list) and isinstance(part, int) and 0 <= part < len(positions)
        if in_mapping or in_sequence:
            mark, positions = positions[part]  # type: ignore[index]
        else:
            break
    return mark


class _Frame:
    """A mapping or sequence being built, its positions, and the key read but not yet given a value."""

    __slots__ = ("container", "key", "key_mark", "positions")

    def __init__(self, container: Any, positions: Any) -> None:
        self.container = container
        self.positions = positions
        self.key: str | None = None
        self.key_mark: Any = None


_SCALAR_EVENT, _ALIAS_EVENT = yaml.ScalarEvent, yaml.AliasEvent
_MAPPING_START, _SEQUENCE_START = yaml.MappingStartEvent, yaml.SequenceStartEvent
_MAPPING_END, _SEQUENCE_END = yaml.MappingEndEvent, yaml.SequenceEndEvent
# Short texts (type names, keys, list items) recur in every test of a large suite: one copy of each.
_SHARED_TEXT_LENGTH = 24


def _build(loader: SafeLoader, located: bool) -> tuple[Any, Positions]:
    stack: list[_Frame] = []
    root: list[tuple[Any, Positions]] = []
    documents = 0
    next_event = loader.get_event
    while True:
        event = next_event()
        kind = type(event)
        if kind is _SCALAR_EVENT:
            _add(stack, root, _scalar(loader, event), event.start_mark, None)
        elif kind is _MAPPING_START or kind is _SEQUENCE_START:
            if event.anchor is not None or event.tag is not None:
                raise _NotPlain
            mapping = kind is _MAPPING_START
            positions: Positions = ({} if mapping else []) if located else None
            frame = _Frame({} if mapping else [], positions)
            _add(stack, root, frame.container, event.start_mark, frame.positions)
            stack.append(frame)
            if len(stack) > MAX_DEPTH:
                raise _NotPlain
        elif kind is _MAPPING_END or kind is _SEQUENCE_END:
            stack.pop()
        elif kind is yaml.DocumentStartEvent:
            documents += 1
            if documents > 1:
                raise _NotPlain  # the full loader words "expected a single document"
        elif kind is _ALIAS_EVENT:
            raise _NotPlain
        elif kind is yaml.StreamEndEvent or event is None:
            return root[0] if root else (None, None)


def _add(
    stack: list[_Frame], root: list[tuple[Any, Positions]], value: Any, mark: Any, positions: Positions
) -> None:
    if not stack:
        root.append((value, positions))
        return
    frame = stack[-1]
    if type(frame.container) is list:
        frame.container.append(value)
        if frame.positions is not None:
            frame.positions.append((mark, positions))
    elif frame.key is not None:
        frame.container[frame.key] = value
        if frame.positions is not None:
            frame.positions[frame.key] = (frame.key_mark, positions)
        frame.key = None
    elif type(value) is dict or type(value) is list:
        raise _NotPlain  # a collection as a key
    else:
        key = sys.intern(key_text(value))
        if key in frame.container:
            raise _NotPlain  # the full loader names every duplicate with its position
        frame.key, frame.key_mark = key, mark


def _scalar(loader: SafeLoader, event: Any) -> Any:
    if event.anchor is not None or event.tag not in (None, "!"):
        raise _NotPlain
    text: str = event.value
    if not event.implicit[0]:  # quoted, or the non-specific tag "!": text (as SafeLoader.resolve says)
        return sys.intern(text) if len(text) <= _SHARED_TEXT_LENGTH else text
    tag = resolve_plain(text)
    if tag == _STR:
        return sys.intern(text) if len(text) <= _SHARED_TEXT_LENGTH else text
    if tag == _NULL:
        return None
    if tag == _MERGE:
        raise _NotPlain
    node = yaml.ScalarNode(tag, event.value, event.start_mark, event.end_mark)
    return loader.yaml_constructors[tag](loader, node)
