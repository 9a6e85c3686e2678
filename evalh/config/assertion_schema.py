"""The config schema's assertion section, generated from the assertion registry.

``schemas/evalh.schema.json`` is the base: every key of a config, and the keys every assertion shares.
It names no assertion type. This module adds to its ``$defs.assertion`` what each registered type
declares: the enum of types with their ``not-`` forms (and descriptions for editors), and one ``allOf``
rule per type for its value's shape, its ``config`` keys, its threshold's bounds and what it requires.
A new assertion type therefore touches its family module, never the base schema file (then
``python -m evalh.config.generated`` writes the shipped section again); ``evalh schema`` prints the
assembled schema (``config/schema.py`` assembles and caches it).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from evalh.assertions.registry import AssertionDef

__all__ = [
    "BINARY_CONFIG",
    "assemble",
    "assertion_rules",
    "assertion_section",
    "config_rule",
    "insert_section",
    "type_names",
]

# Read by runner/scoring.py for every scored type, so declared here once rather than by each family.
BINARY_CONFIG: Mapping[str, Any] = {
    "type": "boolean",
    "description": "Score 1 when the assertion passes, else 0 (instead of the measured score).",
}


def type_names(registry: Mapping[str, AssertionDef]) -> list[str]:
    """Every type the schema accepts: each registered type, then each ``not-`` form."""
    return [*registry, *(f"not-{name}" for name in registry)]


def _descriptions(registry: Mapping[str, AssertionDef]) -> list[str]:
    texts = [_sentence(definition.description) for definition in registry.values()]
    return [*texts, *(f"Passes when '{name}' fails (score 1 - score)." for name in registry)]


def _sentence(text: str) -> str:
    text = text.strip()
    return (text[:1].upper() + text[1:]).rstrip(".") + "."


def config_rule(definition: AssertionDef) -> dict[str, Any]:
    """The schema of the type's ``config:`` mapping: its declared keys (and ``binary`` for a scored
    type); other keys are refused unless the type passes its config on to user code."""
    properties = {key: dict(rule) for key, rule in (definition.config_schema or {}).items()}
    if definition.direction is not None:
        properties.setdefault("binary", dict(BINARY_CONFIG))
    return {"type": "object", "properties": properties, "additionalProperties": definition.open_config}


def _threshold_rule(definition: AssertionDef) -> dict[str, Any] | None:
    """A maximum (a distance, milliseconds, a cost) is never below the measured value's lower bound."""
    low = definition.bounds[0]
    if definition.direction != "lower" or low is None:
        return None
    return {"type": "number", "minimum": low}


def _rule_text(definition: AssertionDef) -> str:
    """What the type requires, worded for a person (also the hint of a missing-key problem)."""
    name = definition.name
    parts: list[str] = []
    if definition.requires_value:
        what = (definition.value_schema or {}).get("description")
        parts.append(f"{name} needs a value" + (f": {_lower(str(what))}" if what else "."))
    if definition.requires_threshold:
        parts.append(f"{name} needs a threshold: the {definition.threshold_meaning} that passes.")
    if definition.children:
        parts.append(f"{name} needs an assert: list of child assertions.")
    return " ".join(parts) or f"{name}: {_sentence(definition.description)}"


def _lower(text: str) -> str:
    return text[:1].lower() + text[1:]


def _type_rule(definition: AssertionDef) -> dict[str, Any]:
    properties: dict[str, Any] = {"config": config_rule(definition)}
    if definition.value_schema is not None:
        properties["value"] = dict(definition.value_schema)
    threshold = _threshold_rule(definition)
    if threshold is not None:
        properties["threshold"] = threshold
    if definition.children:
        properties["assert"] = {"type": "array", "minItems": 1}
    required = [
        key
        for key, needed in (
            ("value", definition.requires_value),
            ("threshold", definition.requires_threshold),
            ("assert", definition.children),
        )
        if needed
    ]
    then: dict[str, Any] = {"properties": properties, "description": _rule_text(definition)}
    if required:
        then["required"] = required
    names = [definition.name, f"not-{definition.name}"]
    return {"if": {"properties": {"type": {"enum": names}}, "required": ["type"]}, "then": then}


def _children_rule(registry: Mapping[str, AssertionDef]) -> dict[str, Any] | None:
    """``assert:`` (child assertions) belongs to the types that take children, and to no other."""
    grouping = [name for name, definition in registry.items() if definition.children]
    if not grouping:
        return None
    shown = " or ".join(grouping)
    return {
        "if": {"properties": {"type": {"enum": type_names({n: registry[n] for n in grouping})}}},
        "else": {
            "not": {
                "type": "object",
                "required": ["assert"],
                "description": f"assert: (child assertions) is only allowed in an {shown}",
            }
        },
    }


def assertion_rules(registry: Mapping[str, AssertionDef]) -> list[dict[str, Any]]:
    """The ``allOf`` of the assertion definition: one rule per type, then the ``assert:`` rule."""
    rules = [_type_rule(definition) for definition in registry.values()]
    children = _children_rule(registry)
    return rules + ([children] if children is not None else [])


def assertion_section(registry: Mapping[str, AssertionDef]) -> dict[str, Any]:
    """What the registry adds to the base's ``$defs.assertion``: the enum of types with their ``not-``
    forms (and descriptions for editors), and the ``allOf`` of per-type rules. Shipped, generated, as
    ``schemas/evalh.assertions.json`` (see ``config/generated.py``)."""
    return {
        "enum": type_names(registry),
        "enumDescriptions": _descriptions(registry),  # shown by editors beside each completion
        "allOf": assertion_rules(registry),
    }


def insert_section(base: dict[str, Any], section: Mapping[str, Any]) -> dict[str, Any]:
    """``base`` (a fresh copy of the schema file) with the assertion ``section`` added."""
    assertion = base["$defs"]["assertion"]
    kind = assertion["properties"]["type"]
    kind["enum"] = section["enum"]
    kind["enumDescriptions"] = section["enumDescriptions"]
    assertion["allOf"] = section["allOf"]
    return base


def assemble(base: dict[str, Any], registry: Mapping[str, AssertionDef]) -> dict[str, Any]:
    """``base`` (a fresh copy of the schema file) with the registry's assertion section added."""
    return insert_section(base, assertion_section(registry))
