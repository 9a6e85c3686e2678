"""``commandLineOptions:`` as promptfoo 0.123 applies it from a config (issue 27): maxConcurrency, repeat,
delay, cache and grader, a flag given winning and evaluateOptions losing; every other key has no effect
and is said so, located (an error with --strict). Checked against promptfoo in
benchmarks/compat/command-line-options (its filterPattern is ignored by promptfoo too)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from evalh.cli.app import app
from evalh.common.notices import warnings_to
from evalh.config.load import load_suite
from evalh.errors import ConfigError
from evalh.model import RunOptions
from tests.config.conftest import WriteFiles

_TESTS = """\
prompts: ["Number {{n}}"]
providers: [echo]
tests:
  - {description: one, vars: {n: 1}, assert: [{type: contains, value: "1"}]}
  - {description: two, vars: {n: 2}, assert: [{type: contains, value: "2"}]}
"""


def test_run_keys_set_the_configs_run_options(project: WriteFiles) -> None:
    config = project(_TESTS + "commandLineOptions: {maxConcurrency: 3, repeat: 2, delay: 5, cache: false}\n")
    options = load_suite(config).evaluate_options
    assert (options.repeat, options.delay_ms, options.cache) == (2, 5, False)
    assert options.max_concurrency == 1  # a delay runs one call at a time, as promptfoo does


def test_command_line_options_win_over_evaluate_options_and_lose_to_flags(project: WriteFiles) -> None:
    config = project(
        _TESTS + "evaluateOptions: {repeat: 4, maxConcurrency: 2}\ncommandLineOptions: {repeat: 3}\n"
    )
    configured = load_suite(config).evaluate_options
    assert (configured.repeat, configured.max_concurrency) == (3, 2)
    assert RunOptions.given_as(repeat=5).over(configured).repeat == 5


def test_repeat_from_command_line_options_runs_each_test_again(project: WriteFiles) -> None:
    config = project(_TESTS + "commandLineOptions: {repeat: 2, filterPattern: one}\n")
    report = config.parent / "out.json"
    result = CliRunner().invoke(app, ["run", str(config), "-o", str(report), "--no-table", "--no-cache"])
    assert result.exit_code == 0, result.output
    rows = json.loads(report.read_text(encoding="utf-8"))["results"]["results"]
    # both tests, twice: filterPattern is not applied (promptfoo ignores it in a config), but said so
    assert sorted(row["testCase"]["description"] for row in rows) == ["one", "one", "two", "two"]
    assert "commandLineOptions.filterPattern: has no effect in evalh" in result.output
    assert "--filter-pattern" in result.output


def test_a_flag_given_wins_over_command_line_options(project: WriteFiles) -> None:
    config = project(_TESTS + "commandLineOptions: {repeat: 3}\n")
    report = config.parent / "out.json"
    args = ["run", str(config), "-o", str(report), "--no-table", "--no-cache", "--repeat", "1"]
    assert CliRunner().invoke(app, args).exit_code == 0
    assert len(json.loads(report.read_text(encoding="utf-8"))["results"]["results"]) == 2


def test_grader_is_the_default_grader(project: WriteFiles) -> None:
    config = project(_TESTS + "commandLineOptions: {grader: echo}\n")
    suite = load_suite(config)
    assert suite.default_provider is not None and suite.default_provider.default is not None
    assert suite.default_provider.default.id == "echo"
    assert load_suite(config, grader="openai:chat:gpt-4o-mini").default_provider.default.id != "echo"  # type: ignore[union-attr]


def test_an_ignored_key_is_an_error_under_strict(project: WriteFiles) -> None:
    config = project(_TESTS + "commandLineOptions:\n  table: false\n")
    with pytest.raises(ConfigError) as caught, warnings_to(None, strict=True):
        load_suite(config)
    assert "evalh.yaml:7:3 commandLineOptions.table: has no effect in evalh" in str(caught.value)


def test_a_bad_value_is_a_located_error(project: WriteFiles) -> None:
    config = project(_TESTS + "commandLineOptions:\n  repeat: 0\n")
    with pytest.raises(ConfigError) as caught:
        load_suite(config)
    assert "evalh.yaml:7:3 commandLineOptions.repeat: must be >= 1 (got 0)" in str(caught.value)
