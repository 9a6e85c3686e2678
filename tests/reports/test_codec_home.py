"""Fitness: the promptfoo row shape has one home, the codec (``evalh/reports/codec*.py``).

Read from the sources (ast), not run: outside the codec no module spells a key that names the row shape
(``failureReason``, ``gradingResult``, ``testIdx`` ..., also as a SQLite JSON path ``$.testIdx``), so
``failureReason`` is decoded nowhere else; and no module reads a field of a variable named ``row`` (or
``r``) by a string key, which catches the keys that are common words (``score``, ``vars``, ``prompt``).
A new row field or status is then added in the codec, and every reader follows.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import evalh
from evalh.reports.json import result_to_json
from tests.reports.sample import sample_run

PACKAGE = Path(evalh.__file__).parent
CODEC = "reports/codec"  # reports/codec.py (writing), codec_read.py (reading), codec_check.py (checking)

# The keys that name the row shape (a word no other shape of evalh uses for itself).
ROW_SHAPE_KEYS = frozenset(
    {
        "success",
        "failureReason",
        "gradingResult",
        "componentResults",
        "namedScoreWeights",
        "testIdx",
        "promptIdx",
        "providerIdx",
        "repeatIdx",
        "promptId",
        "testCase",
    }
)
# (module, key): why the module may spell it
ALLOWED_KEYS = {
    (
        "assertions/scripted.py",
        "componentResults",
    ): "a script assertion's returned GradingResult (promptfoo's assertion protocol), not a report row",
    (
        "runner/scoring_function.py",
        "componentResults",
    ): "the context promptfoo hands an assertScoringFunction (its protocol), not a report row",
}
ROW_NAMES = frozenset({"row", "r"})
ALLOWED_ROW_READS = {
    "config/prompt_files.py": "its rows are a prompts CSV file's, not a report's",
}


def _modules() -> Iterator[tuple[str, ast.Module]]:
    for path in sorted(PACKAGE.rglob("*.py")):
        name = path.relative_to(PACKAGE).as_posix()
        if not name.startswith(CODEC):
            yield name, ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def _spelled_keys(tree: ast.Module) -> Iterator[tuple[int, str]]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            key = node.value.removeprefix("$.")
            if key in ROW_SHAPE_KEYS:
                yield node.lineno, key


def _row_reads(tree: ast.Module) -> Iterator[tuple[int, str]]:
    """``row.get("key")`` and ``row["key"]``: a row's field read by its key."""
    for node in ast.walk(tree):
        receiver, key = None, None
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get":
            receiver, key = node.func.value, node.args[0] if node.args else None
        elif isinstance(node, ast.Subscript):
            receiver, key = node.value, node.slice
        named_row = isinstance(receiver, ast.Name) and receiver.id in ROW_NAMES
        if named_row and isinstance(key, ast.Constant) and isinstance(key.value, str):
            yield node.lineno, key.value


def test_the_row_shape_keys_are_the_codecs_own() -> None:
    row = result_to_json(sample_run().results[0])
    written = set(row) | set(row["gradingResult"] or {}) | {"componentResults"}
    assert written >= ROW_SHAPE_KEYS, ROW_SHAPE_KEYS - written  # the list follows the codec


def test_only_the_codec_spells_the_row_keys() -> None:
    found = [
        f"evalh/{name}:{line}: {key!r}"
        for name, tree in _modules()
        for line, key in _spelled_keys(tree)
        if (name, key) not in ALLOWED_KEYS
    ]
    assert not found, "ask evalh.reports.codec_read instead of spelling a row key:\n" + "\n".join(found)


def test_only_the_codec_reads_a_rows_fields() -> None:
    found = [
        f"evalh/{name}:{line}: row[{key!r}]"
        for name, tree in _modules()
        if name not in ALLOWED_ROW_READS
        for line, key in _row_reads(tree)
    ]
    assert not found, "read a row's fields through evalh.reports.codec_read:\n" + "\n".join(found)


def test_the_allow_lists_name_what_still_needs_them() -> None:
    modules = dict(_modules())
    for name, key in ALLOWED_KEYS:
        assert any(found == key for _line, found in _spelled_keys(modules[name])), (name, key)
    for name in ALLOWED_ROW_READS:
        assert any(True for _ in _row_reads(modules[name])), name
