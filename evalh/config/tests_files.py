"""``tests:``: inline tests, ``file://`` paths to .yaml / .json / .jsonl / .csv files or globs, and test
generators (``file://gen.py:fn``, ``file://gen.js``, ``{path: ..., config: ...}``; config/generators.py).

Tests read from files are checked against the schema's test definition, located in their own file
(``tests.yaml:12:5``, ``tests.jsonl:7``, ``tests.csv:4:2``); a generator's as ``gen.py:fn()[3]``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalh.assertions.registry import registered_names
from evalh.config.files import CsvOrigin, DocOrigin, LoadContext, Origin
from evalh.config.locate import Document, JsonPath, display_path, format_path
from evalh.config.safeload import parse_json
from evalh.config.schema import assertion_type_names
from evalh.config.unknown_keys import drop_unknown_keys
from evalh.errors import ConfigError, SchemaError, Where
from evalh.secrets import register_config

__all__ = ["RawTest", "collect_tests", "known_base_types", "validated_tests"]

_TEST_SUFFIXES = (".yaml", ".yml", ".json", ".jsonl", ".csv")
GENERATOR_KEY = "path"  # promptfoo's {path: file://gen.py:fn, config: {...}} entry


@dataclass(frozen=True)
class RawTest:
    """A test as written (a mapping that passed the schema), and where it was written."""

    data: Mapping[str, Any]
    origin: Origin
    valid: bool = True  # False: reported already; kept so later tests keep their index
    refused_asserts: frozenset[int] = frozenset()  # assert[i] the schema refused (reported already)
    folder: Path | None = None  # a tests file's folder: its tests' vars files are named from there
    shown: JsonPath | None = None  # its path in messages, when not tests[i] (a scenario's test)


def known_base_types() -> tuple[str, ...]:
    """Assertion base types for the CSV mini-syntax: the registry's and the schema's."""
    names = set(registered_names())  # with the schema's, every type, importing no family
    names.update(name for name in assertion_type_names() if not name.startswith("not-"))
    return tuple(sorted(names))


def collect_tests(
    value: Any,
    doc: Document,
    ctx: LoadContext,
    refused: frozenset[int] = frozenset(),
    refused_asserts: Mapping[int, frozenset[int]] = {},
    at: JsonPath = ("tests",),
) -> list[RawTest]:
    """Every test, in order: inline tests as they are, file entries expanded. An entry the schema
    ``refused`` (reported already) keeps its place, marked invalid, or names no file. ``at``: where
    ``value`` is in ``doc`` (a scenario's tests are at ``scenarios[0].tests``)."""
    entries: list[tuple[Any, JsonPath]] = (
        [(item, (*at, i)) for i, item in enumerate(value)] if isinstance(value, list) else [(value, at)]
    )
    tests: list[RawTest] = []
    for item, path in entries:
        refuses = path[-1] in refused
        if isinstance(item, Mapping) and GENERATOR_KEY in item:
            if not refuses:
                tests.extend(_from_path_entry(item, doc.place(path), len(tests), ctx))
            continue
        if isinstance(item, Mapping):
            left_out = (
                refused_asserts.get(path[-1], frozenset()) if isinstance(path[-1], int) else frozenset()
            )
            tests.append(RawTest(item, DocOrigin(doc, path), valid=not refuses, refused_asserts=left_out))
            continue
        if refuses or not isinstance(item, str):
            continue
        tests.extend(_from_path_entry({GENERATOR_KEY: item}, doc.place(path), len(tests), ctx))
    return tests


def _from_path_entry(entry: Mapping[str, Any], where: Where, offset: int, ctx: LoadContext) -> list[RawTest]:
    """The tests a ``tests`` entry naming files gives: a generator's (called with the entry's
    ``config``), or those of the files a path or glob names."""
    ref = str(entry[GENERATOR_KEY])
    from evalh.config.generators import generated_tests, is_generator  # (inline tests never name a file)

    try:
        if is_generator(ref):
            return _validated(generated_tests(ref, entry.get("config"), where, ctx), offset, ctx, None)
        tests: list[RawTest] = []
        for file in ctx.expand(ref, where):
            tests.extend(_from_file(file, where, offset + len(tests), ctx))
        return tests
    except ConfigError as error:
        ctx.problems.add_exception(error)
        return []


def _from_file(path: Path, where: Where, offset: int, ctx: LoadContext) -> list[RawTest]:
    suffix = path.suffix.lower()
    if suffix not in _TEST_SUFFIXES:
        raise ConfigError(
            f"cannot read tests from {display_path(path)}",
            where=where,
            hint=f"Tests files must be one of: {', '.join(_TEST_SUFFIXES)}",
        )
    if suffix == ".csv":
        from evalh.config.csv_tests import tests_from_csv

        found, problems = tests_from_csv(ctx.read_text(path, where), display_path(path), known_base_types())
        for problem in problems:
            ctx.problems.add_exception(problem)
        return _validated([(data, origin) for data, origin in found], offset, ctx, path.parent)
    if suffix == ".jsonl":
        return _validated(_jsonl_items(path, where, ctx), offset, ctx, path.parent)
    document = ctx.read_document(path, where)
    data = document.data
    if isinstance(data, Mapping):
        return _validated([(data, DocOrigin(document, ()))], offset, ctx, path.parent)
    if not isinstance(data, list):
        raise ConfigError(
            f"{document.file} must hold a list of tests",
            where=where,
            hint="Write - vars: ... / assert: ... items",
        )
    items: list[tuple[Any, Origin]] = [(item, DocOrigin(document, (i,))) for i, item in enumerate(data)]
    return _validated(items, offset, ctx, path.parent)


def _jsonl_items(path: Path, where: Where, ctx: LoadContext) -> list[tuple[Any, Origin]]:
    file = display_path(path)
    items: list[tuple[Any, Origin]] = []
    for number, line in enumerate(ctx.read_text(path, where).splitlines(), start=1):
        if not line.strip():
            continue
        try:
            items.append((parse_json(line, file, number), CsvOrigin(file=file, row=number)))
        except ConfigError as error:
            ctx.problems.add_exception(error)
    return items


def _placer(origin: Origin, shown: JsonPath) -> Callable[[JsonPath], str]:
    return lambda path: f"{origin.locate(path)} {format_path((*shown, *path))}"


def validated_tests(items: list[tuple[Any, Origin]], offset: int, ctx: LoadContext) -> list[RawTest]:
    """Tests code returned (a generator's, a beforeAll hook's), checked like a tests file's."""
    return _validated(items, offset, ctx, None)


def _validated(
    items: list[tuple[Any, Origin]], offset: int, ctx: LoadContext, folder: Path | None
) -> list[RawTest]:
    """Schema-check tests read from a file (in ``folder``); a broken test is reported and marked
    invalid."""
    tests: list[RawTest] = []
    for data, _ in items:  # before any message can quote a value, as the config's own secrets are
        register_config(data)
    checked = ctx.test_checker.problems_of_each(data for data, _ in items)  # a known test is not shaped
    for index, ((data, origin), found) in enumerate(zip(items, checked, strict=True)):
        shown: JsonPath = ("tests", offset + index)
        problems = drop_unknown_keys(found, data, _placer(origin, shown))
        for problem in problems:
            where = f"{origin.locate(problem.path)} {format_path((*shown, *problem.path))}"
            ctx.problems.add(problem.message, where=where, hint=problem.hint, kind=SchemaError)
        confined = ctx.check_data_refs(data, origin, shown, folder)
        valid = confined and not problems
        tests.append(RawTest(data if isinstance(data, Mapping) else {}, origin, valid=valid, folder=folder))
    return tests
