"""The model package stays a leaf and keeps one import path (``from evalh.model import X``)."""

from __future__ import annotations

import ast
from pathlib import Path

import evalh.model

PACKAGE = Path(evalh.model.__file__).parent


def _evalh_imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    names |= {node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    return {name for name in names if name == "evalh" or name.startswith("evalh.")}


def test_model_imports_nothing_of_evalh_outside_itself() -> None:
    modules = sorted(PACKAGE.glob("*.py"))
    assert len(modules) > 1  # the package, not a single module
    outside = {
        path.name: sorted(name for name in _evalh_imports(path) if not name.startswith("evalh.model"))
        for path in modules
    }
    assert {name: found for name, found in outside.items() if found} == {}


def test_every_public_name_of_the_submodules_is_exported_by_the_package() -> None:
    submodules = [evalh.model.suite, evalh.model.results, evalh.model.aggregates]
    names = {name for module in submodules for name in module.__all__}
    assert names == set(evalh.model.__all__)
    assert all(getattr(evalh.model, name) is getattr(m, name) for m in submodules for name in m.__all__)
