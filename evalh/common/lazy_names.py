"""A package's public names loaded on first use (PEP 562): ``import evalh`` and ``import evalh.store`` stay
cheap, and a command loads only the modules whose names it asks for."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_names"]


def lazy_names(package: str, homes: Mapping[str, str], namespace: dict[str, Any]) -> Callable[[str], Any]:
    """The ``__getattr__`` of ``package``: each name of ``homes`` (name -> the module that defines it) is
    imported from its home when first asked for and kept in ``namespace`` (the package's globals)."""

    def __getattr__(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(home), name)
        namespace[name] = value  # looked up once
        return value

    return __getattr__
