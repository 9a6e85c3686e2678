"""A test's ``providers:`` (and defaultTest's) runs it only on the providers an entry names, as promptfoo
0.123's ``isProviderAllowed`` (issue 27): by label or id, ``prefix*``, or ``family`` for ``family:...``;
the other providers make no row. Checked against promptfoo in benchmarks/compat/test-providers-filter."""

from __future__ import annotations

import json
from typing import Any

import pytest
from typer.testing import CliRunner

from evalh.cli.app import app
from evalh.config.load import load_suite
from evalh.errors import ConfigError
from evalh.model import ProviderSpec, TestCase, provider_ref_matches, runs_prompt
from evalh.model.suite import Prompt
from evalh.runner.plan import count_rows
from tests.config.conftest import WriteFiles

_CONFIG = """\
prompts: ["Q: {{q}}"]
providers:
  - {id: echo, label: fast}
  - {id: echo, label: slow-model}
  - {id: "exec:echo answer", label: shell}
defaultTest:
  providers: [fast, shell]
tests:
  - vars: {q: label}
    providers: [fast]
  - vars: {q: id}
    providers: [echo]
  - vars: {q: wildcard}
    providers: ["slow*"]
  - vars: {q: family}
    providers: [exec]
  - vars: {q: default}
  - vars: {q: none}
    providers: []
"""


def _rows(config_text: str, project: WriteFiles) -> list[dict[str, Any]]:
    config = project(config_text)
    report = config.parent / "out.json"
    result = CliRunner().invoke(app, ["run", str(config), "-o", str(report), "--no-table", "--no-cache"])
    assert result.exit_code in (0, 1), result.output
    rows: list[dict[str, Any]] = json.loads(report.read_text(encoding="utf-8"))["results"]["results"]
    return rows


def test_a_test_makes_rows_only_on_the_providers_it_names(project: WriteFiles) -> None:
    rows = _rows(_CONFIG, project)
    made = [(row["testIdx"], row["provider"]["label"]) for row in rows]
    assert made == [
        (0, "fast"),
        (1, "fast"),  # echo: the id of two providers
        (1, "slow-model"),
        (2, "slow-model"),
        (3, "shell"),  # exec names exec:echo answer
        (4, "fast"),  # defaultTest's filter for a test without its own
        (4, "shell"),
    ]  # test 5 (an empty list) runs nowhere


def test_rows_are_counted_with_the_filter(project: WriteFiles) -> None:
    assert count_rows(load_suite(project(_CONFIG))) == 7


def test_an_entry_naming_no_provider_is_a_located_error(project: WriteFiles) -> None:
    config = project("prompts: [x]\nproviders: [echo]\ntests:\n  - providers: [echo, opnai:gpt-4o]\n")
    with pytest.raises(ConfigError) as caught:
        load_suite(config)
    message = str(caught.value)
    assert "evalh.yaml:4:23 tests[0].providers[1]" in message
    assert "names the provider 'opnai:gpt-4o', which the config does not have" in message
    assert "'echo'" in message  # the providers it could name


def test_defaults_entry_naming_no_provider_is_located_in_default_test(project: WriteFiles) -> None:
    config = project("prompts: [x]\nproviders: [echo]\ndefaultTest:\n  providers: [nope]\n")
    with pytest.raises(ConfigError) as caught:
        load_suite(config)
    assert "evalh.yaml:4:15 defaultTest.providers[0]" in str(caught.value)


def test_providers_must_be_a_list_of_names(project: WriteFiles) -> None:
    config = project("prompts: [x]\nproviders: [echo]\ntests:\n  - providers: echo\n")
    with pytest.raises(ConfigError) as caught:
        load_suite(config)
    assert "tests[0].providers: must be a list" in str(caught.value)


@pytest.mark.parametrize(
    ("ref", "matches"),
    [
        ("fast", True),
        ("openai:chat:gpt-4o", True),
        ("openai:*", True),
        ("openai:chat*", True),
        ("openai", True),
        ("openai:chat", True),
        ("open", False),
        ("anthropic:*", False),
        ("fas", False),
    ],
)
def test_provider_refs_match_as_promptfoo_matches_them(ref: str, matches: bool) -> None:
    provider = ProviderSpec(id="openai:chat:gpt-4o", label="fast")
    assert provider_ref_matches(ref, provider) is matches
    test = TestCase(index=0, providers=(ref,))
    assert runs_prompt(test, provider, Prompt(raw="x", label="x")) is matches


def test_a_filter_in_a_config_without_providers_is_a_located_error(project: WriteFiles) -> None:
    # recorded outputs need no provider, but a filter naming one would silently leave the test no row
    config = project("tests:\n  - output: hi\n    providers: [echo]\n")
    with pytest.raises(ConfigError) as caught:
        load_suite(config)
    assert "evalh.yaml:3:17 tests[0].providers[0]" in str(caught.value)
    assert "(none)" in str(caught.value)
