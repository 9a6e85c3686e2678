"""Tests from a CSV file, with promptfoo's special columns and ``__expected`` mini-syntax.

Ordinary columns become vars. Special columns: ``__expected``/``__expected1..N`` (one assertion each),
``__description``, ``__metric``, ``__threshold``, ``__providerOutput`` (a recorded output),
``__metadata:key`` (``key[]`` splits on commas not escaped as ``\\,``), ``__config:__expected:threshold`` /
``__config:__expectedN:threshold`` (the threshold of the row's first / Nth assertion: promptfoo counts
the row's non-empty ``__expected`` cells in column order, and also copies the value into the test's
``metadata.threshold``). An ``__expected`` cell reads
``[not-]type[(threshold)]:value``; no known type means ``equals`` of the whole cell, as written.
As in promptfoo, a typed value is trimmed (``contains: Hello`` looks for ``Hello``), except the
JSON schema of ``is-json``/``contains-json`` and an ``llm-rubric`` rubric, which are kept as written.
"""

from __future__ import annotations

import csv
import functools
import io
import re
from collections.abc import Iterable
from typing import Any

from evalh.assertions.promptfoo_only import PROMPTFOO_ONLY, unknown_type
from evalh.config.files import CsvOrigin, is_file_ref, script_path
from evalh.config.locate import JsonPath, close_matches
from evalh.errors import ConfigError
from evalh.runtimes.javascript_source import JS_FILE_SUFFIXES

__all__ = ["CSV_SPECIAL_COLUMNS", "MiniSyntaxError", "parse_expected", "tests_from_csv"]

CSV_SPECIAL_COLUMNS = (
    "__expected",
    "__description",
    "__metric",
    "__threshold",
    "__providerOutput",
    "__metadata",
)
_EXPECTED = re.compile(r"^__expected(\d*)$")
_CONFIG_PREFIX = "__config:"
_CONFIG_COLUMN = re.compile(r"^__config:__expected(\d*):threshold$")
_CONFIG_KEYS = ("threshold",)  # promptfoo's only per-assertion config column key
_NUMBER = re.compile(r"^[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?$")  # promptfoo's parseFiniteNumber
_ESCAPED_COMMA = re.compile(r"(?<!\\),")
_LIST_TYPES = frozenset({"contains-any", "contains-all", "icontains-any", "icontains-all"})
_UNTRIMMED = frozenset({"contains-json", "is-json", "llm-rubric"})  # promptfoo keeps these as written
# promptfoo's CSV mini-syntax has defaults of its own when a cell names no threshold (src/csv.ts
# assertionFromString): 0.8 for the similar family, 0.75 for every other type its list names, even where
# 0.75 is an odd edit distance (`levenshtein:` then means "identical") or latency. They belong to this
# syntax, not to the types: the same assertion written in YAML gets the registry's default. promptfoo's
# list also names starts-with, which has no threshold: evalh leaves it out rather than warn about it.
_CSV_DEFAULT_THRESHOLDS = {
    **dict.fromkeys(("similar", "similar:cosine", "similar:dot", "similar:euclidean"), 0.8),
    **dict.fromkeys(
        (
            "answer-relevance",
            "classifier",
            "context-faithfulness",
            "context-recall",
            "context-relevance",
            "cost",
            "latency",
            "levenshtein",
            "perplexity",
            "perplexity-score",
            "rouge-n",
        ),
        0.75,
    ),
}
_ALIASES = {"grade": "llm-rubric", "llm-rubric": "llm-rubric", "python": "python"}
_SCRIPT_ALIASES = ("fn:", "javascript:", "eval:")
_TYPE_LIKE = re.compile(r"^(?:not-)?([a-z][a-z0-9-]*(?::[a-z0-9-]+)?)(\([^)]*\))?:")


class MiniSyntaxError(ValueError):
    """An ``__expected`` cell that does not parse; the message is for users."""

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.hint = hint


def parse_expected(cell: str, known_types: Iterable[str]) -> dict[str, Any] | None:
    """One ``__expected`` cell -> an assertion mapping (as it would be written in YAML), or None if empty."""
    text = cell.strip()
    if not text:
        return None
    for prefix in _SCRIPT_ALIASES:
        if text.startswith((prefix, f"not-{prefix}")):
            kind = "not-javascript" if text.startswith("not-") else "javascript"
            return {"type": kind, "value": text.partition(":")[2]}
    if is_file_ref(text):
        if script_path(text).endswith(".py"):
            return {"type": "python", "value": text}
        if script_path(text).endswith(JS_FILE_SUFFIXES):
            return {"type": "javascript", "value": text}
        raise MiniSyntaxError(
            f"{text!r}: only file://script.py and JavaScript or TypeScript (file://script.js, .ts, "
            ".mjs...) assertions are supported"
        )
    head, sep, rest = text.partition(":")
    negate = head.startswith("not-")
    alias = _ALIASES.get(head.removeprefix("not-"))
    if sep and alias:
        return {"type": f"not-{alias}" if negate else alias, "value": _trimmed(alias, rest)}
    body = text[4:] if negate else text
    for name in _longest_first(tuple(known_types)):
        if body.startswith(name) and (len(body) == len(name) or body[len(name)] in ":("):
            return _typed(name, negate, body[len(name) :])
    match = _TYPE_LIKE.match(text)
    # promptfoo reads `webhook:http://x` as its type, not as a text to equal (the pattern took `webhook:http`)
    promptfoo_only = match is not None and match.group(1).partition(":")[0] in PROMPTFOO_ONLY
    if match and (match.group(2) or promptfoo_only or close_matches(match.group(1), list(known_types))):
        name = match.group(1).partition(":")[0] if promptfoo_only else match.group(1)
        message, hint = unknown_type(name, close_matches(name, list(known_types)))
        raise MiniSyntaxError(message, f"{hint} (write equals:<text> for a literal text)")
    return {"type": "equals", "value": cell}  # the cell as written: promptfoo compares it untrimmed


def _trimmed(name: str, text: str) -> str:
    return text if name in _UNTRIMMED else text.strip()


@functools.lru_cache(maxsize=8)
def _longest_first(names: tuple[str, ...]) -> tuple[str, ...]:
    """Longest first, so similar:cosine is tried before similar."""
    return tuple(sorted(names, key=len, reverse=True))


def _typed(name: str, negate: bool, rest: str) -> dict[str, Any]:
    threshold: float | None = None
    if rest.startswith("("):
        close = rest.find(")")
        if close < 0:
            raise MiniSyntaxError(
                f"missing ')' after the threshold of {name!r}", "Write e.g. similar(0.8):text"
            )
        try:
            threshold = float(rest[1:close])
        except ValueError:
            raise MiniSyntaxError(
                f"the threshold of {name!r} must be a number (got {rest[1:close]!r})",
                "Write e.g. similar(0.8):text",
            ) from None
        rest = rest[close + 1 :]
    if rest and not rest.startswith(":"):
        raise MiniSyntaxError(f"expected ':' after {name!r}", f"Write {name}:<value>")
    assertion: dict[str, Any] = {"type": f"not-{name}" if negate else name}
    if rest:
        assertion["value"] = _value(name, rest[1:])
    if threshold is None:
        threshold = _CSV_DEFAULT_THRESHOLDS.get(name)
    if threshold is not None:  # else the registry's default applies, as in YAML
        assertion["threshold"] = threshold
    return assertion


def _value(name: str, text: str) -> Any:
    if name in _LIST_TYPES:
        return [
            item.strip() for row in csv.reader([text], skipinitialspace=True) for item in row if item.strip()
        ]
    if name == "word-count":
        try:
            return int(text)
        except ValueError:
            raise MiniSyntaxError(f"word-count needs a whole number (got {text!r})") from None
    return _trimmed(name, text)


def tests_from_csv(
    text: str, file: str, known_types: Iterable[str]
) -> tuple[list[tuple[dict[str, Any], CsvOrigin]], list[ConfigError]]:
    """(test mapping, origin) per data row, and every located problem found."""
    known = tuple(known_types)
    reader = csv.reader(io.StringIO(text))
    problems: list[ConfigError] = []
    try:
        header = next(reader)
    except StopIteration:
        return [], [
            ConfigError("the CSV file is empty", where=file, hint="Write a header row, then one row per test")
        ]
    except csv.Error as error:
        return [], [ConfigError(f"invalid CSV: {error}", where=f"{file}:1")]
    header = [name.strip() for name in header]
    problems.extend(_check_header(header, file))
    if problems:
        return [], problems
    tests: list[tuple[dict[str, Any], CsvOrigin]] = []
    line = reader.line_num + 1
    while True:
        try:
            row = next(reader)
        except StopIteration:
            break
        except csv.Error as error:
            problems.append(ConfigError(f"invalid CSV: {error}", where=f"{file}:{line}"))
            break
        start, line = line, reader.line_num + 1
        if not any(cell.strip() for cell in row):
            continue
        if len(row) != len(header):
            problems.append(
                ConfigError(
                    f"this row has {len(row)} cells but the header has {len(header)} columns",
                    where=f"{file}:{start}",
                    hint='Quote cells that contain commas ("a, b") and check for missing or extra commas',
                )
            )
            continue
        test = _row_to_test(header, row, file, start, known, problems)
        if test is not None:
            tests.append(test)
    return tests, problems


def _check_header(header: list[str], file: str) -> list[ConfigError]:
    problems: list[ConfigError] = []
    seen: set[str] = set()
    for column, name in enumerate(header, start=1):
        where = f"{file}:1:{column}"
        if name in seen:
            problems.append(ConfigError(f"duplicate column {name!r}", where=where))
        seen.add(name)
        if not name:
            problems.append(
                ConfigError("empty column name", where=where, hint="Name every column in the header")
            )
        elif name.startswith(_CONFIG_PREFIX):
            problems.extend(_config_column_problems(name, where))
        elif name.startswith("__") and not _is_special(name):
            match = close_matches(name, [*CSV_SPECIAL_COLUMNS, "__metadata:key"])
            hint = (
                f"Did you mean {match!r}?" if match else f"Special columns: {', '.join(CSV_SPECIAL_COLUMNS)}"
            )
            problems.append(ConfigError(f"unknown special column {name!r}", where=where, hint=hint))
    return problems


def _config_column_problems(name: str, where: str) -> list[ConfigError]:
    """A ``__config:`` column must be ``__config:__expected[N]:threshold`` (N >= 1), as promptfoo's."""
    match = _CONFIG_COLUMN.match(name)
    if match and (not match.group(1) or int(match.group(1)) >= 1):
        return []
    return [
        ConfigError(
            f"unknown special column {name!r}",
            where=where,
            hint="A config column is __config:__expected:threshold or __config:__expectedN:threshold "
            f"(N from 1: the row's Nth assertion); config keys: {', '.join(_CONFIG_KEYS)}",
        )
    ]


def _assertion_index(name: str) -> int:
    """The 0-based position of the assertion ``__config:__expected[N]:...`` configures."""
    digits = name.removeprefix(_CONFIG_PREFIX).split(":")[0].removeprefix("__expected")
    return int(digits) - 1 if digits else 0


def _config_cell(configs: dict[int, float], name: str, cell: str) -> None:
    text = cell.strip()
    if not _NUMBER.match(text):
        raise MiniSyntaxError(
            f"the threshold must be a number (got {cell!r})",
            hint="Write a number in every cell of a __config:...:threshold column, as promptfoo requires",
        )
    configs[_assertion_index(name)] = float(text)


def _is_special(name: str) -> bool:
    return bool(_EXPECTED.match(name)) or name.startswith("__metadata:") or name in CSV_SPECIAL_COLUMNS


def _row_to_test(
    header: list[str],
    row: list[str],
    file: str,
    line: int,
    known: tuple[str, ...],
    problems: list[ConfigError],
) -> tuple[dict[str, Any], CsvOrigin] | None:
    test: dict[str, Any] = {"vars": {}}
    asserts: list[dict[str, Any]] = []
    metadata: dict[str, Any] = {}
    configs: dict[int, float] = {}  # assertion position -> threshold, from __config columns
    columns: dict[JsonPath, int] = {}
    failed = False
    for column, (name, cell) in enumerate(zip(header, row, strict=True), start=1):
        try:
            if _EXPECTED.match(name):
                assertion = parse_expected(cell, known)
                if assertion is not None:
                    columns[("assert", len(asserts))] = column
                    asserts.append(assertion)
            elif name.startswith("__metadata:"):
                _metadata_cell(metadata, name.removeprefix("__metadata:"), cell)
            elif name.startswith(_CONFIG_PREFIX):
                _config_cell(configs, name, cell)
            else:
                _plain_cell(test, columns, name, cell, column)
        except MiniSyntaxError as error:
            problems.append(
                ConfigError(f"column {name!r}: {error}", where=f"{file}:{line}:{column}", hint=error.hint)
            )
            failed = True
    if failed:
        return None
    metric = test.pop("__metric", None)
    for position, assertion in enumerate(asserts):
        if metric:
            assertion["metric"] = metric
        if position in configs:  # a config for a position the row has no assertion at is unused
            assertion["threshold"] = metadata["threshold"] = configs[position]
    if asserts:
        test["assert"] = asserts
    if metadata:
        test["metadata"] = metadata
    return test, CsvOrigin(file=file, row=line, columns=columns)


def _metadata_cell(metadata: dict[str, Any], key: str, cell: str) -> None:
    """``__metadata:key`` holds the cell; ``__metadata:key[]`` a list split at each comma not
    written as ``\\,`` (promptfoo's rule: ``physics,advanced\\,theory`` is two items)."""
    if not cell.strip():
        return
    if key.endswith("[]"):
        items = (item.strip().replace("\\,", ",") for item in _ESCAPED_COMMA.split(cell))
        metadata[key[:-2]] = [item for item in items if item]
    else:
        metadata[key] = cell


def _plain_cell(
    test: dict[str, Any], columns: dict[JsonPath, int], name: str, cell: str, column: int
) -> None:
    """A var, or one of __description, __metric, __threshold, __providerOutput."""
    if name == "__description":
        test["description"], columns[("description",)] = cell, column
    elif name == "__metric":
        test["__metric"] = cell.strip() or None
    elif name == "__threshold":
        columns[("threshold",)] = column
        if cell.strip():
            try:
                test["threshold"] = float(cell)
            except ValueError:
                raise MiniSyntaxError(f"__threshold must be a number (got {cell!r})") from None
    elif name == "__providerOutput":
        test["output"], columns[("output",)] = cell, column
    else:
        test["vars"][name], columns[("vars", name)] = cell, column
