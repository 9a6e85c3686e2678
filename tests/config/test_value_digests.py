"""Digests of the exact values found valid (config/shape_cache.py ``values``): a warm load of unchanged
tests computes no shape, and a value never passes by digest unless that very value passed the schema."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

from evalh.config import schema, shape_cache
from evalh.config.schema import schema_problems
from evalh.config.shape_cache import CACHE_FILE, KnownShapes, value_digest
from evalh.config.shapes import ShapeCachedValidator, exact_json
from evalh.secrets import clear_registry, register

from .test_shape_cache import _PATHS, _VALUES, _with

_TESTS = "".join(
    f"  - vars: {{answer: 'answer {n}'}}\n    assert:\n      - {{type: contains, value: 'w{n}'}}\n"
    for n in range(6)
)
_CONFIG = "prompts: ['{{answer}}']\nproviders: [echo]\ntests:\n" + _TESTS
_LOAD = (
    "import sys\nfrom pathlib import Path\nfrom evalh.config.load import load_suite\n"
    "suite = load_suite(Path(sys.argv[1]))\nprint(len(suite.tests), 'jsonschema' in sys.modules)\n"
)


def _load(config: Path, cache: Path) -> str:
    environment = {**os.environ, "EVALH_CACHE_DIR": str(cache)}
    command = [sys.executable, "-c", _LOAD, str(config)]
    return subprocess.run(command, capture_output=True, text=True, check=True, env=environment).stdout.strip()


def test_the_values_alone_let_a_warm_load_skip_jsonschema(tmp_path: Path) -> None:
    config, cache = tmp_path / "evalh.yaml", tmp_path / "cache"
    config.write_text(_CONFIG, encoding="utf-8")
    assert _load(config, cache) == "6 True"
    stored = json.loads((cache / CACHE_FILE).read_text(encoding="utf-8"))
    assert len(stored["values"]["defs:test"]) == 6 * 32
    # without the tests' shapes, only the values' digests can tell the tests are known valid
    stored["shapes"].pop("defs:test")
    (cache / CACHE_FILE).write_text(json.dumps(stored), encoding="utf-8")
    assert _load(config, cache) == "6 False"


def test_the_tests_of_a_tests_file_are_known_by_their_values_too(tmp_path: Path) -> None:
    config, cache = tmp_path / "evalh.yaml", tmp_path / "cache"
    (tmp_path / "tests.yaml").write_text(
        _TESTS.replace("  - ", "- ").replace("\n    ", "\n  "), encoding="utf-8"
    )
    config.write_text(
        "prompts: ['{{answer}}']\nproviders: [echo]\ntests: file://tests.yaml\n", encoding="utf-8"
    )
    assert _load(config, cache) == "6 True"
    stored = json.loads((cache / CACHE_FILE).read_text(encoding="utf-8"))
    stored["shapes"].pop("defs:test")
    (cache / CACHE_FILE).write_text(json.dumps(stored), encoding="utf-8")
    assert _load(config, cache) == "6 False"


def test_a_changed_test_is_validated_again(tmp_path: Path) -> None:
    config, cache = tmp_path / "evalh.yaml", tmp_path / "cache"
    config.write_text(_CONFIG, encoding="utf-8")
    _load(config, cache)
    stored = json.loads((cache / CACHE_FILE).read_text(encoding="utf-8"))
    stored["shapes"].pop("defs:test")
    (cache / CACHE_FILE).write_text(json.dumps(stored), encoding="utf-8")
    config.write_text(_CONFIG.replace("value: 'w3'", "value: 'w3', weight: 2"), encoding="utf-8")
    assert _load(config, cache) == "6 True"


def _store(tmp_path: Path) -> KnownShapes:
    return KnownShapes(tmp_path / CACHE_FILE, key="k")


def test_a_value_passes_by_digest_only_when_that_very_value_passed(tmp_path: Path) -> None:
    # Every varied test (one key path, one value) is validated cold, its valid values kept; then a new
    # validator over the saved file must give jsonschema's own verdict on each of them
    variants = [_with(path, value) for path in _PATHS for value in _VALUES]
    variants += [{**variant, "assert": tuple(variant["assert"])} for variant in variants[:20]]
    cold = _store(tmp_path)
    for variant in variants:
        encoded = exact_json(variant)
        if encoded is not None and not schema_problems(variant, schema.test_validator()):
            cold.learn_value("defs:test", value_digest(encoded), encoded, variant)
    cold.save()
    warm = _store(tmp_path)
    fresh = ShapeCachedValidator("defs:test", schema.test_validator, {}, schema.load_schema())
    for variant in variants:
        expected = [problem.message for problem in schema_problems(variant, schema.test_validator())]
        got = [problem.message for problem in fresh._problems_by_value(variant, warm)]
        assert bool(got) == bool(expected), variant
        encoded = exact_json(variant)
        if encoded is not None and warm.knows_value("defs:test", value_digest(encoded)):
            assert not expected, variant


@pytest.mark.parametrize(
    ("one", "other"),
    [(True, 1), (2.0, 2), (0.0, -0.0), ("1", 1), (None, ""), ([1], [1, 1]), ({"a": 1}, {"a": "1"})],
)
def test_values_python_finds_equal_or_close_have_different_digests(one: Any, other: Any) -> None:
    assert exact_json({"threshold": one}) != exact_json({"threshold": other})


@pytest.mark.parametrize(
    "value",
    [math.nan, math.inf, -math.inf, (1, 2), 10**20, {1: "x"}, "\ud800", uuid.UUID(int=1), b"x", {"x"}],
)
def test_values_json_would_blur_or_cannot_write_have_no_digest(value: Any) -> None:
    # NaN and the infinities are written as null, a tuple as a list, a UUID as text: the schema may
    # tell them apart from what they read back as, so they are shaped and validated as before
    assert exact_json({"vars": {}, "threshold": value}) is None


def test_a_value_with_a_url_or_a_registered_secret_is_never_kept(tmp_path: Path) -> None:
    clear_registry()
    register("sk-planted-secret-123")
    try:
        store = _store(tmp_path)
        for test in (
            {"vars": {"a": "x"}, "metadata": {"k": "sk-planted-secret-123"}},
            {"vars": {"a": "https://user:pw@example.com/"}},
            {"vars": {"a": "plain"}},
        ):
            encoded = exact_json(test)
            assert encoded is not None
            store.learn_value("defs:test", value_digest(encoded), encoded, test)
        store.save()
    finally:
        clear_registry()
    stored = json.loads((tmp_path / CACHE_FILE).read_text(encoding="utf-8"))
    plain = exact_json({"vars": {"a": "plain"}})
    assert plain is not None and stored["values"] == {"defs:test": value_digest(plain)}


def test_a_tests_file_test_holding_a_secret_named_var_keeps_no_digest_a_dictionary_could_find(
    tmp_path: Path,
) -> None:
    # a tests file is checked before anything registers its secrets: the digest of a test with
    # `password: hunter2` gave the password back to a four-word dictionary (the review)
    config, cache = tmp_path / "evalh.yaml", tmp_path / "cache"
    tests = [{"vars": {"answer": "a", "password": "hunter2"}}, {"vars": {"answer": "b"}}]
    (tmp_path / "tests.yaml").write_text(json.dumps(tests), encoding="utf-8")
    config.write_text(
        "prompts: ['{{answer}}']\nproviders: [echo]\ntests: file://tests.yaml\n", encoding="utf-8"
    )
    assert _load(config, cache) == "2 True"
    kept = json.loads((cache / CACHE_FILE).read_text(encoding="utf-8"))["values"]["defs:test"]
    secret = exact_json(tests[0])
    assert secret is not None and value_digest(secret) not in kept
    plain = exact_json(tests[1])
    assert plain is not None and value_digest(plain) in kept


def test_past_the_cap_only_the_last_loads_values_are_kept_and_the_shapes_stay(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(shape_cache, "MAX_VALUES", 3)
    first = _store(tmp_path)
    first.learn("defs:test", "a shape")
    for n in range(3):
        value = f'{{"n":{n}}}'.encode()
        first.learn_value("defs:test", value_digest(value), value, {"n": n})
    first.save()
    second = _store(tmp_path)
    assert second.knows_value("defs:test", value_digest(b'{"n":0}'))  # met again in this load
    second.learn_value("defs:test", value_digest(b'{"n":9}'), b'{"n":9}', {"n": 9})
    second.save()
    third = _store(tmp_path)
    kept = {n for n in (0, 1, 2, 9) if third.knows_value("defs:test", value_digest(f'{{"n":{n}}}'.encode()))}
    assert kept == {0, 9} and third.knows("defs:test", "a shape")


def test_a_file_of_an_older_evalh_without_values_still_serves_its_shapes(tmp_path: Path) -> None:
    first = _store(tmp_path)
    first.learn("defs:test", "a shape")
    first.save()
    stored = json.loads((tmp_path / CACHE_FILE).read_text(encoding="utf-8"))
    stored.pop("values")
    stored["values_"] = {"defs:test": "not a digest"}
    (tmp_path / CACHE_FILE).write_text(json.dumps(stored), encoding="utf-8")
    assert _store(tmp_path).knows("defs:test", "a shape")
