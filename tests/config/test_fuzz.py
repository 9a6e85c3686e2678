"""Fuzzing `evalh validate` with mutated configs: every input ends in exit 0, 1 or 2, never in an
internal error or a traceback.

Seeds are the example configs and the broken-config fixtures (with the files they name). Hypothesis
mutates their structure (deletes keys, swaps types, puts odd values anywhere: NaN, huge numbers, deep
nesting, special files, hostile templates, unicode) and then their text (anchors and aliases, stray
brackets and tags, truncation). Derandomized and bounded, so CI runs the same inputs in a few seconds.
"""

from __future__ import annotations

import copy
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from evalh.cli.app import app
from evalh.errors import EXIT_CONFIG, EXIT_FAILED, EXIT_OK
from tests.fuzzing import paths, replaced, value_at

ROOT = Path(__file__).resolve().parent.parent.parent
SEED_DIRS = (ROOT / "examples" / "configs", ROOT / "tests" / "fixtures" / "broken")
# hostile fixtures are tested on their own (and an alias cycle cannot be mutated as data)
_HOSTILE = {
    case["fixture"]
    for case in yaml.safe_load((SEED_DIRS[1] / "hostile.yaml").read_text(encoding="utf-8"))["cases"]
}
SEEDS = sorted(
    (directory.name, path.name)
    for directory in SEED_DIRS
    for path in directory.glob("*.yaml")
    if path.name not in {"cases.yaml", "hostile.yaml", *_HOSTILE}
)

_ODD_TEXT = [
    "file:///dev/zero",
    "file://../../../../../etc/hostname",
    "file://a\x00b.txt",
    "file://" + "n" * 300,
    "file://~no_such_user_evalh/x",
    "file://*.yaml",
    "file://",
    "file://.",
    "python:a\x00.py",
    "exec:",
    "{{ x }}",
    "{% macro m() %}{{ m() }}{% endmacro %}{{ m() }}",
    "{{ env.EVALH_FUZZ_UNSET }}",
    "{{ 9 ** 9 ** 9 }}",
    "{% for i in range(10**9) %}x{% endfor %}",
    "echo",
    "similar",
    "not-contains",
    "assert-set",
    "-.inf",
    "1e-3",
    "yes",
    "\u202eevil",
    "\udcff",
    "",
]


def _nested(depth: int) -> Any:
    value: Any = "leaf"
    for _ in range(depth):
        value = [value]
    return value


ODD_VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**20), max_value=10**20),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from(_ODD_TEXT),
    st.text(max_size=20),
    st.sampled_from([10**4100, -(10**4250), _nested(99), _nested(150), "x" * 100_000]),
    st.lists(st.one_of(st.none(), st.integers(), st.text(max_size=5)), max_size=3),
    st.dictionaries(st.sampled_from(["type", "value", "threshold", "weight", "vars", "assert", "id"]),
                    st.one_of(st.none(), st.integers(), st.text(max_size=5)), max_size=3),
)  # fmt: skip
_TOKENS = [
    "&a ",
    "*a",
    "<<: *a\n",
    "[",
    "]",
    "{",
    "}",
    ": ",
    "- ",
    "\n",
    "\t",
    "!!binary ",
    "!!python/object:os.system ",
    "!!set ",
    "!!omap ",
    "!!timestamp ",
    "? ",
    "#",
    "'",
    '"',
    "%YAML 1.1\n---\n",
    "---\n",
    "...\n",
    "\ufeff",
    "\x00",
    "\x85",
    "@",
    "`",
    "|\n",
    ">-\n",
]


@st.composite
def mutated_configs(draw: st.DrawFn) -> tuple[str, str, bytes]:
    directory, name = draw(st.sampled_from(SEEDS))
    text = (_seed_dir(directory) / name).read_text(encoding="utf-8")
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError:  # a broken seed: its text is mutated as it is
        return directory, name, _mutate_text(draw, text)
    for _ in range(draw(st.integers(0, 4))):
        path = draw(st.sampled_from(list(paths(data))))
        old = value_at(data, path)
        action = draw(st.sampled_from(["delete", "odd", "wrap-list", "wrap-map", "stringify"]))
        if action == "delete" and path:
            data = replaced(data, path, None, delete=True)
        elif action == "wrap-list":
            data = replaced(data, path, [old])
        elif action == "wrap-map":
            data = replaced(data, path, {draw(st.sampled_from(["id", "value", "x"])): old})
        elif action == "stringify":
            data = replaced(data, path, str(old))
        else:
            data = replaced(data, path, copy.deepcopy(draw(ODD_VALUES)))  # never share the constants
    return (
        directory,
        name,
        _mutate_text(draw, yaml.safe_dump(data, allow_unicode=True, sort_keys=False, width=1000)),
    )


def _mutate_text(draw: st.DrawFn, text: str) -> bytes:
    for _ in range(draw(st.integers(0, 3))):
        position = draw(st.integers(0, len(text)))
        edit = draw(st.sampled_from(["insert", "insert", "cut", "truncate"]))
        if edit == "insert":
            text = text[:position] + draw(st.sampled_from(_TOKENS)) + text[position:]
        elif edit == "cut":
            text = text[:position] + text[position + draw(st.integers(1, 20)) :]
        else:
            text = text[:position]
    return text.encode("utf-8", "surrogateescape")


def _seed_dir(directory: str) -> Path:
    return next(path for path in SEED_DIRS if path.name == directory)


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the seed directories, so mutated configs find the files their seeds name."""
    root = tmp_path_factory.mktemp("fuzz")
    for directory in SEED_DIRS:
        shutil.copytree(directory, root / directory.name)
    (root / "broken" / "pipe.txt").unlink(missing_ok=True)
    return root


@settings(
    # EVALH_FUZZ_EXAMPLES=20000 explores further (and with fresh random inputs) on a developer's machine
    max_examples=int(os.environ.get("EVALH_FUZZ_EXAMPLES", "400")),
    derandomize="EVALH_FUZZ_EXAMPLES" not in os.environ,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(case=mutated_configs())
def test_validate_never_fails_with_an_internal_error(case: tuple[str, str, bytes], workspace: Path) -> None:
    directory, name, raw = case
    config = workspace / directory / f"fuzz-{name}"
    config.write_bytes(raw)
    result = CliRunner().invoke(app, ["validate", str(config)])
    assert result.exit_code in (EXIT_OK, EXIT_FAILED, EXIT_CONFIG), result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert "internal error" not in result.output, result.output
    assert "Traceback" not in result.output, result.output
    if result.exit_code != EXIT_OK:  # after any warnings (an undefined variable, an ignored key)
        lines = [line for line in result.stderr.splitlines() if not line.startswith("evalh: warning: ")]
        assert lines and lines[0].startswith("evalh: error: "), result.stderr
