"""A run whose process is killed (SIGKILL: no handler runs) is found when the store is next opened and
marked incomplete with the rows it stored; a run still recording is left alone and shows its progress.

A real ``evalh run`` process: its fast rows finish, its slow ones hang; the test polls the store (no
timing) until the fast rows are written, then kills the process.
"""

from __future__ import annotations

import fcntl
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from evalh.store import RunSummary, open_store
from evalh.store.liveness import live_dir
from evalh.store.recorder import BATCH_ROWS
from tests.store.helpers import evalh

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals and flock")

FAST, SLOW = 3, 2
WAIT_S = 60  # a generous bound on waiting for the subprocess; never asserted on


def _start_run(tmp_path: Path) -> subprocess.Popen[str]:
    (tmp_path / "slow.py").write_text(
        textwrap.dedent(
            """
            import sys, time
            if sys.argv[1] != "fast":
                time.sleep(600)
            print("done")
            """
        ),
        encoding="utf-8",
    )
    questions = ["fast"] * FAST + ["slow"] * SLOW
    config = {
        "prompts": ["{{q}}"],
        "providers": [f"exec:{sys.executable} slow.py"],
        "defaultTest": {"assert": [{"type": "equals", "value": "done"}]},
        "tests": [{"vars": {"q": q}} for q in questions],
    }
    path = tmp_path / "slow.yaml"
    path.write_text(json.dumps(config), encoding="utf-8")
    return subprocess.Popen(
        [sys.executable, "-m", "evalh", "run", str(path), "--no-table"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )


def _only_run() -> RunSummary:
    with open_store() as store:
        (run,) = store.list_runs()
        return run


def _wait_for_stored_rows(process: subprocess.Popen[str], rows: int) -> RunSummary:
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline and process.poll() is None:
        with open_store() as store:
            runs = store.list_runs()
        if runs and runs[0].rows >= rows:
            return runs[0]
        time.sleep(0.05)
    process.kill()
    raise AssertionError(f"the run never stored {rows} rows: {process.communicate()}")


def test_a_killed_run_is_marked_incomplete_with_the_rows_it_stored(tmp_path: Path) -> None:
    process = _start_run(tmp_path)
    try:
        live = _wait_for_stored_rows(process, FAST)
    finally:
        process.send_signal(signal.SIGKILL)
        process.communicate(timeout=WAIT_S)
    # while it ran, opening the store (as the polling did) left it running, with its progress
    assert (live.state, live.rows, live.passed) == ("running", FAST, FAST)
    run = _only_run()
    assert (run.state, run.rows, run.passed, run.failed, run.errors) == ("incomplete", FAST, FAST, 0, 0)
    assert list(live_dir(Path(os.environ["EVALH_HOME"]) / "runs.sqlite3").iterdir()) == []

    listed = evalh("runs", "list")
    assert f"{FAST}/{FAST} passed (100.0%) [incomplete]" in listed.output, listed.output
    shown = evalh("runs", "show", "latest")
    assert shown.exit_code == 0 and "[incomplete]" in shown.output
    assert [
        line.split()[-1] for line in shown.output.splitlines() if line.startswith(("Tests", "Passed"))
    ] == [
        str(FAST),
        str(FAST),
    ]
    document = json.loads(evalh("runs", "show", "latest", "--json").output)
    assert len(document["results"]["results"]) == FAST
    assert document["results"]["evalh"]["store"]["state"] == "incomplete"


def test_a_run_that_finishes_is_complete_and_leaves_no_lock_file(tmp_path: Path) -> None:
    (tmp_path / "ok.yaml").write_text(
        json.dumps({"prompts": ["{{q}}"], "providers": ["echo"], "tests": [{"vars": {"q": "a"}}]}),
        encoding="utf-8",
    )
    assert evalh("run", str(tmp_path / "ok.yaml"), "--no-table").exit_code == 0
    assert (_only_run().state, _only_run().rows) == ("complete", 1)
    assert list(live_dir(Path(os.environ["EVALH_HOME"]) / "runs.sqlite3").iterdir()) == []


def test_a_run_held_in_this_process_is_live_and_one_given_up_is_settled() -> None:
    with open_store() as store:
        recorder = store.start(
            "eval-live", {"results": {"timestamp": "t"}}, config=None, config_path=None, description=None
        )
        for _ in range(BATCH_ROWS):  # one whole batch: written at once
            recorder.add({"success": True, "failureReason": 0, "testCase": {}, "vars": {}})
    with open_store() as store:  # another open file of this process: the lock is held, the run live
        (run,) = store.list_runs()
        assert (run.state, run.rows, run.passed) == ("running", BATCH_ROWS, BATCH_ROWS)
        recorder._give_up(OSError("disk full"))  # recording stops; the lock is let go, its file kept
    with open_store() as store:
        (run,) = store.list_runs()
        assert (run.state, run.rows, run.passed) == ("incomplete", BATCH_ROWS, BATCH_ROWS)


def test_a_run_whose_lock_file_another_process_has_open_still_holds_its_lock() -> None:
    """Another process opening the store looks for a running run's file as soon as its row is stored:
    it may open and lock the file before the recording process does. The run must hold its lock anyway
    (it used to record without one, and stayed ``running`` for ever when killed)."""
    store_path = Path(os.environ["EVALH_HOME"]) / "runs.sqlite3"
    folder = live_dir(store_path)
    folder.mkdir(parents=True)
    with open(folder / "1", "a+", encoding="utf-8") as opener:  # there first, as the opening process
        fcntl.flock(opener.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        with open_store() as store:
            recorder = store.start(
                "eval-raced", {"results": {"timestamp": "t"}}, config=None, config_path=None, description=None
            )
    assert recorder._lock is not None and recorder._lock.path == folder / "1"
    assert (folder / "1").read_text(encoding="utf-8") == "eval-raced"
    assert sorted(path.name for path in folder.iterdir()) == ["1"]  # nothing left under another name
    with open_store() as store:  # its lock is held: the run is live
        assert [run.state for run in store.list_runs()] == ["running"]
        recorder._give_up(OSError("disk full"))
    with open_store() as store:
        assert [run.state for run in store.list_runs()] == ["incomplete"]
    assert list(folder.iterdir()) == []
