"""The import layers of docs/architecture.md hold, as test_threshold_contract.py holds the scoring rule.

Every module under evalh/ is parsed (not imported): module-level imports, function-local ones, those under
``if TYPE_CHECKING:``, relative ones (resolved) and module names in strings for importlib
(``"evalh.providers.openai:make_chat"``) are all checked against the never-rules. The rules are kept here as
data and compared with the doc's table, so the two cannot drift.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

import evalh

PACKAGE = Path(evalh.__file__).parent
ROOT = PACKAGE.parent
DOC = ROOT / "docs" / "architecture.md"


@dataclass(frozen=True)
class Area:
    layer: int
    name: str
    homes: tuple[str, ...]  # paths from the repository root: a package folder (ending in /) or a module
    peers: frozenset[str] = frozenset()  # the areas of its own layer it may import
    never: frozenset[str] = frozenset()  # the areas below (or beside) it that it never imports


def _area(
    layer: int, name: str, *homes: str, peers: tuple[str, ...] = (), never: tuple[str, ...] = ()
) -> Area:
    return Area(layer, name, homes, frozenset(peers), frozenset(never))


# docs/architecture.md "The layers", lowest first.
LAYERS = (
    _area(0, "model", "evalh/model/"),
    _area(0, "secrets", "evalh/secrets.py"),
    _area(0, "errors", "evalh/errors.py", peers=("secrets",)),
    _area(0, "common", "evalh/common/", peers=("errors", "secrets")),
    _area(0, "stats", "evalh/stats/"),
    _area(0, "templating", "evalh/templating/", peers=("common", "errors", "secrets")),
    _area(1, "runtimes", "evalh/runtimes/"),
    _area(1, "providers", "evalh/providers/", peers=("runtimes",)),
    _area(1, "assertions", "evalh/assertions/", peers=("providers", "runtimes")),
    _area(1, "tracing", "evalh/tracing/"),
    _area(2, "config", "evalh/config/"),
    _area(2, "runner", "evalh/runner/", never=("config",)),
    _area(2, "calibration", "evalh/calibration/", peers=("runner",)),
    _area(3, "reports", "evalh/reports/"),
    _area(3, "store", "evalh/store/", peers=("reports",), never=("runner",)),
    _area(4, "session", "evalh/session/"),
    _area(5, "viewer", "evalh/viewer/"),
    _area(5, "api", "evalh/api.py"),
    _area(5, "pytest", "evalh/pytest/", peers=("api",)),
    _area(5, "cli", "evalh/cli/", peers=("viewer",)),
    _area(6, "face", "evalh/__init__.py", "evalh/__main__.py"),
)
AREAS = {area.name: area for area in LAYERS}

# (importing file, imported module) -> the work that removes the break. The lead empties this list when
# that work is merged; an entry that no longer occurs fails test_every_known_break_still_occurs.
KNOWN_BREAKS: dict[tuple[str, str], str] = {}


NEVER_WHY = {
    "runner": "the runner imports no config; put the rule both need in model/",
    "store": "the store imports no runner; it reads and writes rows through the row codec in reports/",
}


@dataclass(frozen=True)
class Import:
    path: str  # from the repository root
    line: int
    module: str  # the evalh module imported
    how: str  # "", "a function-local import", "an import for type checking", "a module named in a string"


def _is_module(name: str, root: Path = ROOT) -> bool:
    path = root.joinpath(*name.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def _package_of(path: str) -> list[str]:
    parts = path.removesuffix(".py").split("/")
    return parts[:-1]  # a module's package; for __init__.py, the package itself


def _from_targets(node: ast.ImportFrom, path: str, root: Path) -> list[str]:
    if node.level:
        base = _package_of(path)
        base = base[: len(base) - (node.level - 1)]
        module = ".".join([*base, *([node.module] if node.module else [])])
    else:
        module = node.module or ""
    # ``from evalh import errors`` imports the module evalh.errors, not the package face
    submodules = [f"{module}.{alias.name}" for alias in node.names]
    modules = [name for name in submodules if _is_module(name, root)]
    return modules + ([module] if len(modules) < len(submodules) else [])


_NAMED = re.compile(r"evalh(?:\.\w+)+(?::\w+)?")


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _walk(node: ast.AST, how: str) -> list[tuple[ast.AST, str]]:
    """Every node below ``node`` with how it is reached: inside a function, or under TYPE_CHECKING."""
    found: list[tuple[ast.AST, str]] = []
    for child in ast.iter_child_nodes(node):
        inner = how
        if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            inner = "a function-local import"
        elif isinstance(child, ast.If) and _is_type_checking(child.test) and not how:
            inner = "an import for type checking"
        found.append((child, inner))
        found.extend(_walk(child, inner))
    return found


def imports_of(source: str, path: str, root: Path = ROOT) -> list[Import]:
    """The evalh modules ``source`` (the file at ``path``, from the repository root) imports, every way."""
    found: list[Import] = []
    for node, how in _walk(ast.parse(source), ""):
        targets: list[str] = []
        named = how
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            targets = _from_targets(node, path, root)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and _NAMED.fullmatch(node.value):
            module = node.value.partition(":")[0]
            targets = [module] if _is_module(module, root) else []
            named = "a module named in a string"
        found += [
            Import(path, getattr(node, "lineno", 0), target, named)
            for target in targets
            if target == "evalh" or target.startswith("evalh.")
        ]
    return found


def area_of_file(path: str) -> Area | None:
    for area in LAYERS:
        if any(path == home or (home.endswith("/") and path.startswith(home)) for home in area.homes):
            return area
    return None


def area_of_module(module: str) -> Area | None:
    parts = module.split(".")
    if len(parts) == 1:
        return AREAS["face"]
    for candidate in (f"evalh/{parts[1]}/", f"evalh/{parts[1]}.py"):
        for area in LAYERS:
            if candidate in area.homes:
                return area
    return None


def broken_rule(importer: Area, imported: Area) -> str | None:
    """Which never-rule of docs/architecture.md an import from ``importer`` into ``imported`` breaks."""
    if importer.name == imported.name:
        return None
    if importer.name == "model":
        return "breaks rule 2: model imports nothing of evalh outside itself"
    if imported.name in importer.never:
        return f"breaks rule 3: {NEVER_WHY[importer.name]}"
    if imported.layer < importer.layer or imported.name in importer.peers:
        return None
    if imported.layer > importer.layer:
        return f"breaks rule 1: imports run down, and layer {importer.layer} is below {imported.layer}"
    allowed = ", ".join(sorted(importer.peers)) or "nothing"
    return f"breaks rule 1: from its own layer {importer.name} imports only {allowed}"


def violations(imports: list[Import]) -> list[tuple[Import, str]]:
    found = []
    for one in imports:
        importer, imported = area_of_file(one.path), area_of_module(one.module)
        assert importer is not None and imported is not None, one
        rule = broken_rule(importer, imported)
        if rule is not None:
            found.append((one, f"{importer.name} -> {imported.name} {rule}"))
    return found


def _shown(one: Import, rule: str) -> str:
    how = f" ({one.how}, checked like any other)" if one.how else ""
    return f"{one.path}:{one.line}: imports {one.module}{how}; {rule}"


def _modules() -> list[str]:
    return sorted(path.relative_to(ROOT).as_posix() for path in PACKAGE.rglob("*.py"))


def _all_imports() -> list[Import]:
    return [one for path in _modules() for one in imports_of((ROOT / path).read_text("utf-8"), path)]


def test_no_import_breaks_a_never_rule_of_the_architecture() -> None:
    found = [
        (one, rule) for one, rule in violations(_all_imports()) if (one.path, one.module) not in KNOWN_BREAKS
    ]
    assert not found, "imports that break docs/architecture.md:\n" + "\n".join(
        _shown(*pair) for pair in found
    )


def test_every_known_break_still_occurs() -> None:
    occurring = {(one.path, one.module) for one, _ in violations(_all_imports())}
    stale = sorted(set(KNOWN_BREAKS) - occurring)
    assert not stale, f"no longer broken, remove from KNOWN_BREAKS: {stale}"


def test_every_module_of_evalh_belongs_to_one_area() -> None:
    homeless = [path for path in _modules() if area_of_file(path) is None]
    assert not homeless, f"give these a row in docs/architecture.md and LAYERS: {homeless}"
    for area in LAYERS:
        for home in area.homes:
            assert (ROOT / home).exists(), f"{area.name}'s home {home} does not exist"


def _doc_rows() -> list[list[str]]:
    text = DOC.read_text("utf-8")
    section = text.split("## The layers", 1)[1].split("\n#", 1)[0]
    lines = [line.strip() for line in section.splitlines() if line.strip().startswith("|")]
    assert lines[0].replace(" ", "") == "|Layer|Area|Home|Alsoimportsfromitsownlayer|Neverimports|"
    return [[cell.strip() for cell in line.strip("|").split("|")] for line in lines[2:]]


def _names(cell: str) -> tuple[str, ...]:
    return () if cell in {"—", "-", ""} else tuple(name.strip().strip("`") for name in cell.split(","))


def test_the_doc_table_and_the_rules_here_agree() -> None:
    documented = tuple(
        _area(int(layer), name, *_names(homes), peers=_names(peers), never=_names(never))
        for layer, name, homes, peers, never in _doc_rows()
    )
    assert documented == LAYERS


def test_the_plan_runs_one_way() -> None:
    assert [area.layer for area in LAYERS] == sorted(area.layer for area in LAYERS)  # lowest first
    for position, area in enumerate(LAYERS):
        earlier = {other.name for other in LAYERS[:position] if other.layer == area.layer}
        # a peer is of the same layer and listed before: the peer imports cannot form a cycle
        assert area.peers <= earlier, area.name
        # a never-rule names an area below or beside, that the layers alone would not keep out
        assert not area.never & area.peers, area.name
        assert all(AREAS[name].layer <= area.layer for name in area.never), area.name
    assert AREAS["model"].peers == frozenset() and AREAS["model"].layer == 0
    assert set(NEVER_WHY) == {area.name for area in LAYERS if area.never}
    assert "config" in AREAS["runner"].never and "runner" in AREAS["store"].never


# The checker itself, on sources written for it: each way of importing is seen, and what the plan allows
# passes. The path is a module that exists, so that relative imports resolve against the real package.
_RUNNER = "evalh/runner/plan.py"
_BREAKS = {
    "from evalh.config.load import load_suite": "",
    "import evalh.config.load": "",
    "from ..config import load": "",
    "from ..session.run import run_config": "",
    "from evalh import api": "",
    "from evalh import __version__": "",
    "def f():\n    from evalh.config.load import load_suite": "a function-local import",
    "class C:\n    def m(self):\n        import evalh.reports.json": "a function-local import",
    "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from evalh.store import open_store": (
        "an import for type checking"
    ),
    'TARGET = "evalh.session.run:run_config"': "a module named in a string",
}


@pytest.mark.parametrize("source", list(_BREAKS))
def test_the_checker_sees_every_way_of_importing_up(source: str) -> None:
    found = violations(imports_of(source, _RUNNER))
    assert len(found) == 1, found
    one, rule = found[0]
    assert one.how == _BREAKS[source] and one.path == _RUNNER and "breaks rule" in rule
    assert one.line == len(source.splitlines())  # the import is each source's last line


@pytest.mark.parametrize(
    "source",
    [
        "from evalh.model import Suite",
        "from . import scoring",
        "from .scoring import grade",
        "from evalh.errors import ConfigError",
        "def f():\n    from evalh.providers.registry import build_provider",
        'NAME = "evalh.schema.json"',
        'TEXT = "see evalh.session.run for more"',
    ],
)
def test_the_checker_passes_what_the_plan_allows(source: str) -> None:
    assert violations(imports_of(source, _RUNNER)) == []


def test_the_runner_importing_config_names_the_rule() -> None:
    (one, rule), *_ = violations(imports_of("from evalh.config.load import load_suite", _RUNNER))
    assert (
        "runner -> config" in rule and "rule 3" in _shown(one, rule) and _shown(one, rule).startswith(_RUNNER)
    )
