"""One redaction walk of a loaded config (secrets.walked_config): what it answers for the config and its
tests (holds_nothing_to_redact, RedactedConfig.of) is what a walk of each would, at every registry
state; a load registers the config's secrets and redacts each test at most once (none when one walk
finds nothing to register nor redact; three times before: the parse cache, the digests and the report's
copy), and what the parse cache keeps is still never a config holding a secret."""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from evalh import secrets
from evalh.config.load import load_suite
from evalh.config.parse_cache import FOLDER, MIN_CHARS
from evalh.secrets import (
    RedactedConfig,
    clear_registry,
    holds_nothing_to_redact,
    redact_config,
    register,
    walked_config,
)
from tests.config.test_parse_cache import SECRET_HOLDING_EXTRAS

_PLANTED = "planted-secret-4711"
_KEYS = ["answer", "expected", "apiKey", "password", "env", "note", "max_tokens", "url", "tokenLimit"]
_TEXTS = ["plain", "", "https://example.com/x", "https://user:pw-12345@example.com/", _PLANTED, "a b c d e f"]


def _random_value(rng: random.Random, depth: int) -> Any:
    pick = rng.random()
    if depth > 2 or pick < 0.45:
        return rng.choice([*_TEXTS, 1, 2.5, True, None, f"text with {_PLANTED} inside"])
    if pick < 0.75:
        return {rng.choice(_KEYS): _random_value(rng, depth + 1) for _ in range(rng.randint(0, 4))}
    return [_random_value(rng, depth + 1) for _ in range(rng.randint(0, 3))]


def _random_config(rng: random.Random) -> dict[str, Any]:
    tests = []
    for _ in range(rng.randint(0, 8)):
        test: dict[str, Any] = {"vars": {"answer": rng.choice(_TEXTS[:3])}}
        if rng.random() < 0.4:
            test["vars"][rng.choice(_KEYS)] = _random_value(rng, 2)
        if rng.random() < 0.3:
            test["assert"] = [{"type": "contains", "value": rng.choice(_TEXTS)}]
        tests.append(test)
    config: dict[str, Any] = {"prompts": ["{{answer}}"], "providers": ["echo"], "tests": tests}
    if rng.random() < 0.3:
        config[rng.choice(_KEYS)] = _random_value(rng, 1)
    return config


def _walked_alone(value: Any) -> bool:
    redacted = redact_config(value)
    return redacted is value or (type(value) is str and redacted == value)


@pytest.mark.parametrize("seed", range(300))
def test_the_walk_answers_as_a_walk_of_each_at_every_registry_state(seed: int) -> None:
    rng = random.Random(seed)
    clear_registry()
    if rng.random() < 0.5:
        register(_PLANTED)
    config = _random_config(rng)
    outside = _random_value(rng, 0)  # not a part of the config: walked alone
    with walked_config(config):
        for later in (False, True):
            if later:  # a secret registered after the walk: its answers are not reused
                register(f"{rng.choice(['answer', 'vars'])}-late-secret-{seed}", "plain")
            parts = [config, *config["tests"], outside, *[test["vars"] for test in config["tests"]]]
            if later:
                parts.reverse()  # parts asked before the whole config too
            for part in parts:
                assert holds_nothing_to_redact(part) is _walked_alone(part)
            assert RedactedConfig.of(config) == redact_config(config)
    clear_registry()


def _large_config(tests: int, extra: str = "") -> str:
    body = "".join(
        f"  - description: test {n}\n    vars:\n      answer: The robot number {n} came.\n"
        f"    assert:\n      - type: contains\n        value: robot\n      - type: icontains\n"
        f"        value: 'NUMBER {n}'\n"
        for n in range(tests)
    )
    text = f"description: walked\nprompts:\n  - '{{{{answer}}}}'\nproviders:\n  - echo\n{extra}tests:\n{body}"
    assert len(text) >= MIN_CHARS
    return text


def _walks_per_test(monkeypatch: pytest.MonkeyPatch, config: Path, *, report_config: bool) -> Counter[str]:
    """How many times each test of the config was redacted (redact_config called on it) by one load."""
    counts: Counter[str] = Counter()
    walk = secrets.redact_config

    def counted(value: Any) -> Any:
        if type(value) is dict and str(value.get("description", "")).startswith("test "):
            counts[value["description"]] += 1
        return walk(value)

    with monkeypatch.context() as patched:
        patched.setattr(secrets, "redact_config", counted)
        suite = load_suite(config, report_config=report_config)
    assert len(suite.tests) == 800
    return counts


def test_a_load_of_a_config_with_nothing_secret_redacts_no_test(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the walk that found nothing to register answers for the parse cache, the digests and the report's
    # copy (a cold load walked each test once more to redact it, three times before that)
    clear_registry()
    config = tmp_path / "evalh.yaml"
    config.write_text(_large_config(800), encoding="utf-8")
    assert _walks_per_test(monkeypatch, config, report_config=True) == Counter()
    assert len(list((tmp_path / "evalh-cache" / FOLDER).iterdir())) == 1
    assert _walks_per_test(monkeypatch, config, report_config=True) == Counter()
    assert _walks_per_test(monkeypatch, config, report_config=False) == Counter()


def test_a_cold_load_of_a_config_holding_a_secret_redacts_each_test_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clear_registry()
    config = tmp_path / "evalh.yaml"
    config.write_text(_large_config(800, "defaultTest:\n  vars:\n    password: hunter2-planted\n"))
    try:
        cold = _walks_per_test(monkeypatch, config, report_config=True)
    finally:
        clear_registry()
    assert len(cold) == 800 and set(cold.values()) == {1}  # 3 walks before: parse cache, digests, copy


@pytest.mark.parametrize("seed", range(300))
def test_registering_with_the_walk_is_register_config_then_the_walk(seed: int) -> None:
    # walked_config(register=True) skips register_config's walk and redact_config's for a config its
    # one walk finds clean: the registry and every answer must be those of the two walks
    rng = random.Random(seed)
    config = _random_config(rng) if rng.random() < 0.5 else _clean_config(rng)
    planted = rng.random() < 0.5
    clear_registry()
    if planted:
        register(_PLANTED)
    secrets.register_config(config)
    expected_forms = secrets.registered()
    expected = [_walked_alone(part) for part in [config, *config["tests"]]]
    expected_copy = redact_config(config)
    clear_registry()
    if planted:
        register(_PLANTED)
    with walked_config(config, register=True):
        assert secrets.registered() == expected_forms
        assert [holds_nothing_to_redact(part) for part in [config, *config["tests"]]] == expected
        assert RedactedConfig.of(config) == expected_copy
    clear_registry()


def _clean_config(rng: random.Random) -> dict[str, Any]:
    """A config with nothing to register nor redact, but for the few values a draw may plant."""
    texts = ["plain", "", "a b c", "https:/not-a-url", "text with a :// inside", _PLANTED, 3, None, 0.5]
    tests = [
        {"vars": {"answer": rng.choice(texts), "n": [rng.choice(texts)]}, "assert": [{"type": "equals"}]}
        for _ in range(rng.randint(0, 6))
    ]
    config: dict[str, Any] = {"prompts": ["{{answer}}"], "providers": ["echo"], "tests": tests}
    odd = rng.choice([None, ("env", {"A": "b"}), ("env", "text"), (1, "one"), ("apiKey", ""), ("x", (1,))])
    if odd is not None and rng.random() < 0.3:
        config[odd[0]] = odd[1]  # type: ignore[index]
    return config


def test_a_clean_config_is_found_clean_in_one_walk() -> None:
    clear_registry()
    config = {"prompts": ["{{answer}}"], "tests": [{"vars": {"answer": "plain", "n": 1}}], "env": "text"}
    assert secrets._nothing_to_register_or_redact(config)
    for unsure in ({"env": {}}, {"apiKey": ""}, {1: "one"}, {"x": (1,)}, ["https://h/"], {"a": "x://y"}):
        assert not secrets._nothing_to_register_or_redact(unsure)


@pytest.mark.parametrize(
    "extra",
    [
        *SECRET_HOLDING_EXTRAS,
        # rendered at load (the config as read is not the config walked): walked alone
        "defaultTest:\n  options:\n    provider:\n      id: echo\n      config:\n"
        "        apiBaseUrl: 'https://user:pw-{{ env.HOME }}@example.com'\n",
    ],
)
def test_a_loaded_config_holding_a_secret_is_never_kept(tmp_path: Path, extra: str) -> None:
    config = tmp_path / "evalh.yaml"
    config.write_text(_large_config(800, extra), encoding="utf-8")
    suite = load_suite(config)
    assert len(suite.tests) == 800
    folder = tmp_path / "evalh-cache" / FOLDER
    assert not folder.is_dir() or list(folder.iterdir()) == []


def test_a_loaded_config_rendered_at_load_with_nothing_secret_is_kept(tmp_path: Path) -> None:
    extra = "defaultTest:\n  metadata:\n    home: '{{ env.HOME }}'\n"
    config = tmp_path / "evalh.yaml"
    config.write_text(_large_config(800, extra), encoding="utf-8")
    first = load_suite(config)
    assert len(list((tmp_path / "evalh-cache" / FOLDER).iterdir())) == 1
    again = load_suite(config)  # read back from the cache: the same suite
    assert again.tests == first.tests and again.raw_config == first.raw_config


def test_a_config_holding_an_environment_key_is_not_kept_when_loaded_outside_a_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the pytest plugin and calibrate load before any run context exists: the environment's keys must be
    # known by then, or a key pasted into the config is kept in the cache folder
    monkeypatch.setenv("APP_SERVICE_TOKEN", "PLANTED-literal-0123456789")
    config = tmp_path / "evalh.yaml"
    config.write_text(_large_config(800, "defaultTest:\n  vars:\n    note: PLANTED-literal-0123456789\n"))
    try:
        assert len(load_suite(config).tests) == 800
    finally:
        clear_registry()
    folder = tmp_path / "evalh-cache" / FOLDER
    assert not folder.is_dir() or list(folder.iterdir()) == []
