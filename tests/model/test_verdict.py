"""The whole run's verdict and pass rate come from one place (evalh.model.verdict): ``evalh run``'s and
``evalh merge``'s exit codes, evalh.RunResult.ok and every pass rate shown agree on the same runs."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from typer.testing import CliRunner

import evalh
from evalh.cli.app import app
from evalh.model.verdict import pass_rate, run_passed

# three rows pass, one fails: a pass rate of 75%
CONFIG = {
    "tests": [
        *({"output": "yes", "assert": [{"type": "equals", "value": "yes"}]} for _ in range(3)),
        {"output": "no", "assert": [{"type": "equals", "value": "yes"}]},
    ]
}


@pytest.fixture(scope="module")
def three_of_four() -> evalh.RunResult:
    return evalh.evaluate(CONFIG)


def test_pass_rate_counts_errors_against_and_is_full_without_rows() -> None:
    assert (pass_rate(3, 4), pass_rate(0, 0), pass_rate(0, 2)) == (75.0, 100.0, 0.0)


def test_the_run_record_and_the_api_share_the_verdict(three_of_four: evalh.RunResult) -> None:
    run = three_of_four.run
    assert run.pass_rate == three_of_four.pass_rate == 75.0
    assert three_of_four.ok is run_passed(run) is False
    assert (run_passed(run, fail_under=75), run_passed(run, fail_under=75.5)) == (True, False)
    assert (run_passed(run, regressed=False), run_passed(run, regressed=True)) == (True, False)
    stopped = replace(run, interrupted=True)  # rows are missing: no threshold makes it pass
    assert not run_passed(stopped, fail_under=0) and not run_passed(stopped, regressed=False)


@pytest.mark.parametrize(
    ("flags", "code"), [([], 1), (["--fail-under", "75"], 0), (["--fail-under", "76"], 1)]
)
def test_run_and_merge_exit_with_the_verdict(tmp_path: Path, flags: list[str], code: int) -> None:
    config = tmp_path / "c.yaml"
    config.write_text(json.dumps(CONFIG), encoding="utf-8")
    report = tmp_path / "r.json"
    ran = CliRunner().invoke(
        app, ["run", str(config), "-o", str(report), "--shard", "1/1", "--no-write", "--no-table", *flags]
    )
    assert ran.exit_code == code, ran.output
    merged = CliRunner().invoke(app, ["merge", str(report), "--no-table", *flags])
    assert merged.exit_code == code, merged.output
