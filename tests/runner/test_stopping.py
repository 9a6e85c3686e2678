"""Stopping a run: SIGINT, SIGTERM and SIGHUP through a real ``evalh run`` process, and the stop machinery.

Each process test starts a run whose slow calls would take ten minutes, waits (polling the streamed
JSONL, no timing) until the fast rows are finished, sends the signal, then checks the exit code and that
every report holds the finished rows and says the run was interrupted. The slow calls are not awaited:
if they were, ``communicate`` would time out long before they end.
"""

from __future__ import annotations

import asyncio
import csv
import io
import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from junitparser import Error, JUnitXml

import evalh
from evalh.runner.stopping import run_until_stopped
from evalh.store import open_store
from tests.loopback import LoopbackServer, Reply, Request

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")

FAST, SLOW = 2, 3
WAIT_S = 60  # generous bounds on waiting for a subprocess; never asserted on
REPORTS = ("r.json", "r.junit.xml", "r.csv", "r.html", "r.yaml")


def _write(path: Path, text: str) -> Path:
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def _config(tmp_path: Path, provider: str) -> Path:
    tests = "\n".join(f"  - vars: {{q: {'fast' if i < FAST else 'slow'}}}" for i in range(FAST + SLOW))
    return _write(
        tmp_path / "slow.yaml",
        f'prompts: ["{{{{q}}}}"]\nproviders: [{provider}]\n'
        f"defaultTest:\n  assert: [{{type: equals, value: done}}]\ntests:\n{tests}\n",
    )


def _start(config: Path, tmp_path: Path) -> subprocess.Popen[str]:
    outputs = [arg for name in ("r.jsonl", *REPORTS) for arg in ("-o", str(tmp_path / name))]
    return subprocess.Popen(
        [sys.executable, "-m", "evalh", "run", str(config), *outputs, "--no-table"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _wait_for_rows(process: subprocess.Popen[str], jsonl: Path, rows: int) -> None:
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline and process.poll() is None:
        if jsonl.exists() and len(jsonl.read_text(encoding="utf-8").splitlines()) >= rows:
            return
        time.sleep(0.05)
    process.kill()
    raise AssertionError(f"the run never streamed {rows} rows: {process.communicate()}")


def _stop(process: subprocess.Popen[str], tmp_path: Path, sig: signal.Signals) -> str:
    _wait_for_rows(process, tmp_path / "r.jsonl", FAST)
    process.send_signal(sig)
    _, stderr = process.communicate(timeout=WAIT_S)
    return stderr


def _assert_interrupted_reports(tmp_path: Path, sig: signal.Signals) -> None:
    report = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    rows = report["results"]["results"]
    assert [row["response"]["output"] for row in rows] == ["done"] * FAST
    assert report["results"]["evalh"]["interrupted"] is True
    assert report["results"]["evalh"]["interruptedBy"] == sig.name
    assert report["results"]["evalh"]["notRun"] == SLOW
    junit = JUnitXml.fromfile(str(tmp_path / "r.junit.xml"))
    suites = list(junit)
    for suite in suites:
        properties = {prop.name: prop.value for prop in suite.properties()}
        assert properties["interrupted"] == "true" and properties["interruptedBy"] == sig.name
    (marker,) = [case for suite in suites for case in suite if case.name == "run interrupted"]
    (error,) = marker.result
    assert isinstance(error, Error) and error.type == "interrupted" and f"{SLOW} did not run" in error.message
    assert junit.tests == FAST + 1 and junit.errors == 1
    lines = list(csv.reader(io.StringIO((tmp_path / "r.csv").read_text(encoding="utf-8"), newline="")))
    assert len(lines) == 1 + FAST
    assert f"Interrupted by {sig.name}" in (tmp_path / "r.html").read_text(encoding="utf-8")
    assert "interruptedBy: " + sig.name in (tmp_path / "r.yaml").read_text(encoding="utf-8")
    assert len((tmp_path / "r.jsonl").read_text(encoding="utf-8").splitlines()) == FAST
    with open_store() as store:  # the run store holds the finished rows too, marked interrupted
        (stored,) = store.list_runs()
        assert (stored.id, stored.state, stored.rows) == (report["evalId"], "interrupted", FAST)


def _pids_alive(pid_dir: Path) -> list[int]:
    alive = []
    for pid_file in pid_dir.iterdir():
        pid = int(pid_file.name)  # its content may be empty: killed between creating and writing it
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            continue
        alive.append(pid)
    return alive


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGTERM, 143), (signal.SIGHUP, 129), (signal.SIGINT, 130)])
def test_a_signal_stops_an_exec_run_and_every_report_keeps_the_finished_rows(
    tmp_path: Path, sig: signal.Signals, code: int
) -> None:
    pid_dir = tmp_path / "pids"
    pid_dir.mkdir()
    script = _write(
        tmp_path / "slow.py",
        f"""
        import os, sys, time
        if sys.argv[1] != "fast":
            open(os.path.join({str(pid_dir)!r}, str(os.getpid())), "w").write(str(os.getpid()))
            time.sleep(600)
        print("done")
        """,
    )
    process = _start(_config(tmp_path, f'"exec:{sys.executable} {script.name}"'), tmp_path)
    stderr = _stop(process, tmp_path, sig)
    assert process.returncode == code, stderr
    assert "Traceback" not in stderr
    assert f"interrupted by {sig.name}: {FAST} finished row(s) written, {SLOW} not run" in stderr
    _assert_interrupted_reports(tmp_path, sig)
    assert _pids_alive(pid_dir) == []  # the stopped commands were killed, not left running


def test_sigterm_stops_calls_in_flight_to_a_slow_http_server(
    tmp_path: Path, loopback: LoopbackServer
) -> None:
    release = threading.Event()

    def answer(request: Request) -> Reply:
        if request.json["q"] != "fast":
            release.wait(WAIT_S)  # held until the test ends: the run must not wait for it
        return Reply.json({"answer": "done"})

    loopback.route("POST", "/chat", answer)
    provider = (
        f'{{id: http, config: {{url: "{loopback.url}/chat", body: {{q: "{{{{ prompt }}}}"}}, '
        "responsePath: answer}}"
    )
    try:
        process = _start(_config(tmp_path, provider), tmp_path)
        stderr = _stop(process, tmp_path, signal.SIGTERM)
    finally:
        release.set()
    assert process.returncode == 143, stderr
    _assert_interrupted_reports(tmp_path, signal.SIGTERM)


# User Python whose calls for anything but "fast" take ten minutes: a provider and an assertion
_SLOW_PYTHON = """
import time

def call_api(prompt, options, context):
    if prompt != "fast":
        time.sleep(600)
    return {"output": "done"}

def check(output, context):
    if output != "fast":
        time.sleep(600)
    return True
"""


def test_ctrl_c_does_not_wait_for_python_code_running_in_a_thread(tmp_path: Path) -> None:
    _write(tmp_path / "slow_code.py", _SLOW_PYTHON)
    process = _start(_config(tmp_path, '"file://slow_code.py"'), tmp_path)
    stderr = _stop(process, tmp_path, signal.SIGINT)
    assert process.returncode == 130, stderr
    _assert_interrupted_reports(tmp_path, signal.SIGINT)


QUEUED = 12  # slow rows: more than the run's two Python workers, so most wait for one when the stop comes


def _python_config(tmp_path: Path, kind: str) -> Path:
    """A run whose fast rows finish and whose slow ones hold (or wait for) a Python worker: a
    ``python:`` provider, or a ``python`` assertion on the echo provider's output."""
    _write(tmp_path / "slow_code.py", _SLOW_PYTHON)
    provider, check = {
        "provider": ('"python:slow_code.py"', "{type: equals, value: done}"),
        "assertion": ("echo", "{type: python, value: file://slow_code.py:check}"),
    }[kind]
    tests = "\n".join(f"  - vars: {{q: {'fast' if i < FAST else 'slow'}}}" for i in range(FAST + QUEUED))
    return _write(
        tmp_path / "slow.yaml",
        f'prompts: ["{{{{q}}}}"]\nproviders: [{provider}]\n'
        f"defaultTest:\n  assert: [{check}]\ntests:\n{tests}\n",
    )


@pytest.mark.parametrize("kind", ["provider", "assertion"])
@pytest.mark.parametrize(("sig", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_python_rows_abandoned_by_a_stop_are_not_run_rather_than_errors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str, sig: signal.Signals, code: int
) -> None:
    monkeypatch.setenv("EVALH_PYTHON_WORKERS", "2")
    _python_config(tmp_path, kind)
    process = subprocess.Popen(
        [sys.executable, "-m", "evalh", "run", "slow.yaml", "-j", "20", "-o", "r.jsonl", "-o", "r.json"],
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,  # the results table is not read
        stderr=subprocess.PIPE,
        text=True,
    )
    stderr = _stop(process, tmp_path, sig)
    assert process.returncode == code, stderr
    assert f"{FAST} finished row(s) written, {QUEUED} not run" in stderr
    report = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    rows = report["results"]["results"]
    assert [(row["vars"]["q"], row["error"]) for row in rows] == [("fast", None)] * FAST
    assert (report["results"]["evalh"]["interruptedBy"], report["results"]["evalh"]["notRun"]) == (
        sig.name,
        QUEUED,
    )
    assert "deque" not in json.dumps(report) and "Traceback" not in stderr


# -- the stop machinery, in process --------------------------------------------------------------


@pytest.fixture
def restored_signals() -> Iterator[None]:
    saved = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    yield
    for sig, handler in saved.items():
        signal.signal(sig, handler)


@pytest.mark.usefixtures("restored_signals")
def test_a_stop_cancels_pending_work_and_lets_it_clean_up() -> None:
    events: list[str] = []

    async def slow(name: str) -> None:
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            events.append(f"{name} cancelled")
            await asyncio.sleep(0)  # clean-up may await (kill and reap a command, close a client)
            events.append(f"{name} cleaned up")
            raise

    async def main() -> None:
        tasks = [asyncio.ensure_future(slow(name)) for name in ("a", "b")]
        await asyncio.sleep(0)
        events.append("signal")
        os.kill(os.getpid(), signal.SIGTERM)
        await asyncio.gather(*tasks)
        events.append("never reached")

    def outer_handler(signum: int, frame: object) -> None:
        events.append("outer handler")

    signal.signal(signal.SIGTERM, outer_handler)
    assert run_until_stopped(main(), (signal.SIGINT, signal.SIGTERM)) == "SIGTERM"
    assert events[0] == "signal"
    assert sorted(events[1:]) == ["a cancelled", "a cleaned up", "b cancelled", "b cleaned up"]
    assert signal.getsignal(signal.SIGTERM) is outer_handler  # restored after the run


@pytest.mark.usefixtures("restored_signals")
def test_a_run_that_ends_reports_no_signal_and_exceptions_propagate() -> None:
    async def fine() -> None:
        await asyncio.sleep(0)

    async def broken() -> None:
        raise ValueError("a bug")

    assert run_until_stopped(fine()) is None
    with pytest.raises(ValueError, match="a bug"):
        run_until_stopped(broken())


@pytest.mark.usefixtures("restored_signals")
def test_a_row_whose_code_turns_the_stop_into_an_answer_is_not_run() -> None:
    async def provider(prompt: str) -> dict[str, str]:
        if prompt == "stop":
            os.kill(os.getpid(), signal.SIGINT)
            await asyncio.sleep(3600)
        if prompt == "slow":
            try:
                await asyncio.sleep(3600)
            except asyncio.CancelledError:  # user code that answers instead of letting the stop through
                return {"error": "cancelled while waiting"}
        return {"output": "done"}

    tests = [{"vars": {"q": q}} for q in ("fast", "slow", "slow", "stop")]
    result = evalh.evaluate({"prompts": ["{{q}}"], "providers": [provider], "tests": tests})
    assert (result.run.interrupted_by, result.run.not_run) == ("SIGINT", 3)
    assert [(row.rendered_prompt, row.error) for row in result.rows] == [("fast", None)]


@pytest.mark.usefixtures("restored_signals")
def test_rows_waiting_for_their_comparison_when_the_run_stops_are_not_run() -> None:
    # a max-score test's rows are held until every row of the test is in: stopped before, the finished
    # one was never graded against the others, so it is not run rather than reported half-graded
    async def provider(prompt: str) -> dict[str, str]:
        if prompt == "stop":
            os.kill(os.getpid(), signal.SIGINT)
            await asyncio.sleep(3600)
        return {"output": prompt}

    tests = [
        {"vars": {"q": "fast"}, "assert": [{"type": "contains", "value": "fast"}]},
        {"vars": {"q": "stop"}, "assert": [{"type": "contains", "value": "stop"}, {"type": "max-score"}]},
    ]
    suite = {"prompts": ["{{q}}", "{{q}} again"], "providers": [provider], "tests": tests}
    result = evalh.evaluate(suite)
    assert (result.run.interrupted_by, result.run.not_run) == ("SIGINT", 2)
    assert sorted(row.rendered_prompt for row in result.rows) == ["fast", "fast again"]
