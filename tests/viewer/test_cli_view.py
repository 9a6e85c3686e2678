"""`evalh view` on the command line: its errors in-process, serving and Ctrl-C as a real process."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from evalh.cli.app import app


def test_a_missing_report_is_named(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["view", str(tmp_path / "gone.json"), "--no-open"])
    assert result.exit_code == 2
    assert f"evalh view: report not found: {tmp_path / 'gone.json'}" in result.output
    assert "Traceback" not in result.output


def test_a_busy_port_is_a_clear_error(runs: tuple[Path, Path]) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = CliRunner().invoke(app, ["view", str(runs[0]), "--port", str(port), "--no-open"])
    assert result.exit_code == 2
    assert f"cannot listen on 127.0.0.1:{port}" in result.output and "Pick another --port" in result.output


def _serve(*args: str, runs: int = 2) -> tuple[subprocess.Popen[str], str]:
    process = subprocess.Popen(
        [sys.executable, "-m", "evalh", "view", *args, "--no-open"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    first = process.stdout.readline()
    assert first.startswith(f"evalh view: {runs} run(s) at http://"), first + process.stderr.read()  # type: ignore[union-attr]
    return process, first.split(" at ")[1].split()[0]


def _stop(process: subprocess.Popen[str]) -> tuple[int, str, str]:
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=30)
    return process.returncode, out, err


def test_serves_until_ctrl_c(runs: tuple[Path, Path]) -> None:
    process, url = _serve(*map(str, runs))
    try:
        assert url.startswith("http://127.0.0.1:")
        assert [run["ref"] for run in httpx.get(url + "api/runs").json()["runs"]] == [
            "current.json",
            "baseline.json",
        ]
    finally:
        code, out, err = _stop(process)
    assert (code, out.strip(), err) == (0, "evalh view: stopped", "")


def test_an_exposed_address_is_warned_about(runs: tuple[Path, Path]) -> None:
    process, url = _serve(*map(str, runs), "--host", "0.0.0.0")
    try:
        port = url.rstrip("/").rsplit(":", 1)[1]
        assert httpx.get(f"http://127.0.0.1:{port}/api/runs").status_code == 200
    finally:
        code, _, err = _stop(process)
    assert code == 0
    assert "evalh: warning: --host: the viewer listens on 0.0.0.0: anyone who reaches this machine" in err


RECORDED = """\
description: {name}
tests:
  - description: greets
    output: Hello Ada
    assert: [{{type: contains, value: {word}}}]
"""


def test_without_arguments_the_run_store(tmp_path: Path) -> None:
    """`evalh view` shows every recorded run ($EVALH_HOME is the test's own, see conftest)."""
    for name, word in (("first", "Ada"), ("second", "Bob")):
        config = tmp_path / f"{name}.yaml"
        config.write_text(RECORDED.format(name=name, word=word), encoding="utf-8")
        CliRunner().invoke(app, ["run", str(config), "--no-table"])
    process, url = _serve()
    try:
        runs = httpx.get(url + "api/runs").json()["runs"]
        assert [run["description"] for run in runs] == ["second", "first"]
        latest = httpx.get(url + "api/runs/latest").json()
        assert latest["run"]["ref"] == runs[0]["ref"] and latest["lines"][0]["cells"][0]["status"] == "FAIL"
        by_id = httpx.get(url + "api/runs/" + runs[1]["ref"]).json()
        assert by_id["lines"][0]["cells"][0]["status"] == "PASS"
        assert httpx.get(url + "api/runs/no-such-run").status_code == 404
    finally:
        code, _, err = _stop(process)
    assert (code, err) == (0, "")


def _view_on_a_terminal(
    runs: tuple[Path, Path], tmp_path: Path, browser_lingers: bool
) -> tuple[int, str, str]:
    """``evalh view`` with stdin and stdout on a terminal (a pty) and $BROWSER a script that notes the URL
    (and then, when ``browser_lingers``, keeps running as a real browser command may); Ctrl-C once the URL
    is noted. The exit code, the URL shown and the URL the browser got."""
    import os
    import pty

    opened = tmp_path / "opened.txt"
    browser = tmp_path / "browser.sh"
    linger = "sleep 30\n" if browser_lingers else ""
    browser.write_text(f'#!/bin/sh\necho "$1" > {opened}\n{linger}', encoding="utf-8")
    browser.chmod(0o755)
    leader, follower = pty.openpty()
    env = {**os.environ, "BROWSER": str(browser)}
    command = [sys.executable, "-m", "evalh", "view", str(runs[0])]
    process = subprocess.Popen(command, stdin=follower, stdout=follower, stderr=subprocess.PIPE, env=env)
    os.close(follower)
    try:
        shown = b""
        while b"(Ctrl-C to stop)" not in shown:
            shown += os.read(leader, 1024)
        url = shown.decode().split(" at ")[1].split()[0]
        for _ in range(400):  # the URL is printed just before the browser command runs
            if opened.exists() and opened.read_text().strip():
                break
            time.sleep(0.05)
    finally:
        process.send_signal(signal.SIGINT)
        process.wait(timeout=30)
        os.close(leader)
    return process.returncode, url, opened.read_text().strip()


def test_on_a_terminal_the_browser_opens(runs: tuple[Path, Path], tmp_path: Path) -> None:
    """On a terminal the URL goes to $BROWSER; Ctrl-C then stops the viewer cleanly (exit 0)."""
    code, url, opened = _view_on_a_terminal(runs, tmp_path, browser_lingers=False)
    assert (code, opened) == (0, url)


def test_ctrl_c_while_the_browser_command_runs_stops_cleanly(runs: tuple[Path, Path], tmp_path: Path) -> None:
    """Ctrl-C before the browser command has returned is the same clean stop, not an interrupted exit 130."""
    code, url, opened = _view_on_a_terminal(runs, tmp_path, browser_lingers=True)
    assert (code, opened) == (0, url)


def test_an_unusable_run_store_is_an_error_at_start(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home-is-a-file"
    home.write_text("not a directory", encoding="utf-8")
    monkeypatch.setenv("EVALH_HOME", str(home))
    result = CliRunner().invoke(app, ["view", "--no-open"])
    assert result.exit_code != 0 and "Traceback" not in result.output
    assert "evalh: error:" in result.output and str(home) in result.output
