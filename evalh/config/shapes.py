"""Shapes: what the schema can tell apart in a value, so that 10,000 similar tests are validated once.

Two values with the same shape are both valid or both not (``_shape``; the keys whose whole values the
schema checks, as enums, patterns and bounds, stay exact: ``_exact_keys``). Every validator of a config
goes through a :class:`ShapeCachedValidator`, which builds the jsonschema validator only for a shape not
known valid, in this process or in an earlier run (config/shape_cache.py). A config's tests are checked
first by the digest of their exact JSON (``problems_of_each``): an unchanged test that passed in an
earlier run needs no shape either.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import re
from collections.abc import Callable, Hashable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

import orjson

from evalh.assertions.registry import NONBLANK_PATTERN
from evalh.config.schema import (
    MAX_SAFE_INTEGER,
    SchemaProblem,
    assembled_text,
    config_validator,
    defs_validator,
    fragment_validator,
    load_schema,
    schema_problems,
)
from evalh.config.shape_cache import KnownShapes, known_shapes, shape_cache_file, value_digest

if TYPE_CHECKING:
    from jsonschema import Draft202012Validator

__all__ = ["ShapeCachedValidator", "config_checker", "defs_checker", "fragment_checker"]


# Keys whose content the schema checks only for its JSON type ("an object"), so a shape may drop it
# (an assertion's ``config`` is not one: each type declares its keys).
_OPAQUE_KEYS = frozenset({"vars", "metadata", "output", "providerOutput"})
_NO_KEYS: frozenset[Any] = frozenset()


class _Mark:
    """A shape no JSON value has (equal only to itself), for what the schema tells apart from text."""

    __slots__ = ("shape_name",)

    def __init__(self, name: str) -> None:
        self.shape_name = name  # its text in the persisted digests (config/shape_cache.py)


_TRUE, _FALSE, _NOT_FINITE, _TOO_LARGE, _OTHER, _WHOLE_FLOAT, _EXACT = (
    _Mark(name) for name in ("true", "false", "non-finite", "too large", "other type", "whole float", "exact")
)


def _shape(value: Any, key: Any = None, exact: frozenset[Any] = frozenset({"type"})) -> Hashable:
    """What the schema can tell apart in ``value``: types, signs (and fractions from numbers above 1),
    empty, blank and other text, file:// prefixes, and the whole value of the keys in ``exact`` (those the
    schema checks against a list, a pattern or a bound: assertion types, enums; :func:`_exact_keys`).
    Two values with the same shape are both valid or both not. A mapping's shape is the set of its keys'
    (key, shape), a list's the tuple of its items' shapes."""
    # Exact types without an ABC check, and plain text (most of 151,000 values for 5,000 tests) shaped
    # without a call of its own
    if isinstance(value, str):
        return value if key in exact else _text_shape(value)
    if key in exact:
        return (_EXACT, _frozen(value))
    kind = type(value)
    if kind is dict or (kind is not list and isinstance(value, Mapping)):
        return _NO_KEYS if key in _OPAQUE_KEYS else _mapping_shape(value, exact)
    if kind is list or isinstance(value, list):
        return tuple(
            [
                "x"
                if type(item) is str and _PLAIN_TEXT(item)
                else _mapping_shape(item, exact)
                if type(item) is dict
                else _shape(item, None, exact)
                for item in value
            ]
        )
    return _scalar_shape(value)


def _mapping_shape(value: Mapping[Any, Any], exact: frozenset[Any]) -> Hashable:
    """The shape of a mapping that is not opaque: the set of its keys' (key, shape). Text and safe
    whole numbers (an assertion's type, value and threshold: 30,000 assertions in 5,000 tests) are shaped
    here as :func:`_shape` shapes them, without a call each (a third of the shaping time)."""
    pairs = []
    for name, item in value.items():
        kind = type(item)
        if kind is str:
            shape: Hashable = item if name in exact else "x" if _PLAIN_TEXT(item) else _text_shape(item)
        elif kind is int and name not in exact and -MAX_SAFE_INTEGER <= item <= MAX_SAFE_INTEGER:
            shape = (item > 0) - (item < 0)
        else:
            shape = _shape(item, name, exact)
        pairs.append((name, shape))
    return frozenset(pairs)


def _frozen(value: Any) -> Hashable:
    """The whole value, hashable, telling apart what Python's == does not (True and 1, 1 and 1.0)."""
    if isinstance(value, Mapping):
        return frozenset((name, _frozen(item)) for name, item in value.items())
    if isinstance(value, list | tuple):
        return tuple(_frozen(item) for item in value)
    if isinstance(value, str | int | float | bool | None):
        return (type(value).__name__, value if value == value else repr(value))  # NaN: not equal to itself
    return (_OTHER, repr(type(value)))


# Text that is neither blank nor a file:// path: starts with a character other than whitespace and "f"
# (C speed: the common case of _text_shape, without a Python call)
_PLAIN_TEXT = re.compile(r"[^\sf]").match


def _text_shape(text: str) -> str:
    if text.startswith("file://"):
        return "file://"
    return "x" if text and not text.isspace() else (" " if text else "")  # blank: refused as text


def _scalar_shape(value: Any) -> Hashable:
    if value is None:
        return None
    if isinstance(value, bool):
        return _TRUE if value else _FALSE  # not 1 and 0, which True and False equal
    if isinstance(value, float) and not math.isfinite(value):
        return (_NOT_FINITE, repr(value))  # invalid where a number is due: never shares a valid shape
    if isinstance(value, int) and abs(value) > MAX_SAFE_INTEGER:
        return (_TOO_LARGE, value > 0)
    if isinstance(value, int | float):
        sign = (value > 0) - (value < 0)
        if isinstance(value, int):
            return sign
        if value.is_integer():
            return (_WHOLE_FLOAT, sign)  # 2.0 is not an integer to the schema, though 2.0 == 2
        return sign * (0.5 if abs(value) < 1 else 1.5)  # a fraction is not a score above 1
    return (_OTHER, repr(type(value)))


# Keywords a shape settles: keys (exact in a shape), list lengths, JSON types, signs, emptiness; and
# annotations. Any other keyword (an enum, a pattern, a bound a sign does not settle) makes the value it
# applies to exact in the shape (_exact_keys).
_SETTLED = frozenset(
    {"type", "required", "minItems", "maxItems", "minProperties", "maxProperties", "propertyNames"}
    | {"$id", "$schema", "$defs", "title", "description", "default", "enumDescriptions", "examples"}
)
_DESCENDED = ("anyOf", "oneOf", "allOf", "not", "if", "then", "else", "items", "additionalProperties")
_SETTLED_VALUES: dict[str, tuple[Any, ...]] = {
    "minimum": (0, 1),  # a sign, and fractions below and above 1, tell these apart
    "exclusiveMinimum": (0,),
    "minLength": (0, 1),  # empty or not
    "pattern": ("^file://", NONBLANK_PATTERN),  # the shape of text keeps both
    "const": ("",),
}


def _exact_keys(schema: Mapping[str, Any]) -> frozenset[str]:
    """The property names whose values the schema tells apart beyond their shape (an assertion's
    ``type``, a ``method`` enum, a ``maxConcurrency`` bound), anywhere in ``schema``."""
    names: set[str] = {"type"}
    for properties in _all_properties(schema):
        names.update(name for name, rule in properties.items() if _tells_apart(rule, schema, set()))
    return frozenset(names)


def _all_properties(node: Any) -> Iterable[Mapping[str, Any]]:
    if isinstance(node, Mapping):
        if isinstance(node.get("properties"), Mapping):
            yield node["properties"]
        for item in node.values():
            yield from _all_properties(item)
    elif isinstance(node, list):
        for item in node:
            yield from _all_properties(item)


def _tells_apart(rule: Any, root: Mapping[str, Any], seen: set[str]) -> bool:
    """Whether ``rule`` can refuse one of two values of the same shape (its own keywords, and those of
    its branches, items and references; not those of its properties, which have names of their own)."""
    if not isinstance(rule, Mapping):
        return False
    for keyword, value in rule.items():
        if keyword == "$ref":
            if value in seen:
                continue
            seen.add(value)
            target = _resolved(value, root) if isinstance(value, str) else None
            if target is None or _tells_apart(target, root, seen):
                return True
        elif keyword == "properties" or keyword in _SETTLED:
            continue
        elif keyword in _DESCENDED:
            branches = value if isinstance(value, list) else [value]
            if any(_tells_apart(branch, root, seen) for branch in branches):
                return True
        elif value not in _SETTLED_VALUES.get(keyword, ()):
            return True
    return False


def _resolved(reference: str, root: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """A ``$ref`` inside ``root`` (``#/$defs/x`` or ``<$id>#/$defs/x``); None when it points elsewhere
    (then the rule counts as telling values apart)."""
    _, _, pointer = reference.partition("#")
    node: Any = root
    for part in [part for part in pointer.split("/") if part]:
        node = node.get(part) if isinstance(node, Mapping) else None
    return node if isinstance(node, Mapping) else None


@functools.cache
def _config_schema() -> Mapping[str, Any]:
    """The config's schema, parsed once for the checkers (read, never changed)."""
    return load_schema()


@functools.cache
def _config_exact_keys() -> frozenset[str]:
    return _exact_keys(_config_schema())


class ShapeCachedValidator:
    """Validates many similar instances (10,000 tests) fast: a shape that passed once, in this process
    or in an earlier run with the same schema (config/shape_cache.py), passes again; anything else is
    validated for real, so messages always describe the actual values. The jsonschema validator is built
    only for a shape not known valid."""

    def __init__(
        self,
        name: str,
        build: Callable[[], Draft202012Validator],
        schema: Mapping[str, Any],
        root: Mapping[str, Any] | None = None,
    ) -> None:
        """``name``: the validator's entries in the persisted set; ``schema``: what ``build`` validates
        against, inside ``root`` (the schema its references point into; itself when None)."""
        self.name = name
        self._build = build
        self._valid: set[Hashable] = set()
        self._exact = _config_exact_keys() if root is not None else _exact_keys(schema)
        self._whole = _tells_apart(schema, root or schema, set())  # e.g. a value that is a number <= 100

    @functools.cached_property
    def validator(self) -> Draft202012Validator:
        return self._build()

    def problems(self, instance: Any) -> list[SchemaProblem]:
        key = self._key(instance)
        return [] if key in self._valid else self._checked(instance, key, _known_shapes())

    def problems_of_each(self, instances: Iterable[Any]) -> list[list[SchemaProblem]]:
        """:meth:`problems` of each of many large values (a config's tests): a value whose exact JSON
        passed in an earlier run (config/shape_cache.py) passes without computing its shape."""
        known = _known_shapes()
        return [self._problems_by_value(instance, known) for instance in instances]

    def _problems_by_value(self, instance: Any, known: KnownShapes) -> list[SchemaProblem]:
        encoded = exact_json(instance)
        digest = None if encoded is None else value_digest(encoded)
        if digest is not None and known.knows_value(self.name, digest):
            return []
        key = self._key(instance)
        found = [] if key in self._valid else self._checked(instance, key, known)
        if not found and encoded is not None and digest is not None:
            known.learn_value(self.name, digest, encoded, instance)
        return found

    def _key(self, instance: Any) -> Hashable:
        return (_EXACT, _frozen(instance)) if self._whole else _shape(instance, None, self._exact)

    def _checked(self, instance: Any, key: Hashable, known: KnownShapes) -> list[SchemaProblem]:
        """The problems of a value whose shape was not found valid in this process."""
        if known.knows(self.name, key):
            self._valid.add(key)
            return []
        found = schema_problems(instance, self.validator)
        if not found:
            self._valid.add(key)
            known.learn(self.name, key)
        return found


def exact_json(value: Any) -> bytes | None:
    """``value``'s compact JSON when it reads back as an equal value, else None. Two values with the same
    text are then both valid or both not: JSON tells apart what the schema does (true and 1, 2.0 and 2),
    and what it would blur fails the read-back (NaN and infinities written as null, a tuple as a list,
    a UUID as text); what it refuses (a whole number past 64 bits, a key that is not text, a lone
    surrogate, a type it does not know) has none."""
    try:
        encoded = orjson.dumps(value)
        same = orjson.loads(encoded) == value
    except (TypeError, ValueError, RecursionError):  # orjson's JSONEncodeError is a TypeError
        return None
    return encoded if same else None


def _known_shapes() -> KnownShapes:
    """The shapes known valid in earlier runs, for this schema, jsonschema and evalh."""
    return known_shapes(assembled_text(), shape_cache_file())


@functools.cache
def config_checker() -> ShapeCachedValidator:
    """The whole config's validator, through the shape cache."""
    schema = _config_schema()
    return ShapeCachedValidator("config", config_validator, schema, schema)


@functools.cache
def defs_checker(*names: str, allow_string: bool = False) -> ShapeCachedValidator:
    """:func:`defs_validator`'s, through the shape cache."""
    branches: list[dict[str, Any]] = [{"$ref": f"#/$defs/{name}"} for name in names]
    if allow_string:
        branches.insert(0, {"type": "string", "minLength": 1})
    name = "defs:" + ",".join(names) + (":string" if allow_string else "")
    build = functools.partial(defs_validator, *names, allow_string=allow_string)
    return ShapeCachedValidator(name, build, {"anyOf": branches}, _config_schema())


def fragment_checker(fragment: Mapping[str, Any]) -> ShapeCachedValidator:
    """:func:`fragment_validator`'s, through the shape cache (keyed by the fragment's own text)."""
    text = json.dumps(fragment, sort_keys=True, ensure_ascii=False)
    name = "fragment:" + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return ShapeCachedValidator(name, functools.partial(fragment_validator, fragment), fragment)
