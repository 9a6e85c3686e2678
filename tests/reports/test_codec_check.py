"""The codec's check of a report read from disk (reports/codec_check.py) and the report schema
(schemas/report.schema.json) describe one shape: every field the check reads is a field the schema
documents, with a type the schema allows. The check stays looser than the schema on purpose (promptfoo's
and older evalh's reports leave fields out or null, and fields evalh does not read may hold anything), so
it is not the schema itself; this test keeps the two from drifting apart."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from evalh.reports.codec_check import REPORT_SHAPE, Shape

SCHEMA = json.loads(
    (Path(__file__).resolve().parents[2] / "schemas" / "report.schema.json").read_text(encoding="utf-8")
)
# a Shape kind -> the JSON Schema types that hold it
SCHEMA_TYPES = {
    "object": {"object"},
    "list": {"array"},
    "text": {"string"},
    "number": {"number", "integer"},
    "index": {"integer"},
    "time": {"number", "integer"},
    "fraction": {"number", "integer"},
    "bool": {"boolean"},
}


_CONST_TYPES = {bool: {"boolean"}, int: {"integer"}, float: {"number"}, str: {"string"}}


def _resolved(schema: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in schema:
        schema = SCHEMA["$defs"][schema["$ref"].removeprefix("#/$defs/")]
    return schema


def _types(schema: dict[str, Any]) -> set[str] | None:
    """The types ``schema`` allows (None: any), ``anyOf`` / ``oneOf`` branches together."""
    schema = _resolved(schema)
    branches = schema.get("anyOf") or schema.get("oneOf")
    if branches:
        found = [_types(branch) for branch in branches]
        return None if any(types is None for types in found) else set().union(*found)  # type: ignore[misc]
    kind = schema.get("type")
    if kind is None:
        return _CONST_TYPES.get(type(schema["const"])) if "const" in schema else None
    return {kind} if isinstance(kind, str) else set(kind)


ANY: dict[str, Any] = {}  # a schema that says nothing


def _sub(schema: dict[str, Any], key: str) -> dict[str, Any] | None:
    """The schema of ``key`` in the object ``schema``: its property, else its additionalProperties (None:
    the schema forbids the key)."""
    schema = _resolved(schema)
    for branch in schema.get("anyOf") or schema.get("oneOf") or [schema]:
        branch = _resolved(branch)
        if key in branch.get("properties", {}):
            found: dict[str, Any] = branch["properties"][key]
            return found
    extra = schema.get("additionalProperties", True)
    if extra is False:
        return None
    return ANY if extra is True else extra


def _mismatches(
    path: str, shape: Shape, schema: dict[str, Any], seen: set[tuple[int, int]] | None = None
) -> Iterator[str]:
    """Where ``shape`` reads what ``schema`` does not allow (each shape x schema pair once: both recurse)."""
    seen = set() if seen is None else seen
    if (id(shape), id(_resolved(schema))) in seen:
        return
    seen.add((id(shape), id(_resolved(schema))))
    types = _types(schema)
    if types is not None and not SCHEMA_TYPES[shape.kind] & types:
        yield f"{path or 'the document'}: the check reads {shape.kind}, the schema says {sorted(types)}"
        return
    resolved = _resolved(schema)
    for key, sub in shape.fields.items():
        inner = _sub(resolved, key)
        if inner is None:
            yield f"{path}.{key}: the check reads it, the schema forbids it"
        else:
            yield from _mismatches(f"{path}.{key}" if path else key, sub, inner, seen)
    if shape.items is not None:
        yield from _mismatches(f"{path}[]", shape.items, resolved.get("items", ANY), seen)
    if shape.values is not None:
        extra = resolved.get("additionalProperties", ANY)
        yield from _mismatches(f"{path}.*", shape.values, extra if isinstance(extra, dict) else ANY, seen)


def test_every_field_the_check_reads_is_documented_by_the_report_schema() -> None:
    assert list(_mismatches("", REPORT_SHAPE, SCHEMA)) == []


def test_a_field_the_schema_types_otherwise_is_found() -> None:
    """The comparison itself: a check reading ``score`` as text would be named."""
    stats = Shape("object", {"errors": Shape("text")})
    wrong = Shape("object", {"results": Shape("object", {"stats": stats})})
    assert list(_mismatches("", wrong, SCHEMA)) == [
        "results.stats.errors: the check reads text, the schema says ['integer']"
    ]
