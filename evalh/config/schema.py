"""The JSON Schemas shipped with evalh, and plain-English schema problems with locations.

The config's schema is ``schemas/evalh.schema.json`` (the base: every key, no assertion type) plus the
assertion section generated from the registry (``config/assertion_schema.py``; shipped as
``schemas/evalh.assertions.json``, written by ``python -m evalh.config.generated``), assembled once per
process: every run checks a config with it (Draft 2020-12) before anything else, and ``evalh schema``
prints it for editors. jsonschema's messages are rewritten for people
who do not read JSON Schema: ``must be a number (got a string '0.8x')``, ``unknown key 'asert'. Did
you mean 'assert'?``.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalh.assertions.family_index import FAMILY_OF
from evalh.assertions.promptfoo_only import unknown_type
from evalh.assertions.registry import NONBLANK_PATTERN, all_assertions, registered_names
from evalh.config.assertion_schema import assemble, insert_section
from evalh.config.locate import JsonPath, close_matches
from evalh.errors import ConfigFileError

if TYPE_CHECKING:  # jsonschema loads with the first validator: a run that validates nothing needs none
    from jsonschema import Draft202012Validator, ValidationError

__all__ = [
    "ASSERTION_SECTION",
    "CONFIG_SCHEMA",
    "MAX_SAFE_INTEGER",
    "SchemaProblem",
    "assembled_text",
    "assertion_type_names",
    "base_schema",
    "config_validator",
    "defs_validator",
    "fragment_validator",
    "load_schema",
    "schema_path",
    "schema_problems",
    "schema_text",
    "test_validator",
    "write_schema",
]

CONFIG_SCHEMA = "evalh.schema.json"
ASSERTION_SECTION = "evalh.assertions.json"  # generated from the registry by evalh/config/generated.py
_PACKAGE_DIR = Path(__file__).resolve().parent.parent
_JSON_TYPES = {
    "string": "a string",
    "number": "a number",
    "integer": "a whole number",
    "boolean": "true or false",
    "object": "a mapping (key: value)",
    "array": "a list",
    "null": "null",
}
MAX_SAFE_INTEGER = 2**53  # JavaScript's (so promptfoo's) largest exact whole number
_NON_FINITE = {"nan": "NaN", "inf": "infinity", "-inf": "minus infinity"}
# promptfoo keys evalh deliberately does not support, with what to do instead.
_UNSUPPORTED: dict[str, str] = {}  # none today: every promptfoo key evalh refused now runs


def schema_path(name: str = "evalh.schema.json") -> Path:
    """The schema file: ``evalh/schemas/<name>`` in a wheel, ``<repo>/schemas/<name>`` in a checkout."""
    for candidate in (_PACKAGE_DIR / "schemas" / name, _PACKAGE_DIR.parent / "schemas" / name):
        if candidate.is_file():
            return candidate
    raise ConfigFileError(
        f"schema {name!r} is not installed with evalh",
        where=str(_PACKAGE_DIR / "schemas" / name),
        hint="Reinstall evalh (pip install --force-reinstall evalh)",
    )


@functools.lru_cache(maxsize=4)
def _load_schema_text(name: str) -> str:
    return schema_path(name).read_text(encoding="utf-8")


def base_schema(name: str = CONFIG_SCHEMA) -> dict[str, Any]:
    """The schema file as shipped (a fresh copy each call); the config's lacks the assertion section."""
    loaded: dict[str, Any] = json.loads(_load_schema_text(name))
    return loaded


@functools.lru_cache(maxsize=4)
def _assembled_text(name: str) -> str:
    if name != CONFIG_SCHEMA:
        return _load_schema_text(name)
    if registered_names() <= FAMILY_OF.keys():
        # Only the shipped families' types: their section as generated from them (config/generated.py),
        # instead of importing all 21 families to make it again
        section = json.loads(_load_schema_text(ASSERTION_SECTION))
        return json.dumps(insert_section(base_schema(name), section), ensure_ascii=False)
    # A type registered beyond the shipped families (a plugin's, a test's): the section made anew
    return json.dumps(assemble(base_schema(name), all_assertions()), ensure_ascii=False)


def assembled_text(name: str = CONFIG_SCHEMA) -> str:
    """The full schema as compact JSON text (assembled once per process): what the shape cache is keyed by."""
    return _assembled_text(name)


def load_schema(name: str = CONFIG_SCHEMA) -> dict[str, Any]:
    """The full schema (a fresh copy each call): for the config's, the base file plus the assertion
    section generated from the registry (assembled once per process)."""
    loaded: dict[str, Any] = json.loads(_assembled_text(name))
    return loaded


def schema_text(name: str = CONFIG_SCHEMA) -> str:
    """The full schema as the JSON text ``evalh schema`` prints."""
    return json.dumps(load_schema(name), indent=2, ensure_ascii=False) + "\n"


def write_schema(target: Path, name: str = CONFIG_SCHEMA) -> Path:
    """Write the full schema to ``target`` (``evalh schema -o``, ``evalh init``): a local copy editors
    complete from, with every assertion type of this evalh."""
    try:
        target.write_text(schema_text(name), encoding="utf-8")
    except OSError as error:
        raise ConfigFileError(
            f"cannot write the schema: {error.strerror or error}",
            where=str(target),
            hint="Choose a writable path for -o",
        ) from error
    return target


def _is_number(checker: Any, instance: Any) -> bool:
    """JSON's numbers: NaN and the infinities are not numbers (YAML's .nan/.inf, a CSV's "inf")."""
    if isinstance(instance, float):
        return math.isfinite(instance)
    return _is_integer(checker, instance)


def _is_integer(checker: Any, instance: Any) -> bool:
    """Whole numbers as written (2.0 would reach the runner as a float), and exact in JSON and
    JavaScript: 10**400 cannot even become a float."""
    return isinstance(instance, int) and not isinstance(instance, bool) and abs(instance) <= MAX_SAFE_INTEGER


@functools.cache
def _validator_class() -> type[Draft202012Validator]:
    """Draft 2020-12, except that a number is finite and an integer is an int."""
    from jsonschema import Draft202012Validator, validators

    validator_class: type[Draft202012Validator] = validators.extend(  # type: ignore[no-untyped-call]
        Draft202012Validator,
        type_checker=Draft202012Validator.TYPE_CHECKER.redefine_many(
            {"number": _is_number, "integer": _is_integer}
        ),
    )
    return validator_class


@functools.lru_cache(maxsize=1)
def config_validator() -> Draft202012Validator:
    """The validator of a whole config."""
    validator: Draft202012Validator = _validator_class()(load_schema())
    return validator


@functools.lru_cache(maxsize=8)
def defs_validator(*names: str, allow_string: bool = False) -> Draft202012Validator:
    """A validator for one of the schema's ``$defs`` (any of ``names``; or a plain string)."""
    from referencing import Registry, Resource

    schema = load_schema()
    registry: Registry[Any] = Registry().with_resource(schema["$id"], Resource.from_contents(schema))
    branches: list[dict[str, Any]] = [{"$ref": f"{schema['$id']}#/$defs/{name}"} for name in names]
    if allow_string:
        branches.insert(0, {"type": "string", "minLength": 1})
    fragment = branches[0] if len(branches) == 1 else {"anyOf": branches}
    validator: Draft202012Validator = _validator_class()(fragment, registry=registry)
    return validator


def fragment_validator(fragment: Mapping[str, Any]) -> Draft202012Validator:
    """A validator for a schema fragment (an assertion's declared value shape), with the config's types."""
    validator: Draft202012Validator = _validator_class()(dict(fragment))
    return validator


def test_validator() -> Draft202012Validator:
    """The validator of one test (for tests loaded from .yaml/.json/.jsonl files)."""
    return defs_validator("test")


@functools.cache
def assertion_type_names() -> tuple[str, ...]:
    """Every assertion type the schema accepts (``not-`` variants included): the registry's, as its
    assertion section lists them (importing no family when that section is the shipped one)."""
    kind = json.loads(_assembled_text(CONFIG_SCHEMA))["$defs"]["assertion"]["properties"]["type"]
    return tuple(kind["enum"])


@dataclass(frozen=True)
class SchemaProblem:
    path: JsonPath
    message: str
    hint: str | None = None
    ignorable: bool = False  # an unknown key near no known one: a warning unless --strict


def schema_problems(instance: Any, validator: Draft202012Validator | None = None) -> list[SchemaProblem]:
    """Every schema violation of ``instance``, in document order, as plain-English problems."""
    checker = validator or config_validator()
    problems: list[SchemaProblem] = []
    for error in sorted(checker.iter_errors(instance), key=lambda e: [str(p) for p in e.absolute_path]):
        for leaf in _expand(error):
            problems.extend(_describe(leaf, instance))
    return problems


def _instance_type(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, Mapping):
        return "object"
    if isinstance(value, list):
        return "array"
    return "null" if value is None else type(value).__name__


def _got(value: Any) -> str:
    if isinstance(value, float) and not math.isfinite(value):
        return f"{_NON_FINITE[repr(value)]}, which is not a finite number"
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > MAX_SAFE_INTEGER:
        return f"a whole number of {len(str(abs(value)))} digits, beyond ±2**53"
    kind = _JSON_TYPES.get(_instance_type(value), _instance_type(value))
    if isinstance(value, str | int | float) and not isinstance(value, bool):
        shown = repr(value) if len(repr(value)) <= 40 else repr(value)[:37] + "...'"
        return f"{kind} {shown}"
    return kind


def _join_or(items: list[str]) -> str:
    unique = list(dict.fromkeys(items))
    return unique[0] if len(unique) == 1 else ", ".join(unique[:-1]) + " or " + unique[-1]


def _branch_types(schema: Any) -> list[str]:
    if not isinstance(schema, Mapping):
        return []
    if "$ref" in schema:
        return ["a mapping (key: value)"]
    kinds = schema.get("type")
    if kinds is None:
        nested = schema.get("anyOf") or schema.get("oneOf") or []
        return [kind for branch in nested for kind in _branch_types(branch)]
    names = [kinds] if isinstance(kinds, str) else list(kinds)
    return [_JSON_TYPES.get(name, name) for name in names]


def _is_type_mismatch(error: ValidationError) -> bool:
    """True when the error only says the value has another type than this branch expects."""
    if len(error.path) > 0:
        return False
    if error.validator == "type":
        return True
    if error.validator in ("anyOf", "oneOf") and error.context:
        return all(_is_type_mismatch(sub) for sub in error.context)
    return False


def _expand(error: ValidationError) -> list[ValidationError]:
    """For anyOf/oneOf, every error of the branch the user most likely meant: one of the value's
    type, with the fewest errors (so a typo in one key is reported as that typo), and of those the one
    whose errors lie deepest (its keys matched: ``{id, config: {apiKey: 7}}`` is a provider with a bad
    key, not a ``{embedding, text}`` map with two unknown ones)."""
    from jsonschema.exceptions import relevance

    if error.validator not in ("anyOf", "oneOf") or not error.context:
        return [error]
    branches: dict[Any, list[ValidationError]] = {}
    for sub in error.context:
        branches.setdefault(sub.relative_schema_path[0], []).append(sub)
    candidates = {
        index: subs for index, subs in branches.items() if not all(_is_type_mismatch(sub) for sub in subs)
    }
    if not candidates:
        return [error]
    fewest = min(len(subs) for subs in candidates.values())
    tied = [sub for subs in candidates.values() if len(subs) == fewest for sub in subs]
    branch = max(tied, key=lambda sub: (len(sub.path), relevance(sub))).relative_schema_path[0]
    return [leaf for sub in candidates[branch] for leaf in _expand(sub)]


def _describe(error: ValidationError, root: Any) -> Iterable[SchemaProblem]:
    path: JsonPath = tuple(error.absolute_path)
    handler = _HANDLERS.get(str(error.validator))
    if handler is not None:
        yield from handler(error, path, root)
        return
    yield SchemaProblem(path, _in_assertion(error.message, path, root))


def _assertion_type_at(path: JsonPath, root: Any) -> str | None:
    """The type of the assertion that ``path`` lies inside (for "... in a 'contains' assertion")."""
    for cut in range(len(path) - 1, 0, -1):
        if path[cut - 1] == "assert" and isinstance(path[cut], int):
            node: Any = root
            try:
                for part in path[: cut + 1]:
                    node = node[part]
            except (KeyError, IndexError, TypeError):
                return None
            kind = node.get("type") if isinstance(node, Mapping) else None
            return kind if isinstance(kind, str) else None
    return None


def _is_assertion_type_key(path: JsonPath) -> bool:
    """Whether ``path`` is an assertion's own ``type`` (``assert[3].type``), not a ``type`` key inside its
    value (``trajectory:step-count``'s ``value.type`` is a step type)."""
    return len(path) >= 3 and path[-1] == "type" and isinstance(path[-2], int) and path[-3] == "assert"


def _in_assertion(message: str, path: JsonPath, root: Any) -> str:
    kind = _assertion_type_at(path, root)
    if kind and not _is_assertion_type_key(path):
        article = "an" if kind[:1] in "aeio" else "a"
        return f"{message} for {article} {kind!r} assertion"
    return message


def _schema_of(error: ValidationError) -> Mapping[str, Any]:
    return error.schema if isinstance(error.schema, Mapping) else {}


def _listed(error: ValidationError) -> list[Any]:
    value = error.validator_value
    return list(value) if isinstance(value, list | tuple) else []


def _on_additional(error: ValidationError, path: JsonPath, root: Any) -> Iterable[SchemaProblem]:
    known = list(_schema_of(error).get("properties", {}))
    extra = [key for key in error.instance if key not in known] if isinstance(error.instance, Mapping) else []
    for key in extra:
        match = close_matches(str(key), known)
        if match:
            hint = f"Did you mean {match!r}?"
        elif key in _UNSUPPORTED:
            hint = f"{key!r} is a promptfoo key: {_UNSUPPORTED[key]}"
        else:
            hint = f"Allowed keys here: {', '.join(known)}"
        ignorable = not (match and _near_miss(str(key), match)) and key not in _UNSUPPORTED
        yield SchemaProblem((*path, key), f"unknown key {key!r}", hint, ignorable)


def _near_miss(key: str, known: str) -> bool:
    """A typo of ``known`` (an error), rather than a key of its own (ignored with a warning, as promptfoo
    ignores it): the same letters apart from case and ``_``/``-``, one a prefix of the other
    (``maximum`` for ``max``), or a few edits away, a swap counting one (one edit per four letters:
    ``test`` for ``tests``, ``vlaue`` for ``value``; ``outputs`` is not ``outputPath``)."""
    a, b = (text.lower().replace("_", "").replace("-", "") for text in (key, known))
    if a == b or (min(len(a), len(b)) >= 3 and (a.startswith(b) or b.startswith(a))):
        return True
    return _edits(a, b) <= max(1, len(b) // 4)


def _edits(a: str, b: str) -> int:
    """Damerau-Levenshtein distance, adjacent swaps counting one (keys are short)."""
    rows = [list(range(len(b) + 1))]
    for i in range(1, len(a) + 1):
        row = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            row[j] = min(rows[i - 1][j] + 1, row[j - 1] + 1, rows[i - 1][j - 1] + (a[i - 1] != b[j - 1]))
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                row[j] = min(row[j], rows[i - 2][j - 2] + 1)
        rows.append(row)
    return rows[-1][-1]


def _on_required(error: ValidationError, path: JsonPath, root: Any) -> Iterable[SchemaProblem]:
    present = error.instance if isinstance(error.instance, Mapping) else {}
    rule = _schema_of(error).get("description") if "then" in error.absolute_schema_path else None
    for key in _listed(error):
        if key not in present:
            yield SchemaProblem(path, f"missing required key {key!r}", rule)


def _on_type(error: ValidationError, path: JsonPath, root: Any) -> Iterable[SchemaProblem]:
    wanted = _join_or(_branch_types(error.schema))
    message = _in_assertion(f"must be {wanted} (got {_got(error.instance)})", path, root)
    yield SchemaProblem(path, message, _switch_hint(error, path))


def _switch_hint(error: ValidationError, path: JsonPath) -> str | None:
    """``tracing: true`` for a block switched on by its ``enabled`` key: say how to write it."""
    properties = error.schema.get("properties") if isinstance(error.schema, Mapping) else None
    if not isinstance(error.instance, bool) or not path or not isinstance(properties, Mapping):
        return None
    if "enabled" not in properties:
        return None
    value = "true" if error.instance else "false"
    return f"Write `{path[-1]}: {{enabled: {value}}}`"


def _on_any_of(error: ValidationError, path: JsonPath, root: Any) -> Iterable[SchemaProblem]:
    wanted = _join_or(_branch_types(error.schema))
    message = f"must be {wanted} (got {_got(error.instance)})" if wanted else "has an invalid form"
    yield SchemaProblem(path, _in_assertion(message, path, root))


def _on_enum(error: ValidationError, path: JsonPath, root: Any) -> Iterable[SchemaProblem]:
    value = error.instance
    if _is_assertion_type_key(path) and _assertion_type_at(path, root) is not None:
        registered = list(all_assertions())
        candidates = registered + [f"not-{name}" for name in registered]
        match = close_matches(str(value), candidates) or close_matches(str(value), _listed(error))
        yield SchemaProblem(path, *unknown_type(str(value), match))
        return
    allowed = ", ".join(repr(item) for item in _listed(error))
    yield SchemaProblem(path, f"must be one of {allowed} (got {_got(value)})")


def _on_bound(error: ValidationError, path: JsonPath, root: Any) -> Iterable[SchemaProblem]:
    signs = {"minimum": ">=", "maximum": "<=", "exclusiveMinimum": ">", "exclusiveMaximum": "<"}
    sign = signs[str(error.validator)]
    message = f"must be {sign} {error.validator_value} (got {error.instance})"
    yield SchemaProblem(path, _in_assertion(message, path, root))


def _on_size(error: ValidationError, path: JsonPath, root: Any) -> Iterable[SchemaProblem]:
    kind, limit = str(error.validator), error.validator_value
    if kind == "minLength":
        message = "must not be empty"
    elif kind == "minItems":
        message = f"must have at least {limit} item(s)"
    elif (
        kind in ("minProperties", "maxProperties") and path and path[-2:-1] in (("providers",), ("targets",))
    ):
        message = "a {<provider id>: {config: ...}} entry must have exactly one key, the provider id"
    elif kind == "minProperties":
        message = f"must have at least {limit} key(s)"
    else:
        message = error.message
    yield SchemaProblem(path, _in_assertion(message, path, root))


def _on_not(error: ValidationError, path: JsonPath, root: Any) -> Iterable[SchemaProblem]:
    rule = error.validator_value.get("description") if isinstance(error.validator_value, Mapping) else None
    yield SchemaProblem(path, rule or "this combination of keys is not allowed")


def _on_pattern(error: ValidationError, path: JsonPath, root: Any) -> Iterable[SchemaProblem]:
    if error.validator_value == "^file://":
        yield SchemaProblem(path, f"must be a mapping or a file:// path (got {_got(error.instance)})")
    elif error.validator_value == NONBLANK_PATTERN:
        yield SchemaProblem(path, _in_assertion("must not be empty or blank", path, root))
    else:
        yield SchemaProblem(path, f"must match {error.validator_value} (got {_got(error.instance)})")


_Handler = Callable[["ValidationError", JsonPath, Any], Iterable[SchemaProblem]]
_HANDLERS: dict[str, _Handler] = {
    "additionalProperties": _on_additional,
    "required": _on_required,
    "type": _on_type,
    "anyOf": _on_any_of,
    "oneOf": _on_any_of,
    "enum": _on_enum,
    "minimum": _on_bound,
    "maximum": _on_bound,
    "exclusiveMinimum": _on_bound,
    "exclusiveMaximum": _on_bound,
    "minLength": _on_size,
    "minItems": _on_size,
    "minProperties": _on_size,
    "maxProperties": _on_size,
    "not": _on_not,
    "pattern": _on_pattern,
}
