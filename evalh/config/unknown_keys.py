"""Unknown config keys, as promptfoo treats them: ignored, but evalh says so.

A key far from every key the schema knows at its place (``outputs:``, a tool's own annotations) is
a located warning and is dropped before the config is resolved; ``--strict`` makes it the error it
used to be. A near-miss of a known key (``test:`` for ``tests:``) stays an error with its
did-you-mean: ignoring it would silently drop what the author meant.
"""

from __future__ import annotations

from collections.abc import Callable, MutableMapping
from typing import Any

from evalh.common.notices import is_strict, warn
from evalh.config.locate import JsonPath
from evalh.config.schema import SchemaProblem
from evalh.errors import SchemaError

__all__ = ["drop_unknown_keys"]


def drop_unknown_keys(
    problems: list[SchemaProblem], data: Any, where: Callable[[JsonPath], str]
) -> list[SchemaProblem]:
    """``problems`` without the ignorable unknown keys, which are warned about (``where`` places a
    path of ``data``) and removed from ``data``. Under strict mode every problem is kept."""
    if is_strict():
        return problems
    kept: list[SchemaProblem] = []
    for problem in problems:
        if not problem.ignorable or not _drop(data, problem.path):
            kept.append(problem)
            continue
        place = where(problem.path)
        error = SchemaError(f"{problem.message}, ignored", where=place, hint=problem.hint)
        warn(error, where=place, subject=problem.message)
    return kept


def _drop(data: Any, path: JsonPath) -> bool:
    parent = data
    for part in path[:-1]:
        try:
            parent = parent[part]
        except (KeyError, IndexError, TypeError):
            return False
    if isinstance(parent, MutableMapping) and path and path[-1] in parent:
        del parent[path[-1]]
        return True
    return False
