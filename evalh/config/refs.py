"""promptfoo's ``$ref``: a mapping ``{$ref: '#/assertionTemplates/x'}`` anywhere in a config stands for
the value at that JSON pointer in the same config (promptfoo dereferences the whole config with
json-schema-ref-parser, so ``assertionTemplates`` and any other top-level key can hold shared pieces).

As there, keys written beside ``$ref`` override the referenced value's (``{$ref: ..., metric: m}``), and
the JSON schemas of a provider's ``tools`` / ``functions`` keep their own ``$ref`` for the model to read.
A pointer that names nothing in the config is left as written (an ``is-json`` schema's references are
the schema's own); one into a file (``other.yaml#/x``) or a loop of references is a located error.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import unquote

from evalh.config.locate import JsonPath
from evalh.errors import ConfigError, Where

__all__ = ["resolve_refs"]

_REF = "$ref"
# The values one config's references may copy in all: a reference is a copy, so a few references to
# references could otherwise make a config of a million nodes out of a few lines.
_MAX_COPIED_NODES = 200_000
_TOOL_SCHEMAS = frozenset({"tools", "functions"})


class _Resolver:
    def __init__(self, root: Any, where: Callable[[JsonPath], Where]) -> None:
        self.root = root
        self.where = where
        self.copied = 0

    def resolve(self, value: Any, path: JsonPath, seen: tuple[str, ...]) -> Any:
        if isinstance(value, Mapping):
            if isinstance(value.get(_REF), str):
                return self._dereference(value, path, seen)
            if len(path) == 3 and path[0] == "providers" and path[2] == "config":
                return {
                    key: item if key in _TOOL_SCHEMAS else self.resolve(item, (*path, key), seen)
                    for key, item in value.items()
                }
            return {key: self.resolve(item, (*path, key), seen) for key, item in value.items()}
        if isinstance(value, list):
            return [self.resolve(item, (*path, index), seen) for index, item in enumerate(value)]
        return value

    def _dereference(self, value: Mapping[str, Any], path: JsonPath, seen: tuple[str, ...]) -> Any:
        pointer = value[_REF]
        if not pointer.startswith("#"):
            raise ConfigError(
                f"$ref {pointer!r} points into another file; evalh follows references inside the config "
                "only ('#/assertionTemplates/name'). Load a file with file:// instead",
                where=self.where(path),
            )
        if pointer in seen:
            raise ConfigError(
                f"$ref {pointer!r} refers to itself through {' -> '.join(seen)}", where=self.where(path)
            )
        found, target = _follow(self.root, pointer)
        if not found:
            return {key: self.resolve(item, (*path, key), seen) for key, item in value.items()}
        self._count(target, path)
        resolved = self.resolve(copy.deepcopy(target), path, (*seen, pointer))
        siblings = {key: item for key, item in value.items() if key != _REF}
        if not siblings or not isinstance(resolved, Mapping):
            return resolved
        return {**resolved, **{key: self.resolve(item, (*path, key), seen) for key, item in siblings.items()}}

    def _count(self, target: Any, path: JsonPath) -> None:
        pending = [target]
        while pending:
            node = pending.pop()
            self.copied += 1
            if self.copied > _MAX_COPIED_NODES:
                raise ConfigError(
                    f"the config's $ref references copy in more than {_MAX_COPIED_NODES:,} values; "
                    "refer to smaller pieces, or write the values out",
                    where=self.where(path),
                )
            if isinstance(node, Mapping):
                pending.extend(node.values())
            elif isinstance(node, list):
                pending.extend(node)


def _follow(root: Any, pointer: str) -> tuple[bool, Any]:
    """(found, value) at a JSON pointer (``#/a/b~1c/0``, percent-encoded as in a URI fragment)."""
    current = root
    for raw in pointer[1:].split("/")[1:] if pointer != "#" else []:
        part = unquote(raw).replace("~1", "/").replace("~0", "~")
        if isinstance(current, Mapping) and part in current:
            current = current[part]
        elif isinstance(current, list) and part.isdigit() and int(part) < len(current):
            current = current[int(part)]
        else:
            return False, None
    return True, current


def resolve_refs(data: Any, where: Callable[[JsonPath], Where], text: str | None = None) -> Any:
    """``data`` (a config's mapping) with every ``$ref`` replaced by what it points at (a new value;
    ``data`` itself is not changed). ``text``, the YAML it was read from when known, answers at once
    for most configs (no ``$ref`` in it). Raises ConfigError, located by ``where(path)``."""
    if (text is not None and "$ref" not in text) or not _has_ref(data):
        return data
    return _Resolver(data, where).resolve(data, (), ())


def _has_ref(data: Any) -> bool:
    """Whether any mapping in ``data`` has a ``$ref`` key (most configs have none: nothing is copied)."""
    pending = [data]
    while pending:
        node = pending.pop()
        if isinstance(node, dict):  # a loaded config holds dicts and lists (no slower Mapping check)
            if _REF in node:
                return True
            pending.extend(value for value in node.values() if isinstance(value, dict | list))
        elif isinstance(node, list):
            pending.extend(value for value in node if isinstance(value, dict | list))
    return False
