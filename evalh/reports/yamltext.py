"""YAML text of a JSON-like document (the ``.yaml``/``.yml``/``.txt`` reports).

A small block-style emitter instead of ``yaml.dump``: PyYAML's representer needs about 50 s for a
10,000-row report, this needs about one. Strings are written plain only when unambiguous (a letter
first, then letters, digits, spaces and ``_.-/,'()+=?!;``; not a YAML keyword), otherwise as
double-quoted scalars with JSON escapes (a subset of YAML's). Characters YAML readers treat as line
breaks or refuse (C1 controls, U+2028/9, BOM) are escaped too, and a lone surrogate, which YAML cannot
hold, is written as the text ``\\udcff``. ``yaml.safe_load`` of the result gives the document back
(tests check it).
"""

from __future__ import annotations

import functools
import json
import math
import re
import uuid
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from evalh.reports.serialize import json_default

__all__ = ["to_yaml_chunks", "to_yaml_text"]

_PLAIN = re.compile(r"[A-Za-z_](?:[A-Za-z0-9_.\-/ ,'()+=?!;]*[A-Za-z0-9_.\-/)])?\Z")
_KEYWORDS = frozenset(
    {"y", "n", "yes", "no", "on", "off", "true", "false", "null", "nan", "inf", "infinity", "none"}
)
# Beyond what JSON escapes: C1 controls and DEL, YAML's extra line breaks, the BOM, non-characters.
_YAML_UNSAFE = re.compile("[\x7f-\x9f\u2028\u2029\ufeff\ufffe\uffff]")
_SURROGATE = re.compile("[\ud800-\udfff]")


def _quote(text: str) -> str:
    if _PLAIN.match(text) and text.lower() not in _KEYWORDS:
        return text
    quoted = json.dumps(text, ensure_ascii=False)
    quoted = _YAML_UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", quoted)
    return _SURROGATE.sub(lambda m: f"\\\\u{ord(m.group()):04x}", quoted)


_quote_key = functools.lru_cache(maxsize=4096)(_quote)


def _float(value: float) -> str:
    if math.isnan(value):
        return ".nan"
    if math.isinf(value):
        return ".inf" if value > 0 else "-.inf"
    text = repr(value)
    mantissa, _, exponent = text.partition("e")
    if exponent and "." not in mantissa:  # PyYAML reads 1e-05 as a string, 1.0e-05 as a float
        text = f"{mantissa}.0e{exponent}"
    return text


def _scalar(value: Any) -> str:
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _float(value)
    return _quote(str(value))


def _emit_mapping(value: Mapping[Any, Any], indent: int, out: list[str]) -> None:
    pad = " " * indent
    for key, item in value.items():
        quoted = _quote_key(key if type(key) is str else str(key))
        # An implicit key may not exceed 1024 characters; longer ones use the explicit "? key" form.
        head = f"{pad}{quoted}:" if len(quoted) < 1000 else f"{pad}? {quoted}\n{pad}:"
        _emit_entry(head, item, indent, out)


def _emit_list(value: list[Any], indent: int, out: list[str]) -> None:
    pad = " " * indent
    for item in value:
        if type(item) is dict and item:
            start = len(out)
            _emit_mapping(item, indent + 2, out)
            out[start] = f"{pad}- {out[start][indent + 2 :]}"
        else:
            _emit_entry(f"{pad}-", item, indent, out)


def _emit_entry(head: str, item: Any, indent: int, out: list[str]) -> None:
    kind = type(item)
    if kind is str:
        out.append(f"{head} {_quote(item)}")
    elif kind is dict or kind is list:
        if not item:
            out.append(f"{head} {{}}" if kind is dict else f"{head} []")
        else:
            out.append(head)
            if kind is dict:
                _emit_mapping(item, indent + 2, out)
            else:
                _emit_list(item, indent + 2, out)
    elif kind is float:
        out.append(f"{head} {_float(item)}")
    elif kind is int or kind is bool or item is None:
        out.append(f"{head} {_scalar(item)}")
    else:
        _emit_entry(head, _plain(item), indent, out)


def _plain(value: Any) -> Any:
    """``value`` as a dict, list or scalar (JSON's rules for anything else)."""
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, list | tuple):
        return list(value)
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    return _plain(json_default(value))


def to_yaml_text(document: Any) -> str:
    """The YAML text of ``document`` (mappings, lists, tuples, scalars; other values as JSON would)."""
    document = _plain(document)
    out: list[str] = []
    if type(document) is dict and document:
        _emit_mapping(document, 0, out)
    elif type(document) is list and document:
        _emit_list(document, 0, out)
    elif type(document) is dict or type(document) is list:
        return "{}\n" if type(document) is dict else "[]\n"
    else:
        return _scalar(document) + "\n"
    return "\n".join(out) + "\n"


def to_yaml_chunks(document: Mapping[str, Any], rows: Iterable[Any]) -> Iterator[str]:
    """:func:`to_yaml_text` of a JSON report with ``rows`` as its ``results.results``, in pieces: the
    rows are emitted one at a time (they may come from a generator), never all held."""
    rows = iter(rows)
    first = next(rows, _NO_ROW)
    mark = f"evalhrows{uuid.uuid4().hex}"  # a plain scalar no report holds
    results = {**(document.get("results") or {}), "results": [] if first is _NO_ROW else mark}
    text = to_yaml_text({**document, "results": results})
    at = text.find(f": {mark}\n")
    if first is _NO_ROW or at < 0:
        yield text
        return
    line_start = text.rfind("\n", 0, at) + 1
    indent = len(text[line_start:at]) - len(text[line_start:at].lstrip(" ")) + 2
    yield text[: at + 1]
    for row in _chained(first, rows):
        out: list[str] = []
        _emit_list([row], indent, out)
        yield "\n" + "\n".join(out)
    yield text[at + len(mark) + 2 :]


_NO_ROW = object()


def _chained(first: Any, rest: Iterator[Any]) -> Iterator[Any]:
    yield first
    yield from rest
