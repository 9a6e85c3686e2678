"""``scenarios:``: promptfoo's groups of tests run once per configuration, as plain tests.

A scenario is ``{description, config: [partial tests], tests: [tests]}``; the config's ``scenarios`` is a
list of them and of ``file://`` paths to .yaml / .json files holding one or a list (or one such path).
Each scenario's ``tests`` may be inline tests, ``file://`` tests files, or one such path, as ``tests:``.

promptfoo's rules (``src/evaluator.ts``, ``mergeScenarioTest``): the tests run are, after the config's
own tests, for each scenario and each entry of its ``config`` in order, every test of the scenario
merged over the entry: the test's keys win, vars / options / metadata are merged key by key, and the
entry's assertions run before the test's (defaultTest's still run first: :func:`build_tests` merges it
as for any test). Each entry numbers a conversation: ``metadata.conversationId`` is
``__scenario_<n>__`` (n counting the entries of every scenario) unless a test, entry or defaultTest sets
one. A scenario without ``tests`` runs nothing (promptfoo adds no empty test for it).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalh.config.build import load_vars
from evalh.config.files import DocOrigin, LoadContext, Origin
from evalh.config.locate import Document, JsonPath
from evalh.config.shapes import defs_checker
from evalh.config.tests_files import RawTest, collect_tests
from evalh.config.unknown_keys import drop_unknown_keys
from evalh.errors import ConfigError, SchemaError

__all__ = ["ScenarioOrigin", "scenario_tests"]

_SCENARIO_SUFFIXES = (".yaml", ".yml", ".json")
_MERGED_KEYS = ("vars", "options", "metadata")
CONVERSATION_ID = "conversationId"


@dataclass(frozen=True)
class _Scenario:
    data: Mapping[str, Any]
    document: Document
    at: JsonPath  # where the scenario is in ``document``


@dataclass(frozen=True)
class ScenarioOrigin:
    """A merged scenario test: each key located where it was written, in the test or in the entry."""

    entry: Origin
    test: Origin
    entry_data: Mapping[str, Any]
    test_data: Mapping[str, Any]

    def locate(self, inner: JsonPath) -> str:
        if not inner:
            return self.test.locate(())
        key = inner[0]
        if key == "assert" and len(inner) > 1 and isinstance(inner[1], int):
            before = len(self.entry_data.get("assert") or ())
            if inner[1] < before:
                return self.entry.locate(inner)
            return self.test.locate(("assert", inner[1] - before, *inner[2:]))
        if key in _MERGED_KEYS and len(inner) > 1:
            mine = self.test_data.get(key)
            if not (isinstance(mine, Mapping) and inner[1] in mine) and inner[1] in (
                self.entry_data.get(key) or {}
            ):
                return self.entry.locate(inner)
            return self.test.locate(inner)
        if key not in self.test_data and key in self.entry_data:
            return self.entry.locate(inner)
        return self.test.locate(inner)


def scenario_tests(
    value: Any, document: Document, ctx: LoadContext, default_metadata: Mapping[str, Any]
) -> list[RawTest]:
    """The tests the config's ``scenarios`` make, in promptfoo's order (see the module's text)."""
    tests: list[RawTest] = []
    number = 0  # promptfoo's scenarioIndex: one per config entry of every scenario
    for ordinal, scenario in enumerate(_scenarios(value, document, ctx)):
        entries = scenario.data.get("config") or []
        written = scenario.data.get("tests")
        raw_tests = (
            collect_tests(written, scenario.document, ctx, at=(*scenario.at, "tests"))
            if written is not None
            else []
        )
        for index, entry in enumerate(entries):
            entry_origin = DocOrigin(scenario.document, (*scenario.at, "config", index))
            for position, raw in enumerate(raw_tests):
                shown = ("scenarios", ordinal, "config", index, "tests", position)
                merged = _merged(entry, entry_origin, raw, (number, shown), default_metadata, ctx)
                if merged is not None:
                    tests.append(merged)
            number += 1
    return tests


def _scenarios(value: Any, document: Document, ctx: LoadContext) -> list[_Scenario]:
    """Every scenario, inline or read from files, each schema-checked where it was written."""
    items: list[tuple[Any, JsonPath]] = (
        [(item, ("scenarios", i)) for i, item in enumerate(value)]
        if isinstance(value, list)
        else [(value, ("scenarios",))]
    )
    found: list[_Scenario] = []
    for item, path in items:
        if isinstance(item, Mapping):
            found.append(_Scenario(item, document, path))
            continue
        where = document.place(path)
        try:
            for file in ctx.expand(str(item), where):
                found.extend(_from_file(ctx.read_document(file, where), where, file.suffix.lower(), ctx))
        except ConfigError as error:
            ctx.problems.add_exception(error)
    return found


def _from_file(source: Document, where: Any, suffix: str, ctx: LoadContext) -> list[_Scenario]:
    if suffix not in _SCENARIO_SUFFIXES:
        raise ConfigError(
            f"cannot read scenarios from {source.file}",
            where=where,
            hint=f"Scenarios files must be one of: {', '.join(_SCENARIO_SUFFIXES)}",
        )
    data = source.data
    listed: Sequence[tuple[Any, JsonPath]] = (
        [(item, (i,)) for i, item in enumerate(data)] if isinstance(data, list) else [(data, ())]
    )
    scenarios: list[_Scenario] = []
    for item, at in listed:
        problems = drop_unknown_keys(
            defs_checker("scenario").problems(item), item, functools.partial(_inside, source, at)
        )
        for problem in problems:
            ctx.problems.add(
                problem.message, where=source.where((*at, *problem.path)), hint=problem.hint, kind=SchemaError
            )
        if not problems and isinstance(item, Mapping):
            scenarios.append(_Scenario(item, source, at))
    return scenarios


def _inside(source: Document, at: JsonPath, inner: JsonPath) -> str:
    return source.where((*at, *inner))


def _merged(
    entry: Mapping[str, Any],
    entry_origin: Origin,
    raw: RawTest,
    place: tuple[int, JsonPath],
    default_metadata: Mapping[str, Any],
    ctx: LoadContext,
) -> RawTest | None:
    """promptfoo's ``mergeScenarioTest`` of one config entry and one test (defaultTest merged later);
    ``place``: the entry's conversation number and the merged test's path in messages."""
    test, (number, shown) = raw.data, place
    merged: dict[str, Any] = {**entry, **test}
    try:
        merged["vars"] = {
            **_vars(entry, entry_origin, shown[:4], ctx),
            **_vars(test, raw.origin, shown, ctx, raw.folder),
        }
    except ConfigError as error:
        ctx.problems.add_exception(error)
        return None
    if "options" in entry or "options" in test:
        merged["options"] = {**(entry.get("options") or {}), **(test.get("options") or {})}
    if "assert" in entry or "assert" in test:
        merged["assert"] = [*(entry.get("assert") or ()), *(test.get("assert") or ())]
    metadata = {**(entry.get("metadata") or {}), **(test.get("metadata") or {})}
    if CONVERSATION_ID not in metadata and CONVERSATION_ID not in default_metadata:
        metadata[CONVERSATION_ID] = f"__scenario_{number}__"
    merged["metadata"] = metadata
    origin = ScenarioOrigin(entry_origin, raw.origin, entry, test)
    return RawTest(merged, origin, valid=raw.valid, folder=raw.folder, shown=shown)


def _vars(
    data: Mapping[str, Any], origin: Origin, shown: JsonPath, ctx: LoadContext, folder: Path | None = None
) -> dict[str, Any]:
    """A test's or entry's vars as a mapping: ``vars: file://...`` read (promptfoo reads a scenario
    test's vars files before merging), from ``folder`` for a tests file's test."""
    return load_vars(data, origin, shown, ctx, folder) if data.get("vars") else {}
