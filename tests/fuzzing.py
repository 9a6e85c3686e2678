"""Structure mutations shared by the fuzz tests (configs: tests/config/test_fuzz.py, reports:
tests/store/test_report_fuzz.py): every path into a JSON-like value, the value at one, a value replaced."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any


def paths(value: Any, at: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every path into ``value`` (``at`` first), keys and indexes."""
    yield at
    if isinstance(value, dict):
        for key, item in value.items():
            yield from paths(item, (*at, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from paths(item, (*at, index))


def value_at(root: Any, path: tuple[Any, ...]) -> Any:
    for part in path:
        root = root[part]
    return root


def replaced(root: Any, path: tuple[Any, ...], new: Any, delete: bool = False) -> Any:
    """``root`` with the value at ``path`` replaced by ``new`` (or deleted), in place; the new root."""
    if not path:
        return new
    parent = value_at(root, path[:-1])
    if delete:
        del parent[path[-1]]
    else:
        parent[path[-1]] = new
    return root
