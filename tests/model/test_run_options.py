"""One run-options object (evalh.model.RunOptions): each default written once, every face filling it.

The config's ``evaluateOptions``, ``evalh run``'s flags, :func:`evalh.evaluate`'s keywords and the schema
editors read all describe the same options; these tests hold them to the fields of RunOptions, so a
default or a name written a second time somewhere fails here."""

from __future__ import annotations

import typing
from dataclasses import fields
from pathlib import Path

import pytest
from typer.main import get_command

import evalh
from evalh.api import _FIELD_OF_KEYWORD, Options
from evalh.cli.app import app
from evalh.common.limits import RUN_OPTION_BOUNDS
from evalh.config.load import load_suite_data
from evalh.config.schema import load_schema
from evalh.model import RunOptions

# evaluateOptions keys the loader reads before any run option exists (which files a config may read)
_LOADER_ONLY_KEYS = {"allowFileOutsideConfigDir"}
_DEFAULTS = RunOptions()
_CONFIG_KEYS = {item.metadata["config_key"]: item.name for item in fields(RunOptions) if item.metadata}


def _run_params() -> dict[str, typing.Any]:
    command = get_command(app).commands["run"]  # type: ignore[attr-defined]
    return {param.name: param for param in command.params}


def test_every_evaluate_keyword_fills_a_run_option_field() -> None:
    names = {item.name for item in fields(RunOptions)}
    keywords = set(typing.get_type_hints(Options))
    assert {_FIELD_OF_KEYWORD.get(keyword, keyword) for keyword in keywords} <= names
    assert set(_FIELD_OF_KEYWORD) <= keywords  # no stale renaming


def test_the_schema_states_the_defaults_and_bounds_of_run_options() -> None:
    schema = load_schema("evalh.schema.json")["properties"]["evaluateOptions"]["properties"]
    assert set(schema) == set(_CONFIG_KEYS) | _LOADER_ONLY_KEYS
    for key, name in _CONFIG_KEYS.items():
        assert schema[key]["default"] == getattr(_DEFAULTS, name), key
        bound = RUN_OPTION_BOUNDS.get(name)
        if bound is not None:
            assert (schema[key]["minimum"], schema[key]["maximum"]) == (bound.low, bound.high), key


def test_a_config_without_evaluate_options_runs_with_the_defaults() -> None:
    suite = load_suite_data({"tests": [{"output": "x"}]}, base_dir=Path.cwd())
    assert suite.evaluate_options == _DEFAULTS


def test_every_evaluate_options_key_reaches_its_field() -> None:
    chosen = {
        "maxConcurrency": 7,
        "repeat": 3,
        "repeatPassRate": 0.5,
        "cache": False,
        "timeoutMs": 250,
        "strict": True,
        "delay": 5,
    }
    assert set(chosen) == set(_CONFIG_KEYS)
    suite = load_suite_data({"tests": [{"output": "x"}], "evaluateOptions": chosen}, base_dir=Path.cwd())
    assert {key: getattr(suite.evaluate_options, name) for key, name in _CONFIG_KEYS.items()} == chosen


def test_run_flags_that_evaluate_options_also_sets_default_to_not_given() -> None:
    """A flag's own default would hide the config's value (and be the default written twice)."""
    params = _run_params()
    for flag in ("max_concurrency", "repeat", "delay"):
        assert params[flag].default is None, flag
    assert f"[{_DEFAULTS.max_concurrency}]" in params["max_concurrency"].help


@pytest.mark.parametrize(
    ("face", "config", "expected"),
    [
        ({}, {"repeat": 3, "maxConcurrency": 2}, {"repeat": 3, "max_concurrency": 2}),
        ({"repeat": 1}, {"repeat": 3}, {"repeat": 1}),  # a flag given wins, even at the default value
        ({"max_concurrency": 8}, {"delay": 10}, {"max_concurrency": 1, "delay_ms": 10}),
        ({"cache": True}, {"cache": False}, {"cache": False}),  # --no-cache only ever turns it off
        ({"cache": False}, {}, {"cache": False}),
    ],
)
def test_flags_win_over_evaluate_options_over_defaults(
    face: dict[str, typing.Any], config: dict[str, typing.Any], expected: dict[str, typing.Any]
) -> None:
    used = RunOptions.given_as(**face).over(RunOptions.from_evaluate_options(config))
    assert {name: getattr(used, name) for name in expected} == expected


def test_evaluate_keyword_overrides_the_configs_repeat() -> None:
    config = {"tests": [{"output": "x", "assert": [{"type": "equals", "value": "x"}]}]}
    assert len(evalh.evaluate({**config, "evaluateOptions": {"repeat": 3}}).rows) == 3
    assert len(evalh.evaluate({**config, "evaluateOptions": {"repeat": 3}}, repeat=1).rows) == 1
