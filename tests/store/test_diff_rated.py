"""``evalh diff`` of runs with ratings: a row's verdict is its rating's, marked ``rated`` in the console and
the JSON comparison (with who rated it and why), and a comparison without ratings is written as before."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.store.helpers import evalh, write_config


def _two_runs(tmp_path: Path, ref: str = "latest") -> dict[str, str]:
    """Two runs of one suite ("one?" passes, "two?" fails in both); run ``ref``'s row ids."""
    config = write_config(tmp_path, {"one?": "yes", "two?": "no"})
    for _ in range(2):
        assert evalh("run", config, "--no-table").exit_code == 1
    return _ids(ref)


def _ids(ref: str) -> dict[str, str]:
    shown = json.loads(evalh("runs", "show", ref, "--json").output)
    return {row["description"]: row["id"] for row in shown["results"]["results"]}


def test_a_rated_row_is_marked_in_the_console_and_json_diff(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ids = _two_runs(tmp_path)
    plain = evalh("diff", "latest~1", "latest", "--json")
    assert plain.exit_code == 0 and '"rated"' not in plain.output  # as before ratings
    monkeypatch.setenv("EVALH_REVIEWER", "ana")
    baseline = _ids("latest~1")  # rated as graded: a rating is compared with a rating
    evalh("runs", "rate", "latest~1", baseline["one?"], "--pass")
    evalh("runs", "rate", "latest~1", baseline["two?"], "--fail")
    evalh("runs", "rate", "latest", ids["two?"], "--pass", "--score", "0.9")
    evalh("runs", "rate", "latest", ids["one?"], "--fail", "--comment", "[red]rude[/]")
    shown = evalh("diff", "latest~1", "latest")
    assert shown.exit_code == 1, shown.output  # the rated failure is a regression
    (fixed,) = [line for line in shown.output.splitlines() if "two?" in line]
    (regressed,) = [line for line in shown.output.splitlines() if "one?" in line]
    assert fixed.endswith("FAIL 0.00 (rated) -> PASS 0.90 (rated) (+0.90)")
    assert "PASS 1.00 (rated) -> FAIL 0.00 (rated) (-1.00): rated by ana: [red]rude[/]" in regressed
    comparison = json.loads(evalh("diff", "latest~1", "latest", "--json").output)
    (fix,) = comparison["fixes"]
    (regression,) = comparison["regressions"]
    assert fix["after"] == {"status": "pass", "score": 0.9, "reason": "", "rated": True}
    assert fix["before"]["rated"] and "ratedIn" not in fix
    assert regression["after"]["reason"] == "rated by ana: [red]rude[/]" and regression["after"]["rated"]


def test_a_row_rated_in_one_run_only_compares_graded_verdicts(tmp_path: Path) -> None:
    """A reviewed baseline against a new, unreviewed run of the same outputs: no change. Every place the
    reviewer disagreed with the grader would otherwise be a change of the new run."""
    baseline = _two_runs(tmp_path, "latest~1")
    evalh("runs", "rate", "latest~1", baseline["one?"], "--fail", "--comment", "too curt")
    evalh("runs", "rate", "latest~1", baseline["two?"], "--pass")
    shown = evalh("diff", "latest~1", "latest")
    assert shown.exit_code == 0, shown.output
    assert "Unchanged: 2" in shown.output and "No new failures since the baseline." in shown.output
    comparison = json.loads(evalh("diff", "latest~1", "latest", "--json").output)
    assert comparison["regressions"] == comparison["fixes"] == [] and comparison["unchanged"] == 2
