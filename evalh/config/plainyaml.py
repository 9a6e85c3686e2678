"""The fast path for reading YAML: data and positions built straight from libyaml's parse events.

Composing a node tree (a node object per value, resolved and then constructed in a second walk) was
most of the time spent reading a large suite. Documents without explicit tags, duplicate or
non-text-scalar keys, within MAX_DEPTH and one per file, are built here in one pass with the same
scalar rules as ``SafeLoader``; anchors, aliases and merge keys (``<<``) too, with the full loader's
results (an alias is the anchored value itself) and its bounds on aliases. Anything else, including
text that is not valid YAML, answers ``None`` and takes the full, locating path, which also words
every error.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import yaml

from evalh.config.safeload import MAX_DEPTH, LimitError, SafeLoader, check_structure, resolve_plain

__all__ = ["Positions", "key_text", "load_plain", "mark_at"]

_STR = "tag:yaml.org,2002:str"
_NULL = "tag:yaml.org,2002:null"
_MERGE = "tag:yaml.org,2002:merge"


# The mark of every mapping key and sequence item, nested as the data is: {key: (mark, inner)} for a
# mapping, [(mark, inner)] for a sequence, None for a scalar. Far lighter than a node tree.
Positions = dict[str, tuple[Any, Any]] | list[tuple[Any, Any]] | None


class _NotPlain(Exception):
    """The document needs the full loader."""


class _PastBound(Exception):
    """The document's aliases or nesting are past a bound: ``error`` says which, where (the full
    loader would find the same, by the same check)."""

    def __init__(self, error: LimitError) -> None:
        super().__init__(error.problem)
        self.error = error


def key_text(key: Any) -> str:
    """A mapping key as text, as in JSON and promptfoo: `null:`, `1.5:` and `true:` are the keys
    "null", "1.5" and "true" (a None or float key broke every path and message built from it)."""
    if isinstance(key, str):
        return key
    return json.dumps(key) if key is None or isinstance(key, bool) else str(key)


def load_plain(text: str, *, located: bool = True) -> tuple[Any, Positions] | None:
    """``(data, positions)`` for a plain YAML document, or None when the full loader must read it;
    raises LimitError for aliases or nesting past evalh's bounds. Without ``located`` the positions
    are None: keeping them took more memory than the data (32 of 54 MB for 5,000 tests), so a config
    is read without them and located again when a message needs."""
    loader = SafeLoader(text)
    try:
        return _build(loader, text, located)
    except _PastBound as past:
        raise past.error from None
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
_MERGE_KEY: Any = object()  # a merge key (``<<``), kept under this key until its mapping ends


def _build(loader: SafeLoader, document: str, located: bool) -> tuple[Any, Positions]:
    """One loop over the events, the open collection in locals and its parents on a stack: Python
    calls per event were most of the time spent above libyaml's own (3 per scalar cost 0.35 s of
    0.7 s for 5,000 tests). ``current`` is the open list or dict, ``key`` the key read in it and not
    yet given a value."""
    next_event, intern = loader.get_event, sys.intern
    plain: dict[str, Any] = {}  # plain scalar text -> its value: a large suite repeats its few
    anchors = _Anchors(document)
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
            if event.tag is not None and event.tag != "!":
                raise _NotPlain
            text = event.value
            if event.implicit[0]:
                value = plain.get(text, _NO_KEY)
                if value is _NO_KEY:
                    value = _plain_scalar(loader, event)
                    if value is not _MERGE_KEY:
                        plain[text] = value
                    elif type(current) is not dict or key is not _NO_KEY or event.anchor is not None:
                        raise _NotPlain  # `<<` other than as a key: the full loader words it
            else:  # quoted, a block, or the non-specific tag "!": text (as SafeLoader.resolve says)
                value = intern(text) if len(text) <= _SHARED_TEXT_LENGTH else text
            inner: Any = None
            if event.anchor is not None:
                anchors.define(event, value, inner)
        elif kind is _MAPPING_START or kind is _SEQUENCE_START:
            if event.tag is not None or len(stack) >= MAX_DEPTH:
                raise _NotPlain
            value = {} if kind is _MAPPING_START else []
            inner = ({} if kind is _MAPPING_START else []) if located else None
            if event.anchor is not None:
                anchors.define(event, value, inner)
        elif kind is _MAPPING_END or kind is _SEQUENCE_END:
            if kind is _MAPPING_END and _MERGE_KEY in current:
                _merge(current, positions)
            current, key, key_mark, positions = stack.pop()
            continue
        elif kind is _ALIAS_EVENT:
            # the anchored value itself, as the full loader shares it, and the anchor's event, whose
            # mark the node tree gives an alias
            value, event, inner = anchors.alias(event)
        elif kind is _STREAM_END or event is None:
            return (root[0], positions[0][1] if positions else None) if root else (None, None)
        else:  # the stream's start, a document's start or end
            if kind is _DOCUMENT_START and documents:
                raise _NotPlain  # the full loader words "expected a single document"
            documents += 1 if kind is _DOCUMENT_START else 0
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
        elif type(value) is not dict and type(value) is not list:
            key = intern(value) if type(value) is str else _scalar_key(value)
            if key in current:
                raise _NotPlain  # the full loader names every duplicate with its position
            key_mark = event.start_mark
            continue
        else:
            raise _NotPlain  # a collection as a key
        if kind is _MAPPING_START or kind is _SEQUENCE_START:
            stack.append((current, key, key_mark, positions))
            current, key, key_mark, positions = value, _NO_KEY, None, inner


def _scalar_key(value: Any) -> Any:
    return value if value is _MERGE_KEY else sys.intern(key_text(value))


class _Anchors:
    """Anchored values by name, for the aliases that follow. The first alias has the document's
    aliases bounded as the full loader bounds them (``check_structure``): a value is shared, not
    copied, here, but every later walk of the data would go through each alias."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.values: dict[str, tuple[Any, Any, Any]] = {}
        self.checked = False

    def define(self, event: Any, value: Any, positions: Positions) -> None:
        if event.anchor in self.values or value is _MERGE_KEY:
            raise _NotPlain  # the full loader words "found duplicate anchor"
        self.values[event.anchor] = (value, event, positions)

    def alias(self, event: Any) -> tuple[Any, Any, Any]:
        if not self.checked:
            try:
                check_structure(self.text)  # other YAML errors: the full loader words them
            except LimitError as error:
                raise _PastBound(error) from None
            self.checked = True
        found = self.values.get(event.anchor)
        if found is None:
            raise _NotPlain  # an undefined alias, or one inside its own anchor
        return found


def _merge(mapping: dict[Any, Any], positions: Any) -> None:
    """Apply a merge key (``<<: *base`` or ``<<: [*a, *b]``) as PyYAML's ``flatten_mapping`` does:
    the merged mappings' keys come first (of a list, an earlier mapping wins over a later one), and
    the mapping's own keys take their places over them."""
    sources = mapping.pop(_MERGE_KEY)
    if type(sources) is not dict and type(sources) is not list:
        raise _NotPlain
    if type(sources) is dict:
        sources = [sources]
    if any(type(source) is not dict for source in sources) or "<<" in mapping:
        raise _NotPlain  # not mappings; or a '<<' key beside a merge, which the full loader refuses
    _put_under(mapping, sources)
    if positions is not None:
        merged = positions.pop(_MERGE_KEY)[1]  # a mapping's positions, or a list's (mark, inner)s
        _put_under(positions, [merged] if type(merged) is dict else [inner for _, inner in merged])


def _put_under(own: dict[Any, Any], sources: list[dict[Any, Any]]) -> None:
    """``own`` with the keys of ``sources`` (the first source's over the others') put before its
    own, whose values win."""
    kept = dict(own)
    own.clear()
    for source in reversed(sources):
        own.update(source)
    own.update(kept)


def _plain_scalar(loader: SafeLoader, event: Any) -> Any:
    """The value of a plain scalar, with SafeLoader's rules."""
    text: str = event.value
    tag = resolve_plain(text)
    if tag == _STR:
        return sys.intern(text) if len(text) <= _SHARED_TEXT_LENGTH else text
    if tag == _NULL:
        return None
    if tag == _MERGE:
        return _MERGE_KEY
    node = yaml.ScalarNode(tag, text, event.start_mark, event.end_mark)
    return loader.yaml_constructors[tag](loader, node)
