"""``evalh diff`` of runs with ratings: a row's verdict is its rating's, marked ``rated`` in the console and
the JSON comparison (with who rated it and why), and a comparison without ratings is written as before."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.store.helpers import evalh, write_config


def _two_runs(tmp_path: Path) -> dict[str, str]:
    """Two runs of one suite ("one?" passes, "two?" fails in both); the latest run's row ids."""
    config = write_config(tmp_path, {"one?": "yes", "two?": "no"})
    for _ in range(2):
        assert evalh("run", config, "--no-table").exit_code == 1
    shown = json.loads(evalh("runs", "show", "latest", "--json").output)
    return {row["description"]: row["id"] for row in shown["results"]["results"]}


def test_a_rated_row_is_marked_in_the_console_and_json_diff(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ids = _two_runs(tmp_path)
    plain = evalh("diff", "latest~1", "latest", "--json")
    assert plain.exit_code == 0 and '"rated"' not in plain.output  # as before ratings
    monkeypatch.setenv("EVALH_REVIEWER", "ana")
    evalh("runs", "rate", "latest", ids["two?"], "--pass", "--score", "0.9")
    evalh("runs", "rate", "latest", ids["one?"], "--fail", "--comment", "[red]rude[/]")
    shown = evalh("diff", "latest~1", "latest")
    assert shown.exit_code == 1, shown.output  # the rated failure is a regression
    (fixed,) = [line for line in shown.output.splitlines() if "two?" in line]
    (regressed,) = [line for line in shown.output.splitlines() if "one?" in line]
    assert fixed.endswith("FAIL 0.00 -> PASS 0.90 (rated) (+0.90)")
    assert "PASS 1.00 -> FAIL 0.00 (rated) (-1.00): rated by ana: [red]rude[/]" in regressed
    comparison = json.loads(evalh("diff", "latest~1", "latest", "--json").output)
    (fix,) = comparison["fixes"]
    (regression,) = comparison["regressions"]
    assert fix["after"] == {"status": "pass", "score": 0.9, "reason": "", "rated": True}
    assert "rated" not in fix["before"]
    assert regression["after"]["reason"] == "rated by ana: [red]rude[/]" and regression["after"]["rated"]
