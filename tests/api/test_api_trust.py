"""What a Python user sees of a run and of a mistake: a short repr, negated types as written, clear
errors for a bare type name and for options outside the command line's bounds (issue 23)."""

from __future__ import annotations

import dataclasses
import json
import textwrap
from pathlib import Path
from typing import Any

import pytest

import evalh
from evalh.common.limits import MAX_CONCURRENCY, MAX_REPEAT
from evalh.config.load import load_suite
from evalh.errors import ConfigError
from evalh.reports.writers import PRETTY_JSON_MAX_ROWS

# 50 rows with long outputs: the generated repr printed every one of them (and the suite).
MANY: dict[str, Any] = {
    "tests": [
        {"output": f"row {i} " + "lorem ipsum " * 40, "assert": [{"type": "contains", "value": "row 1"}]}
        for i in range(50)
    ]
}


def test_a_run_result_repr_is_one_short_line_of_counts() -> None:
    result = evalh.evaluate(MANY, write=True)
    failed = sum(1 for row in result.rows if not row.passed)
    shown = repr(result)
    assert len(shown) < 200 and "\n" not in shown
    assert f"eval_id={result.eval_id!r}" in shown
    assert f"rows=50, pass={50 - failed}, fail={failed}, error=0" in shown
    assert f"pass_rate={result.pass_rate:.1f}%" in shown
    inner = repr(result.run)  # the model's RunRecord, which result.run is
    assert len(inner) < 200 and f"fail={failed}" in inner and "lorem" not in inner


def test_a_negated_type_is_named_as_written_in_check_messages_and_spec_type() -> None:
    with pytest.raises(evalh.CheckFailed) as caught:
        evalh.check("Hello X", [{"type": "not-icontains", "value": "x"}])
    text = str(caught.value)
    assert "[FAIL] not-icontains" in text and "[FAIL] icontains" not in text
    spec = caught.value.row.assertions[0].spec
    assert spec.type == "not-icontains" and spec.base_type == "icontains" and spec.negate
    row = evalh.check("Hello", [{"type": "not-icontains", "value": "x"}])  # the verdict is unchanged
    assert row.passed and row.assertions[0].spec.type == "not-icontains"


def test_an_unknown_negated_type_suggests_the_negated_name() -> None:
    with pytest.raises(ConfigError, match=r"unknown assertion type 'not-icontain'.*'not-icontains'"):
        evalh.check("x", [{"type": "not-icontain", "value": "x"}])


@pytest.mark.parametrize("assertions", ["contains", ["contains"]])
def test_a_bare_type_name_says_it_needs_a_value_and_how_to_pass_it(assertions: Any) -> None:
    with pytest.raises(ConfigError) as caught:
        evalh.check("x", assertions)
    text = str(caught.value)
    assert "contains needs a value" in text
    assert 'check(output, [{"type": "contains", "value": ...}])' in text


def test_a_bare_type_name_without_a_value_shows_its_mapping() -> None:
    with pytest.raises(ConfigError, match=r'check\(output, \[\{"type": "is-json"\}\]\)'):
        evalh.check("{}", ["is-json"])


@pytest.mark.parametrize(
    ("option", "value", "bound"),
    [
        ("max_concurrency", -5, f"from 1 to {MAX_CONCURRENCY:,}"),
        ("max_concurrency", 0, f"from 1 to {MAX_CONCURRENCY:,}"),
        ("max_concurrency", MAX_CONCURRENCY + 1, f"from 1 to {MAX_CONCURRENCY:,}"),
        ("max_concurrency", 2.5, f"from 1 to {MAX_CONCURRENCY:,}"),
        ("repeat", 0, f"from 1 to {MAX_REPEAT:,}"),
        ("repeat", MAX_REPEAT + 1, f"from 1 to {MAX_REPEAT:,}"),
        ("repeat", True, f"from 1 to {MAX_REPEAT:,}"),
        ("repeat", "3", f"from 1 to {MAX_REPEAT:,}"),
    ],
)
def test_evaluate_refuses_numbers_outside_the_bounds_of_the_cli_flag(
    tmp_path: Path, option: str, value: Any, bound: str
) -> None:
    report = tmp_path / "r.json"
    with pytest.raises(ConfigError) as caught:
        evalh.evaluate(MANY, outputs=[report], **{option: value})
    assert bound in str(caught.value) and f"evaluate({option}=...)" in str(caught.value)
    assert caught.value.exit_code == 2 and not report.exists()  # refused before the run


def test_evaluate_and_the_cli_share_the_bound(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from evalh.cli.app import app

    config = tmp_path / "c.yaml"
    config.write_text(textwrap.dedent("tests:\n  - output: x\n"), encoding="utf-8")
    top = str(MAX_CONCURRENCY)
    assert CliRunner().invoke(app, ["run", str(config), "-j", top, "--no-write"]).exit_code == 0
    assert evalh.evaluate({"tests": [{"output": "x"}]}, max_concurrency=MAX_CONCURRENCY).ok
    beyond = str(MAX_CONCURRENCY + 1)
    assert CliRunner().invoke(app, ["run", str(config), "-j", beyond, "--no-write"]).exit_code == 2


def test_evaluate_refuses_an_unknown_option_with_a_suggestion() -> None:
    with pytest.raises(ConfigError, match=r"has no option 'max_concurency'\. Did you mean max_concurrency"):
        evalh.evaluate(MANY, max_concurency=3)  # type: ignore[call-arg]


def test_a_suite_built_by_hand_has_its_config_redacted_in_the_json_report(tmp_path: Path) -> None:
    """Only the load's own redacted copy (a RedactedConfig) is echoed without a walk: a Suite whose
    raw_config was written by hand is walked, so a secret-named key never reaches the report."""
    # more rows than a pretty-printed report holds: the compact report echoes the config as the store does
    tests = [{"vars": {"q": f"hi {index}"}} for index in range(PRETTY_JSON_MAX_ROWS + 1)]
    config = {"prompts": ["{{q}}"], "providers": ["echo"], "tests": tests}
    (tmp_path / "c.json").write_text(json.dumps(config), encoding="utf-8")
    suite = load_suite(tmp_path / "c.json")
    by_hand = {**config, "providers": [{"id": "echo", "config": {"apiKey": "sk-by-hand-0123456789"}}]}
    report = tmp_path / "r.json"
    evalh.evaluate(dataclasses.replace(suite, raw_config=by_hand), outputs=[report])
    text = report.read_text(encoding="utf-8")
    assert "sk-by-hand" not in text
    assert json.loads(text)["config"]["providers"][0]["config"]["apiKey"] == "[REDACTED]"
