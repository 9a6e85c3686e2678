"""--baseline latest is the latest run of the same config (its path and description): two configs
sharing one run store never compare with each other's runs by accident. Another config's run is warned
about; --fail-on regressions refuses one that `latest` only guessed (exit 2, before the run)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from evalh.store.database import store_path
from tests.store.helpers import evalh, report, write_config


def _newest_id() -> str:
    return str(json.loads(evalh("runs", "list", "--json", "-n", "1").stdout)[0]["id"])


def test_latest_is_the_latest_run_of_this_config(tmp_path: Path) -> None:
    config_a = write_config(tmp_path, {"q": "yes"}, name="a.yaml")
    config_b = write_config(tmp_path, {"q": "no"}, name="b.yaml")  # same tests, other answers
    assert evalh("run", config_a, "--no-table").exit_code == 0
    run_a = _newest_id()
    # B has no run of its own: latest would be A's, and the gate would rest on another config's tests
    refused = evalh("run", config_b, "--no-table", "--baseline", "latest", "--fail-on", "regressions")
    assert refused.exit_code == 2, refused.output
    assert "latest found no stored run of this config" in refused.stderr and run_a in refused.stderr
    assert "Name the baseline explicitly" in refused.stderr and "Traceback" not in refused.stderr
    assert "Tests" not in refused.stdout and _newest_id() == run_a  # refused before the run
    # without the gate it compares, and warns that the baseline is another config's run
    warned = evalh("run", config_b, "--no-table", "--baseline", "latest")
    assert warned.exit_code == 1  # B's own failure
    assert "evalh: warning: --baseline: comparing with run " + run_a in warned.stderr
    assert "a run of another config" in warned.stderr and str(config_a.resolve()) in warned.stderr
    run_b = _newest_id()
    assert evalh("run", config_a, "--no-table").exit_code == 0  # the newest run is A's again
    own = evalh("run", config_b, "--no-table", "--baseline", "latest", "--fail-on", "regressions")
    assert own.exit_code == 0, own.output  # B's known failure is no regression against B's own run
    assert f"with the baseline {run_b}" in own.stdout and "another config" not in own.stderr
    assert "Unchanged: 1" in own.stdout


def test_an_explicit_baseline_of_another_config_is_taken_with_a_warning(tmp_path: Path) -> None:
    config_a = write_config(tmp_path, {"q": "yes"}, name="a.yaml")
    config_b = write_config(tmp_path, {"q": "yes"}, name="b.yaml")
    evalh("run", config_a, "--no-table")
    run_a = _newest_id()
    named = evalh("run", config_b, "--no-table", "--baseline", run_a, "--fail-on", "regressions")
    assert named.exit_code == 0, named.output
    assert f"with the baseline {run_a}" in named.stdout and "a run of another config" in named.stderr
    evalh("run", config_a, "--no-table", "--no-write", "-o", tmp_path / "a.json")
    from_file = evalh(
        "run", config_b, "--no-table", "--baseline", tmp_path / "a.json", "--fail-on", "regressions"
    )
    assert from_file.exit_code == 0 and "warning" not in from_file.stderr  # a report file is taken as named
    assert report(tmp_path / "a.json")["evalId"] in from_file.stdout


def test_a_description_makes_another_config(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"q": "yes"})
    evalh("run", config, "--no-table", "--description", "nightly")
    nightly = _newest_id()
    evalh("run", config, "--no-table")
    plain = _newest_id()
    again = evalh(
        "run", config, "--no-table", "--no-write", "--description", "nightly", "--baseline", "latest"
    )
    assert f"with the baseline {nightly}" in again.stdout and "warning" not in again.stderr
    # the run before this config's latest is the nightly one: another config's, refused by the gate
    back = evalh("run", config, "--no-table", "--baseline", "latest~1", "--fail-on", "regressions")
    assert back.exit_code == 2 and "latest~1 found no stored run of this config" in back.stderr
    latest = evalh("run", config, "--no-table", "--baseline", "latest")
    assert f"with the baseline {plain}" in latest.stdout


def test_latest_skips_a_run_that_did_not_finish_and_an_unfinished_baseline_is_warned_about(
    tmp_path: Path,
) -> None:
    config = write_config(tmp_path, {"q": "yes", "known failure": "no"})
    assert evalh("run", config, "--no-table").exit_code == 1
    finished = _newest_id()
    assert evalh("run", config, "--no-table").exit_code == 1
    stopped = _newest_id()
    with sqlite3.connect(store_path()) as db:  # as a Ctrl-C leaves it (its rows may be missing)
        db.execute("UPDATE runs SET state = 'interrupted' WHERE id = ?", (stopped,))
    gated = evalh("run", config, "--no-table", "--baseline", "latest", "--fail-on", "regressions")
    assert gated.exit_code == 0, gated.output
    assert f"with the baseline {finished}" in gated.stdout and "unfinished" not in gated.stderr
    named = evalh("run", config, "--no-table", "--baseline", stopped)
    assert f"the baseline run {stopped} is interrupted" in " ".join(named.stderr.split())
