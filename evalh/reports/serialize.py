"""JSON text for reports: a ``default=`` for values JSON lacks, and UTF-8 encoding that survives lone
surrogates. Redaction is :mod:`evalh.secrets`' (``redact_config`` for copies, ``redact_bytes`` for every
byte a writer emits).

Two compact forms: :func:`dumps` is ``json.dumps``' (``", "`` and ``": "``: the CSV cells, the HTML
report's data, the viewer's answers), :func:`compact` is orjson's (no spaces: the rows of the JSON and
JSONL reports, the JSON report itself and the run store's texts), five to ten times faster for the same
values read back.
"""

from __future__ import annotations

import dataclasses
import enum
import json
import math
from collections.abc import Mapping
from json import encoder as _stdlib_encoder
from typing import Any

import orjson

__all__ = ["compact", "dumps", "encode_json", "json_default"]


def json_default(value: Any) -> Any:
    """``default=`` for :func:`json.dumps`: numpy values, sets, enums and dataclasses as JSON values."""
    if isinstance(value, float):  # a float subclass: orjson asks, json.dumps writes it as the number
        return float(value)
    if hasattr(value, "tolist"):  # numpy arrays and scalars
        return value.tolist()
    if isinstance(value, set | frozenset):
        return sorted(value, key=str)
    if isinstance(value, enum.Enum):
        return value.value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    return str(value)


# What json.dumps(value, ensure_ascii=False, default=json_default, allow_nan=False) uses, made once:
# every report row and stored row is encoded with it. Without the check for cycles (an id set per
# dict and list: an eighth of a row's encoding): a cycle, which report values never have, ends in
# RecursionError, and the value is then encoded again with the check, which names it as json.dumps does.
_COMPACT = json.JSONEncoder(ensure_ascii=False, default=json_default, allow_nan=False, check_circular=False)
_CHECKED = json.JSONEncoder(ensure_ascii=False, default=json_default, allow_nan=False)


def dumps(value: Any, *, indent: int | None = None) -> str:
    """Strict JSON text of ``value``, non-ASCII kept readable. NaN and infinities, which JSON lacks, become
    null; lone surrogates are left for :func:`encode_json`."""
    try:
        return _encode(value, indent)
    except ValueError as error:
        if "Out of range float" not in str(error):
            raise
    return _encode(_finite(value), indent)


def _encode(value: Any, indent: int | None) -> str:
    if indent is None:
        try:
            return _COMPACT.encode(value)
        except RecursionError:  # a cycle (ValueError from the check) or a value too deep for either
            return _CHECKED.encode(value)
    return json.dumps(value, ensure_ascii=False, indent=indent, default=json_default, allow_nan=False)


# datetimes and dataclasses through json_default, as json.dumps takes them (orjson's own forms differ);
# keys that are not strings written as json.dumps writes them (1, 1.5, true, null), only when a value has
# one: the option costs a third of orjson's time on every dict
_ORJSON = orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS
_ORJSON_ANY_KEYS = _ORJSON | orjson.OPT_NON_STR_KEYS


def compact(value: Any) -> str:
    """Compact JSON text of ``value`` as orjson writes it: no spaces, non-ASCII kept readable, NaN and
    infinities as null, a lone surrogate as its ``\\udcff`` escape (the text is valid UTF-8). What orjson
    refuses (a lone surrogate, an integer beyond 64 bits, nesting deeper than 254) is written by json's
    own encoder in the same form, floats included, so a value's text never depends on its neighbours."""
    for options in (_ORJSON, _ORJSON_ANY_KEYS):
        try:
            return orjson.dumps(value, default=json_default, option=options).decode("utf-8")
        except orjson.JSONEncodeError:
            pass
    try:
        text = "".join(_orjson_form(value))
    except RecursionError:  # deeper than the pure-Python encoder goes: json's C encoder, floats as repr
        text = _TERSE.encode(_finite(value))
    return text if text.isascii() else encode_json(text).decode("utf-8")


def _float_text(value: float) -> str:
    return orjson.dumps(value).decode("ascii")  # shortest round-trip digits, NaN and infinities null


def _orjson_form(value: Any) -> Any:
    """json's pure-Python encoder (the one that takes a float format) writing orjson's form."""
    make = _stdlib_encoder._make_iterencode  # type: ignore[attr-defined]  # private, stable since 2.6
    encode = make(
        {}, json_default, _stdlib_encoder.encode_basestring, None, _float_text, ":", ",", False, False, False
    )
    return encode(value, 0)


_TERSE = json.JSONEncoder(ensure_ascii=False, default=json_default, allow_nan=False, separators=(",", ":"))


def _finite(value: Any) -> Any:
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Mapping):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    if type(value) not in _SCALARS and hasattr(value, "tolist"):
        return _finite(value.tolist())
    return value


def encode_json(text: str) -> bytes:
    """UTF-8 bytes of JSON text. A lone surrogate (only possible inside a JSON string) becomes the
    ``\\udcff`` escape, which is valid JSON and decodes back to the same string."""
    return text.encode("utf-8", errors="backslashreplace")


_SCALARS = (str, int, float, bool, type(None))
