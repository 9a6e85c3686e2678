"""Structured-output assertions: is-json and contains-json, each with an optional JSON Schema value.

The schema value is an object, or a YAML/JSON string (a ``file://`` value arrives already loaded). It is
checked with the validator its ``$schema`` names (Draft 2020-12 by default), formats included. Output
that is already a dict or list (a non-string provider output) counts as JSON.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from functools import lru_cache
from typing import TYPE_CHECKING, Any

import yaml

from evalh.assertions.base import output_as_text
from evalh.assertions.registry import output_check
from evalh.assertions.strings import json_default, loads_strict, parse_json_output, preview
from evalh.model import AssertionSpec, Measurement

if TYPE_CHECKING:  # jsonschema loads when a schema value is checked: most is-json assertions have none
    from jsonschema.protocols import Validator

__all__ = ["extract_json_objects", "json_schema_validator", "schema_problem", "schema_violation"]

_MAX_OBJECT_CHARS = 100_000  # promptfoo's cap on one extracted object
_TOO_DEEP_TO_CHECK = "nested too deeply to check against the schema (about 250 levels at most)"
_SCAN_BUDGET_PER_CHAR = 20  # characters scanned per character of text, in all, by extract_json_objects


# ---------------------------------------------------------------------------------------- schemas


@lru_cache(maxsize=256)
def _parse_schema_text(text: str) -> Any:
    return yaml.safe_load(text)


@lru_cache(maxsize=256)
def _validator_for(canonical: str) -> Validator | str:
    """A ready validator for the schema's canonical JSON, or the problem text."""
    from jsonschema.exceptions import SchemaError
    from jsonschema.validators import validator_for

    schema = json.loads(canonical)
    cls = validator_for(schema)
    try:
        cls.check_schema(schema)
    except SchemaError as error:
        where = error.json_path if error.path else "the schema"
        return f"the value is not a valid JSON Schema: {where}: {error.message}"
    return cls(schema, format_checker=cls.FORMAT_CHECKER)


def _validator(value: Any) -> Validator | str | None:
    """The schema value as a validator; None when there is no schema; a problem text when it is bad."""
    if value is None or value == "":
        return None
    schema = value
    if isinstance(value, str):
        try:
            schema = _parse_schema_text(value)
        except yaml.YAMLError as error:
            return f"the schema value is not valid YAML or JSON: {error}".splitlines()[0]
        if schema is None:
            return None
    if not isinstance(schema, Mapping | bool):
        return f"the schema value must be an object (got {type(schema).__name__})"
    try:
        canonical = json.dumps(schema, sort_keys=True, ensure_ascii=False, default=json_default)
    except (TypeError, ValueError) as error:
        return f"the schema value is not JSON data: {error}"
    return _validator_for(canonical)


def json_schema_validator(value: Any) -> Validator | str | None:
    """A JSON Schema value (an object or a YAML/JSON text) as a ready validator (cached by content);
    a problem text when it is not a usable schema; None when there is none."""
    return _validator(value)


def _schema_validator(value: Any) -> Validator | None:
    """The value's validator, which validate has built once already (so it is not a problem text)."""
    validator = _validator(value)
    assert not isinstance(validator, str), "validate refuses an unusable schema value"
    return validator


def schema_problem(value: Any) -> str | None:
    """Static check of a schema value (object or YAML/JSON string): None when usable."""
    validator = _validator(value)
    return validator if isinstance(validator, str) else None


def schema_violation(validator: Validator, instance: Any) -> str | None:
    """The most relevant violation as ``$.path: message``, or None when ``instance`` is valid. A
    document too deep for the validator's recursion is a violation, not a crash."""
    from jsonschema.exceptions import best_match

    try:
        error = best_match(validator.iter_errors(instance))
    except RecursionError:
        return f"$: {_TOO_DEEP_TO_CHECK}"
    if error is None:
        return None
    return f"{error.json_path}: {error.message}"


def _check_schema(value: Any, _config: Mapping[str, Any]) -> str | None:
    return schema_problem(value)


# ----------------------------------------------------------------------------------------- is-json


# The value: a JSON Schema (an object, a YAML/JSON string or file://); promptfoo also accepts true.
_JSON_SCHEMA_VALUE: dict[str, Any] = {
    "type": ["object", "string", "boolean"],
    "description": "An optional JSON Schema: an object, a YAML/JSON text or a file:// path.",
}


@output_check(
    "is-json",
    reads_text=False,
    family="structured",
    description="The whole output is JSON; with a value, it also validates against that JSON Schema",
    value_schema=_JSON_SCHEMA_VALUE,
    check=_check_schema,
)
def is_json(spec: AssertionSpec, output: Any, _text: str) -> Measurement:
    validator = _schema_validator(spec.value)
    parsed, document, problem = parse_json_output(output)
    if not parsed:
        return Measurement.pass_fail(False, f"Output is not valid JSON ({problem})")
    if validator is None:
        return Measurement.pass_fail(True, "Output is valid JSON")
    violation = schema_violation(validator, document)
    if violation is not None:
        reason = f"Output is JSON but does not match the schema: {violation}"
        return Measurement.pass_fail(False, reason, violation=violation)
    return Measurement.pass_fail(True, "Output is valid JSON matching the schema")


# ----------------------------------------------------------------------------------- contains-json


def _balanced_end(text: str, start: int) -> tuple[int, int]:
    """Scan from the ``{`` at ``start``: (end index, unclosed braces), aware of strings and escapes."""
    depth = 0
    in_string = False
    index = start
    limit = min(len(text), start + _MAX_OBJECT_CHARS)
    while index < limit:
        char = text[index]
        if in_string:
            if char == "\\":
                index += 1
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char == "/" and text.startswith(("//", "/*"), index):
            index = _comment_end(text, index)
            continue
        elif char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
            if depth == 0:
                return index + 1, 0
        index += 1
    return limit, depth


def _comment_end(text: str, index: int) -> int:
    """The index just past the comment starting at ``index`` (``//`` up to the newline, or ``/* */``)."""
    if text.startswith("//", index):
        newline = text.find("\n", index)
        return len(text) if newline < 0 else newline
    close = text.find("*/", index + 2)
    return len(text) if close < 0 else close + 2


def _strip_comments(candidate: str) -> str:
    """Remove ``//`` line comments and ``/* */`` block comments outside strings."""
    if "/" not in candidate:
        return candidate
    out: list[str] = []
    index, in_string = 0, False
    while index < len(candidate):
        char = candidate[index]
        if in_string:
            out.append(char)
            if char == "\\" and index + 1 < len(candidate):
                out.append(candidate[index + 1])
                index += 1
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
            out.append(char)
        elif char == "/" and candidate.startswith(("//", "/*"), index):
            index = _comment_end(candidate, index)
            continue
        else:
            out.append(char)
        index += 1
    return "".join(out)


def _parse_candidate(candidate: str) -> Any:
    try:
        return loads_strict(candidate)
    except ValueError:
        pass
    try:
        return loads_strict(_strip_comments(candidate))
    except ValueError:
        return None


def extract_json_objects(text: str) -> list[Any]:
    """Every ``{...}`` object found in ``text``, leniently: balanced braces (string-aware), missing
    closing braces at the end auto-closed, ``//`` and ``/* */`` comments tolerated. Top-level arrays
    are not extracted; an object inside an unparsable region is still found (within a scanning budget
    linear in the text's length, so a hostile text cannot make the search quadratic)."""
    objects: list[Any] = []
    # Each failed start is scanned again from the next brace: bound the total, or '{' * n (a hostile
    # model output) costs n**2 steps. Ordinary text, nested code included, stays far below.
    budget = _SCAN_BUDGET_PER_CHAR * len(text) + _MAX_OBJECT_CHARS
    start = text.find("{")
    while start >= 0 and budget > 0:
        end, unclosed = _balanced_end(text, start)
        budget -= end - start
        candidate = text[start:end] + "}" * unclosed
        parsed = _parse_candidate(candidate)
        if isinstance(parsed, dict):
            objects.append(parsed)
            start = text.find("{", end)
        else:
            start = text.find("{", start + 1)
    return objects


def _json_candidates(output: Any) -> list[Any]:
    if output is not None and not isinstance(output, str):
        return [output] if isinstance(output, Mapping | list) else []
    return extract_json_objects(output or "")


@output_check(
    "contains-json",
    reads_text=False,
    family="structured",
    description="Output contains a JSON object; with a value, one of them validates against the JSON Schema",
    value_schema=_JSON_SCHEMA_VALUE,
    check=_check_schema,
)
def contains_json(spec: AssertionSpec, output: Any, _text: str) -> Measurement:
    validator = _schema_validator(spec.value)
    objects = _json_candidates(output)
    if not objects:  # the text only here: a structured output JSON cannot encode has objects
        reason = f"Output contains no JSON object ({preview(output_as_text(output), 60)})"
        return Measurement.pass_fail(False, reason, objects=0)
    count = f"{len(objects)} JSON object{'s' if len(objects) > 1 else ''}"
    if validator is None:
        return Measurement.pass_fail(True, f"Output contains {count}", objects=len(objects))
    violations = [schema_violation(validator, document) for document in objects]
    if None in violations:
        reason = f"Output contains {count}, one matching the schema"
        return Measurement.pass_fail(True, reason, objects=len(objects), matching=violations.index(None))
    reason = f"Output contains {count} but none matches the schema: {violations[0]}"
    return Measurement.pass_fail(False, reason, objects=len(objects), violation=violations[0])
