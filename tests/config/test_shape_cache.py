"""The valid shapes kept between runs (config/shape_cache.py): a warm run builds no jsonschema validator,
and a cached shape never hides a problem."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from evalh.cli.app import app
from evalh.config import schema
from evalh.config.schema import config_validator, schema_problems
from evalh.config.shape_cache import CACHE_FILE, KnownShapes, shape_digest
from evalh.config.shapes import _shape, defs_checker

_CONFIG = """\
description: shapes
prompts: ['{{answer}}']
providers: [echo]
evaluateOptions: {maxConcurrency: 4}
defaultTest: {options: {judge: {aggregate: mean}}}
tests:
  - vars: {answer: The robot came.}
    assert:
      - {type: contains, value: robot}
      - {type: levenshtein, value: The robot, threshold: 10}
  - vars: {answer: 'x'}
    options: {judge: {samples: 2}}
    assert: [{type: equals, value: x, weight: 2.5}]
"""
# Loads the config in a fresh interpreter: what it resolved, and whether jsonschema was imported
_LOAD = (
    "import sys\nfrom pathlib import Path\nfrom evalh.config.load import load_suite\n"
    "suite = load_suite(Path(sys.argv[1]))\n"
    "print([[a.type for a in test.asserts] for test in suite.tests], 'jsonschema' in sys.modules)\n"
)


def _load_in_subprocess(config: Path, cache: Path, seed: str, **env: str) -> list[str]:
    environment = {**os.environ, "EVALH_CACHE_DIR": str(cache), "PYTHONHASHSEED": seed, **env}
    command = [sys.executable, "-c", _LOAD, str(config)]
    result = subprocess.run(command, capture_output=True, text=True, check=True, env=environment)
    return result.stdout.rsplit(" ", 1)


def _config(tmp_path: Path, text: str = _CONFIG) -> Path:
    config = tmp_path / "evalh.yaml"
    config.write_text(text, encoding="utf-8")
    return config


def test_a_second_load_in_a_new_process_imports_no_jsonschema_and_resolves_the_same(tmp_path: Path) -> None:
    config, cache = _config(tmp_path), tmp_path / "cache"
    cold = _load_in_subprocess(config, cache, seed="1")
    warm = _load_in_subprocess(config, cache, seed="2")  # another hash seed: digests must not change
    assert cold[1].strip() == "True" and warm[1].strip() == "False"
    assert warm[0] == cold[0] and "levenshtein" in warm[0]
    assert (cache / CACHE_FILE).is_file()


def test_caching_switched_off_keeps_no_file_and_validates_every_time(tmp_path: Path) -> None:
    config, cache = _config(tmp_path), tmp_path / "cache"
    for seed in ("1", "2"):
        loaded = _load_in_subprocess(config, cache, seed, EVALH_CACHE_ENABLED="false")
        assert loaded[1].strip() == "True"
    assert not (cache / CACHE_FILE).exists()


def test_an_unwritable_cache_folder_is_skipped_silently(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder", encoding="utf-8")
    loaded = _load_in_subprocess(_config(tmp_path), blocker / "cache", seed="1")
    assert loaded[1].strip() == "True" and "contains" in loaded[0]


def _validate(config: Path) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["validate", str(config)])
    return result.exit_code, result.output


@pytest.mark.parametrize(
    ("good", "bad", "message"),
    [
        (
            "evaluateOptions: {maxConcurrency: 4}",
            "evaluateOptions: {maxConcurrency: 4000}",
            "evaluateOptions.maxConcurrency: must be <= 1000 (got 4000)",
        ),
        (
            "defaultTest: {options: {judge: {aggregate: mean}}}",
            "defaultTest: {options: {judge: {aggregate: median}}}",
            "defaultTest.options.judge.aggregate: must be one of 'mean', 'min', 'majority' (got a string 'me",
        ),
        (
            "defaultTest: {options: {judge: {samples: 2}}}",
            "defaultTest: {options: {judge: {samples: 2.0}}}",
            "defaultTest.options.judge.samples: must be a whole number (got a number 2.0)",
        ),
    ],
)
def test_a_bad_value_after_a_warm_cache_gets_the_message_of_a_cold_run(
    tmp_path: Path, good: str, bad: str, message: str
) -> None:
    # The good config warms the cache with its shapes; the bad one, of the same shape but for one
    # value, must still be validated for real, with the same message as without any cache
    base = "prompts: ['{{answer}}']\nproviders: [echo]\ntests: [{vars: {answer: x}}]\n"
    assert _validate(_config(tmp_path, base + good + "\n"))[0] == 0
    assert (tmp_path / "evalh-cache" / CACHE_FILE).is_file()
    warm = _validate(_config(tmp_path, base + bad + "\n"))
    assert warm[0] == 2 and message in warm[1], warm[1]


@pytest.mark.parametrize(
    ("good", "bad", "message"),
    [
        ("options: {judge: {aggregate: mean}}", "options: {judge: {aggregate: median}}", "aggregate"),
        ("options: {judge: {samples: 2}}", "options: {judge: {samples: 2.0}}", "samples"),
        (
            "assert: [{type: trajectory:tool-args-match, value: {name: f, args: {}, mode: exact}}]",
            "assert: [{type: trajectory:tool-args-match, value: {name: f, args: {}, mode: fuzzy}}]",
            "value.mode: must be one of 'partial', 'exact'",
        ),
        (
            "assert: [{type: trace-span-duration, value: {max: 5, percentile: 50}}]",
            "assert: [{type: trace-span-duration, value: {max: 5, percentile: 500}}]",
            "value.percentile: must be <= 100",
        ),
    ],
)
def test_a_bad_test_after_a_good_one_of_the_same_shape_in_one_config(
    tmp_path: Path, good: str, bad: str, message: str
) -> None:
    tests = f"tests:\n  - {{vars: {{a: x}}, {good}}}\n  - {{vars: {{a: x}}, {bad}}}\n"
    text = "prompts: ['{{a}}']\nproviders: [echo]\ntracing: {enabled: true}\n" + tests
    code, output = _validate(_config(tmp_path, text))
    assert code == 2 and "tests[1]" in output and message in output, output
    assert "tests[0]" not in output


def test_a_corrupt_or_huge_cache_file_is_ignored_and_rewritten(tmp_path: Path) -> None:
    config, cache = _config(tmp_path), tmp_path / "cache"
    cache.mkdir()
    for junk in (b"\x00{not json", b"[" + b" " * (5 * 1024 * 1024) + b"]", b'{"key": 1, "shapes": []}'):
        (cache / CACHE_FILE).write_bytes(junk)
        loaded = _load_in_subprocess(config, cache, seed="3")
        assert loaded[1].strip() == "True" and "levenshtein" in loaded[0]
        rewritten = json.loads((cache / CACHE_FILE).read_text(encoding="utf-8"))
        assert isinstance(rewritten["key"], str) and rewritten["shapes"]["defs:test"]


def test_entries_of_another_schema_are_not_reused(tmp_path: Path) -> None:
    path = tmp_path / CACHE_FILE
    shape = _shape({"vars": {"a": "x"}, "assert": [{"type": "contains", "value": "x"}]})
    first = KnownShapes(path, key="schema-1")
    first.learn("defs:test", shape)
    first.save()
    assert KnownShapes(path, key="schema-1").knows("defs:test", shape)
    assert not KnownShapes(path, key="schema-2").knows("defs:test", shape)
    assert not KnownShapes(path, key="schema-1").knows("config", shape)


def test_an_unchanged_store_writes_nothing(tmp_path: Path) -> None:
    path = tmp_path / CACHE_FILE
    KnownShapes(path, key="k").save()
    assert not path.exists()


def test_a_shape_holding_a_url_password_or_a_known_secret_is_not_kept_even_hashed(tmp_path: Path) -> None:
    """A mapping key is kept whole in a shape (the provider-map form names a provider by its URL): a
    digest of a URL's password, or of a registered secret value, could be guessed offline."""
    path = tmp_path / CACHE_FILE
    known = KnownShapes(path, key="k")
    secret_url = {"https://user:hunter2-pass@api.example.com/v1?token=abc123": {"label": "x"}}
    plain_url = {"https://api.example.com/v1": {"label": "x"}}
    known.learn("providers", _shape([secret_url]))
    known.learn("providers", _shape([plain_url]))
    known.save()
    stored = json.loads(path.read_text(encoding="utf-8"))
    assert json.dumps(stored).count(shape_digest(_shape([plain_url])) or "?") == 1
    assert shape_digest(_shape([secret_url])) not in json.dumps(stored)


_DIGEST = (
    "from evalh.config.shapes import _shape\nfrom evalh.config.shape_cache import shape_digest\n"
    "value = {'vars': {'q': 'x'}, 'threshold': 0.5, 'options': {'judge': {'samples': 2}}, 'metadata': {},"
    " 'assert': [{'type': 'equals', 'value': 'y', 'weight': True}, {'type': 'cost', 'threshold': 1.5}],"
    " 'description': '', 'provider': 'file://p.yaml', 'x': [None, float('inf'), 2.0, -3, 10**20, b'']}\n"
    "print(shape_digest(_shape(value)))\n"
)


def test_digests_are_the_same_in_every_process() -> None:
    digests = set()
    for seed in ("0", "1", "12345"):
        environment = {**os.environ, "PYTHONHASHSEED": seed}
        command = [sys.executable, "-c", _DIGEST]
        digests.add(
            subprocess.run(command, capture_output=True, text=True, check=True, env=environment).stdout
        )
    assert len(digests) == 1 and len(digests.pop().strip()) == 32


def test_a_digest_tells_apart_shapes_python_finds_equal() -> None:
    assert shape_digest(_shape({"weight": True})) != shape_digest(_shape({"weight": 1}))
    assert shape_digest(_shape({"threshold": 2.0})) != shape_digest(_shape({"threshold": 2}))
    assert shape_digest(_shape({"a": ["x", "y"]})) != shape_digest(_shape({"a": ["x"]}))
    assert shape_digest(_shape({"assert": [{"type": "contains"}]})) != shape_digest(
        _shape({"assert": [{"type": "icontains"}]})
    )


# Values the schema may tell apart: each test is every combination of one key path and one value
_PATHS: list[tuple[str, ...]] = [
    ("threshold",),
    ("options", "judge", "samples"),
    ("options", "judge", "aggregate"),
    ("options", "provider"),
    ("assertScoringFunction",),
    ("description",),
    ("assert", "0", "weight"),
    ("assert", "0", "threshold"),
    ("assert", "0", "value"),
    ("assert", "0", "type"),
    ("assert", "0", "metric"),
]
_VALUES: list[Any] = [0, 1, 2, 2.0, 0.5, 1.5, -1, 1000, 10**20, True, None, "", " ", "x", "mean", "min"]
_VALUES += ["file://a.py", "contains", "cost", [], ["x"], {}, {"id": "echo"}, float("nan")]


def _with(path: tuple[str, ...], value: Any) -> dict[str, Any]:
    test: dict[str, Any] = {"vars": {"a": "x"}, "assert": [{"type": "contains", "value": "x"}]}
    node: Any = test
    for part in path[:-1]:
        node = node[int(part)] if part.isdigit() else node.setdefault(part, {})
    node[path[-1]] = value
    return test


def test_same_shape_same_verdict_on_varied_tests() -> None:
    # The rule every cached verdict rests on, checked against jsonschema itself
    checker = defs_checker("test")
    verdicts: dict[Any, tuple[bool, dict[str, Any]]] = {}
    for path in _PATHS:
        for value in _VALUES:
            test = _with(path, value)
            valid = not schema_problems(test, schema.test_validator())
            key = _shape(test, None, checker._exact)
            seen = verdicts.setdefault(key, (valid, test))
            assert seen[0] == valid, (seen[1], test)


def test_same_shape_same_verdict_on_varied_configs() -> None:
    schema_checker_keys = defs_checker("test")._exact
    verdicts: dict[Any, tuple[bool, dict[str, Any]]] = {}
    for key_name in ("maxConcurrency", "repeat", "delay", "timeoutMs", "repeatPassRate", "cache"):
        for value in _VALUES:
            config = {"prompts": ["x"], "providers": ["echo"], "evaluateOptions": {key_name: value}}
            valid = not schema_problems(config, config_validator())
            key = _shape(config, None, schema_checker_keys)
            seen = verdicts.setdefault(key, (valid, config))
            assert seen[0] == valid, (seen[1], config)


def test_a_mapping_or_list_item_is_shaped_as_the_item_alone() -> None:
    # _mapping_shape and the list branch shape text and whole numbers inline: each must give what the
    # general path (_shape of the item itself) gives, under an exact key, an opaque one and a plain one
    exact = defs_checker("test")._exact
    safe = 2**53 - 1
    items = [
        *_VALUES,
        safe,
        -safe,
        safe + 1,
        -safe - 1,
        -0,
        False,
        "f",
        "file:/",
        "\u3000",
        "\tx",
        "fx",
        "{{a}}",
    ]
    for item in items:
        for name in ("type", "method", "vars", "value", "threshold", 3, None):
            if name is not None:
                assert _shape({name: item}, None, exact) == frozenset({(name, _shape(item, name, exact))})
        assert _shape([item, [item]], None, exact) == (
            _shape(item, None, exact),
            (_shape(item, None, exact),),
        )


def test_cache_clear_deletes_the_shapes(tmp_path: Path) -> None:
    assert _validate(_config(tmp_path))[0] == 0
    shapes = tmp_path / "evalh-cache" / CACHE_FILE
    assert shapes.is_file()
    cleared = CliRunner().invoke(app, ["cache", "clear"])
    assert cleared.exit_code == 0 and "Deleted the schema shapes known valid" in cleared.output
    assert not shapes.exists()
