"""The fastest path for reading YAML: yaml_rs (Rust) builds the data, where evalh is sure it reads the same.

yaml_rs reads the YAML 1.2 core schema as evalh does (safeload.py) in a quarter of the time libyaml's
events take, but not every document the same way: it reads ``0X1F``, ``1_`` or ``.iNf`` as numbers, a
merge key as a ``<<`` key, an alias as a copy (evalh shares the anchored value), several documents as
a list, raw control characters and an empty key where libyaml refuses them; it does not bound
nesting (its stack overflows) or whole numbers. So a text takes this path only when a scan of it
finds none of those (false alarms only cost the slower path), and the data only when a walk of it
finds nothing unsure: keys made text as ``key_text`` makes them (no two alike), nesting within
MAX_DEPTH, whole numbers within MAX_INT_DIGITS. Anything else answers ``UNSURE``, and today's reader
(plainyaml, then the full locating loader, which words every error) reads the text.
"""

from __future__ import annotations

import re
import sys
from typing import Any, Final

import yaml_rs

from evalh.config.plainyaml import key_text
from evalh.config.safeload import MAX_DEPTH, MAX_INT_DIGITS

__all__ = ["MAX_FAST_CHARS", "UNSURE", "read_fast"]

UNSURE: Final[Any] = object()  # the text must be read by today's reader
# yaml_rs holds a document twice at its peak (its own values, then Python's, before repeated texts
# are shared): about 10 bytes per byte of text more than libyaml's reader, which would take a
# 50,000-test suite (24 MB) past the 500 MB a run may use. Larger texts are read as before.
MAX_FAST_CHARS = 8 * 1024 * 1024
_MAX_INT = 10**MAX_INT_DIGITS
_SHARED_KEY_LENGTH = 24  # keys this short recur in every test of a large suite: one copy of each
# No alias may be replayed: evalh shares an anchored value, yaml_rs would copy it.
_NO_ALIASES = yaml_rs.AliasLimits(
    max_total_replayed_events=0, max_replay_stack_depth=0, max_alias_expansions_per_anchor=0
)

# One pass of bytes.translate per question, then substring searches: C speed (a regular expression
# tried at every position of a 2.4 MB suite took 0.5 s).
_SEPARATORS = b" \n\r[{,:"  # a node may start after one of these (":" in JSON-like flow mappings)
_NUMBER_CHARS = frozenset("-+0123456789abcdefABCDEFxXoO._")


def _table(classes: dict[bytes, bytes], default: bytes) -> bytes:
    table = bytearray(default * 256)
    for chars, mark in classes.items():
        for char in chars:
            table[char] = mark[0]
    return bytes(table)


# a node property (anchor, alias, tag) starting a node; a decimal digit
_PROPERTIES = _table({_SEPARATORS: b" ", b"&*!": b"&", b"0123456789": b"0"}, b"a")
# where a node may start, spaces dropped: a flow collection there (``: [``, ``- {``, a line's ``[``)
_NODE_STARTS = _table({b"\n\r": b"\n", b":?-": b":", b"[{": b"["}, b"a")
_FLOW_STARTS = (b":[", b"\n[")
# a line's leading indentation and compact block indicators
_INDENTATION = _table({b"\n\r": b"\n", b" ?:-": b" "}, b"a")
# printable ASCII, line breaks and every non-ASCII byte (non-ASCII characters are checked apart)
_PLAIN_BYTES = bytes([*range(0x20, 0x7F), *range(0x80, 0x100), 0x0A, 0x0D])
# libyaml refuses a raw C1 control character (NEL breaks a line there), a line or paragraph
# separator, a BOM past the start, U+FFFE/U+FFFF; yaml_rs reads them as text (in UTF-8 here). Each
# is looked for by its first bytes (a substring search), and the pattern tried only where one is.
_UNSURE_NON_ASCII = re.compile(rb"\xc2[\x80-\x9f]|\xe2\x80[\xa8\xa9]|\xef\xbb\xbf|\xef\xbf[\xbe\xbf]")
_UNSURE_NON_ASCII_STARTS = (b"\xc2", b"\xe2\x80", b"\xef")
_ODD_INF_NAN = re.compile(r"\.(?i:inf|nan)")
_CANONICAL_INF_NAN = frozenset([".inf", ".Inf", ".INF", ".nan", ".NaN", ".NAN"])
_DOCUMENT_MARKER = re.compile(r"^(?:---|\.\.\.)(?=[ \r\n]|\Z)", re.MULTILINE)
_MARKER_TEXTS = (b"\n---", b"\n...", b"\r---", b"\r...")
_LEADING_COMMENTS = re.compile(r"(?:[ ]*(?:#[^\n]*)?\r?\n)*")
# evalh refuses a whole number past 4,000 digits; yaml_rs would take quadratic time on a huge one
_LONG_DIGITS = b"0" * 10_000
# block nesting that could overflow yaml_rs's stack (evalh refuses past 100 levels): every two
# levels take at least one more column
_DEEP_INDENTATION = b"\n" + b" " * 200
_SURROGATE_ESCAPE = re.compile(rb"\\(?:u|U0000)[dD][89a-fA-F]")  # "\ud83d", "\U0000DE00"


def read_fast(text: str) -> Any:
    """The data of a one-document YAML text, read by yaml_rs, or UNSURE when today's reader must
    read it (to the same values, or to its located error)."""
    if len(text) > MAX_FAST_CHARS or not _sure_text(text):
        return UNSURE
    try:
        data = yaml_rs.loads(
            text,
            parse_datetime=False,
            alias_limits=_NO_ALIASES,
            duplicate_key_policy=yaml_rs.DuplicateKeyPolicy.Error,
        )
    except (ValueError, TypeError, OverflowError, RecursionError):  # YAMLDecodeError is a ValueError
        return UNSURE
    return data if _settled(data) else UNSURE


def _sure_text(text: str) -> bool:
    """False when yaml_rs might read ``text`` otherwise than evalh's reader, or not safely."""
    try:
        data = text.encode()
    except UnicodeEncodeError:  # a lone surrogate
        return False
    if len(data) != len(text) and _unsure_non_ascii(data):
        return False
    if data.translate(None, _PLAIN_BYTES):  # a tab or a control character
        return False
    if b"<<" in data or data.startswith(b"%") or b"\n%" in data:  # a merge key, a directive
        return False
    if b"\r" in data and data.count(b"\r") != data.count(b"\r\n"):  # a line broken by a CR alone
        return False
    # yaml_rs reads some flow collections libyaml refuses (``[>]``, a key over two lines): a
    # config written in blocks only (as large suites are) is sure
    starts = b"\n" + data.translate(_NODE_STARTS, b" ")
    if any(flow in starts for flow in _FLOW_STARTS):
        return False
    if not data.endswith(b"\n") and (b"|" in data or b">" in data):
        return False  # yaml_rs ends a block scalar's last line, or adds one, at the end of the text
    properties = data.translate(_PROPERTIES)
    if b" &" in properties or properties.startswith(b"&") or _LONG_DIGITS in properties:
        return False
    if _DEEP_INDENTATION in b"\n" + data.translate(_INDENTATION):
        return False
    if b"0X" in data or b"0O" in data or b"0B" in data:
        return False
    if b"\\" in data and _SURROGATE_ESCAPE.search(data):  # yaml_rs pairs them; libyaml refuses them
        return False
    if any(match.group() not in _CANONICAL_INF_NAN for match in _ODD_INF_NAN.finditer(text)):
        return False
    return _one_document(text, data) and not ("_" in text and _number_with_underscore(text))


def _unsure_non_ascii(data: bytes) -> bool:
    """Whether the UTF-8 ``data`` holds a character libyaml refuses and yaml_rs reads
    (``_UNSURE_NON_ASCII``); the pattern, tried at every byte, took 12 ms on a 2.4 MB suite."""
    return any(start in data for start in _UNSURE_NON_ASCII_STARTS) and bool(_UNSURE_NON_ASCII.search(data))


def _number_with_underscore(text: str) -> bool:
    """Whether a token made of number characters has an underscore (``1_``, ``_1``, ``1e1_0``: yaml_rs
    reads them as numbers, evalh as text)."""
    separators = " \n\r[]{},:"
    index = text.find("_")
    while index >= 0:
        start = index
        while start > 0 and text[start - 1] in _NUMBER_CHARS:
            start -= 1
        end = index + 1
        while end < len(text) and text[end] in _NUMBER_CHARS:
            end += 1
        before_ok = start == 0 or text[start - 1] in separators
        after_ok = end == len(text) or text[end] in separators
        if before_ok and after_ok and any(char.isdigit() for char in text[start:end]):
            return True
        index = text.find("_", end)
    return False


def _one_document(text: str, data: bytes) -> bool:
    """No document marker, or one ``---`` before everything but comments: yaml_rs reads several
    documents as a list, where evalh refuses them."""
    if not (data.startswith((b"---", b"...")) or any(mark in data for mark in _MARKER_TEXTS)):
        return True
    markers = list(_DOCUMENT_MARKER.finditer(text))
    if not markers:
        return True
    leading = _LEADING_COMMENTS.match(text)
    only_leading = leading is not None and leading.end() == markers[0].start()
    return len(markers) == 1 and markers[0].group() == "---" and only_leading


def _settled(data: Any) -> bool:
    """Make yaml_rs's data what evalh's reader gives, in place: every key as interned text and one
    copy of each repeated text (as plainyaml keeps them: 50,000 tests repeat a few; 18 MB for 5,000
    tests without it, 9 MB with it); False when something is unsure (nesting past MAX_DEPTH, a whole
    number past MAX_INT_DIGITS, a key that is empty or not a scalar, two keys alike once text)."""
    if type(data) is not dict and type(data) is not list:
        # a document that is one text: yaml_rs reads a block scalar at the top level where libyaml
        # refuses it, and keeps other lines
        return type(data) is not str and _plain_scalar(data)
    shared: dict[str, str] = {}
    share, intern = shared.setdefault, sys.intern
    open_nodes: list[tuple[Any, int]] = [(data, 1)]
    while open_nodes:
        node, depth = open_nodes.pop()
        if depth > MAX_DEPTH:
            return False
        if type(node) is list:
            for index, value in enumerate(node):
                kind = type(value)
                if kind is str:
                    if value == "\n":
                        return False
                    node[index] = share(value, value)
                elif kind is dict or kind is list:
                    open_nodes.append((value, depth + 1))
                elif (kind is int and not -_MAX_INT < value < _MAX_INT) or kind not in _SCALARS:
                    return False
            continue
        pairs = list(node.items())
        node.clear()
        for key, value in pairs:
            if type(key) is str:
                if key == "\n":
                    return False
                key = intern(key)  # as plainyaml: the literals evalh looks keys up with
            elif key is None or not _plain_scalar(key):  # an empty key, a collection, a huge number
                return False
            else:
                key = intern(key_text(key))
            kind = type(value)
            if kind is str:
                if value == "\n":  # an empty block scalar: yaml_rs reads a line break, libyaml nothing
                    return False
                value = share(value, value)
            elif kind is dict or kind is list:
                open_nodes.append((value, depth + 1))
            elif (kind is int and not -_MAX_INT < value < _MAX_INT) or kind not in _SCALARS:
                return False
            node[key] = value
        if len(node) != len(pairs):  # ``1:`` beside ``'1':``, ``true:`` beside ``'true':``
            return False
    return True


_SCALARS = frozenset([int, float, bool, type(None)])


def _plain_scalar(value: Any) -> bool:
    """A scalar evalh's reader gives as well (never a date, a set or a whole number it refuses)."""
    return type(value) in _SCALARS and not (type(value) is int and not -_MAX_INT < value < _MAX_INT)
