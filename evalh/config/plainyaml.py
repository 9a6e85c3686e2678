"""The fast path for reading YAML: data and positions built straight from libyaml's parse events.

Composing a node tree (a node object per value, resolved and then constructed in a second walk) was
most of the time spent reading a large suite. Plain documents (no anchors, aliases, explicit tags,
merge keys, duplicate or non-text-scalar keys, one document, within MAX_DEPTH) are built here in one
pass with the same scalar rules as ``SafeLoader``; anything else, including text that is not valid
YAML, answers ``None`` and takes the full, locating path, which also words every error.
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


_SCALAR_EVENT, _ALIAS_EVENT = yaml.ScalarEvent, yaml.AliasEvent
_MAPPING_START, _SEQUENCE_START = yaml.MappingStartEvent, yaml.SequenceStartEvent
_MAPPING_END, _SEQUENCE_END = yaml.MappingEndEvent, yaml.SequenceEndEvent
_DOCUMENT_START, _STREAM_END = yaml.DocumentStartEvent, yaml.StreamEndEvent
# Short texts (type names, keys, list items) recur in every test of a large suite: one copy of each.
_SHARED_TEXT_LENGTH = 24
_NO_KEY: Any = object()  # the mapping being built waits for a key, not a value


def _build(loader: SafeLoader, located: bool) -> tuple[Any, Positions]:
    """One loop over the events, the open collection in locals and its parents on a stack: Python
    calls per event were most of the time spent above libyaml's own (3 per scalar cost 0.35 s of
    0.7 s for 5,000 tests). ``current`` is the open list or dict, ``key`` the key read in it and not
    yet given a value."""
    next_event, intern = loader.get_event, sys.intern
    plain: dict[str, Any] = {}  # plain scalar text -> its value: a large suite repeats its few
    root: list[Any] = []
    current: Any = root  # the document's value is root[0]: the top needs no case of its own
    key, key_mark = _NO_KEY, None
    positions: Any = [] if located else None
    stack: list[tuple[Any, Any, Any, Any]] = []
    documents = 0
    while True:
        event = next_event()
        kind = type(event)
        if kind is _SCALAR_EVENT:
            if event.anchor is not None or (event.tag is not None and event.tag != "!"):
                raise _NotPlain
            text = event.value
            if event.implicit[0]:
                value = plain.get(text, _NO_KEY)
                if value is _NO_KEY:
                    value = plain[text] = _plain_scalar(loader, event)
            else:  # quoted, a block, or the non-specific tag "!": text (as SafeLoader.resolve says)
                value = intern(text) if len(text) <= _SHARED_TEXT_LENGTH else text
            inner: Any = None
        elif kind is _MAPPING_START or kind is _SEQUENCE_START:
            if event.anchor is not None or event.tag is not None or len(stack) >= MAX_DEPTH:
                raise _NotPlain
            value = {} if kind is _MAPPING_START else []
            inner = ({} if kind is _MAPPING_START else []) if located else None
        elif kind is _MAPPING_END or kind is _SEQUENCE_END:
            current, key, key_mark, positions = stack.pop()
            continue
        elif kind is _STREAM_END or event is None:
            return (root[0], positions[0][1] if positions else None) if root else (None, None)
        else:  # the stream's start, a document's start or end, an alias
            # (the full loader words "expected a single document" for a second one)
            if kind is _ALIAS_EVENT or (kind is _DOCUMENT_START and documents):
                raise _NotPlain
            documents += kind is _DOCUMENT_START
            continue
        if type(current) is list:
            current.append(value)
            if positions is not None:
                positions.append((event.start_mark, inner))
        elif key is not _NO_KEY:
            current[key] = value
            if positions is not None:
                positions[key] = (key_mark, inner)
            key = _NO_KEY
        elif kind is _SCALAR_EVENT:
            key = intern(value if type(value) is str else key_text(value))
            if key in current:
                raise _NotPlain  # the full loader names every duplicate with its position
            key_mark = event.start_mark
            continue
        else:
            raise _NotPlain  # a collection as a key
        if kind is not _SCALAR_EVENT:
            stack.append((current, key, key_mark, positions))
            current, key, key_mark, positions = value, _NO_KEY, None, inner


def _plain_scalar(loader: SafeLoader, event: Any) -> Any:
    """The value of a plain scalar, with SafeLoader's rules."""
    text: str = event.value
    tag = resolve_plain(text)
    if tag == _STR:
        return sys.intern(text) if len(text) <= _SHARED_TEXT_LENGTH else text
    if tag == _NULL:
        return None
    if tag == _MERGE:
        raise _NotPlain
    node = yaml.ScalarNode(tag, text, event.start_mark, event.end_mark)
    return loader.yaml_constructors[tag](loader, node)
