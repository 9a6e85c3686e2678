"""The first hour with evalh (issue 15): editor completion travels, examples teach, Ctrl-C is quiet."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from evalh.cli.app import app

WAIT_S = 60  # a bound on waiting for the subprocess, never asserted on


def _validate(config: Path) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["validate", str(config)])
    return result.exit_code, result.stderr


def test_init_names_its_schema_relatively_and_validate_warns_when_it_is_gone(tmp_path: Path) -> None:
    assert CliRunner().invoke(app, ["init", str(tmp_path / "suite")]).exit_code == 0
    config = tmp_path / "suite" / "evalh.yaml"
    first_line = config.read_text(encoding="utf-8").splitlines()[0]
    assert first_line == "# yaml-language-server: $schema=evalh.schema.json"  # relative: it travels
    assert _validate(config) == (0, "")  # the schema beside it: nothing to say
    (tmp_path / "suite" / "evalh.schema.json").unlink()
    code, stderr = _validate(config)
    assert code == 0  # a warning: the config itself is still valid
    assert f"{config}:1:" in stderr and "evalh.schema.json does not exist" in stderr
    assert f"evalh schema -o {tmp_path / 'suite' / 'evalh.schema.json'}" in stderr
    strict = CliRunner().invoke(app, ["validate", str(config), "--strict"])
    assert strict.exit_code == 2 and "evalh schema -o" in strict.stderr


def test_schema_comment_further_down_is_located_and_urls_are_left_alone(tmp_path: Path) -> None:
    config = tmp_path / "evalh.yaml"
    body = "tests:\n  - output: hi\n    assert: [{type: equals, value: hi}]\n"
    comment = "#  yaml-language-server: $schema=schemas/gone.json"
    config.write_text(f"# A suite\n{comment}\n{body}", encoding="utf-8")
    code, stderr = _validate(config)
    assert code == 0 and f"{config}:2:" in stderr and "schemas/gone.json does not exist" in stderr
    url = "# yaml-language-server: $schema=https://example.invalid/s.json"
    config.write_text(f"{url}\n{body}", encoding="utf-8")
    assert _validate(config) == (0, "")


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_ctrl_c_while_the_first_exec_call_runs_exits_130_without_a_traceback(tmp_path: Path) -> None:
    started = tmp_path / "started"
    script = tmp_path / "slow.py"
    script.write_text(
        f"import pathlib, time\npathlib.Path({str(started)!r}).touch()\ntime.sleep(30)\nprint('late')\n",
        encoding="utf-8",
    )
    config = tmp_path / "evalh.yaml"
    config.write_text(
        f'prompts: ["{{{{q}}}}"]\nproviders: ["exec:{sys.executable} {script.name}"]\n'
        "tests:\n  - vars: {q: one}\n    assert: [{type: equals, value: late}]\n  - vars: {q: two}\n",
        encoding="utf-8",
    )
    command = [sys.executable, "-m", "evalh", "run", str(config), "--no-table", "--no-write", "-j", "1"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        while not started.exists():  # the event: the first call is running (bounded by the timeout below)
            if process.poll() is not None:
                raise AssertionError(f"evalh ended before the call started: {process.communicate()}")
            time.sleep(0.02)
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=WAIT_S)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == 130, stderr
    assert "Traceback" not in stderr and "Exception ignored" not in stderr, stderr
    assert "evalh: interrupted by SIGINT: 0 finished row(s) written, 2 not run" in stderr
    assert all(line.startswith("evalh: ") for line in stderr.splitlines()), stderr  # no asyncio noise
