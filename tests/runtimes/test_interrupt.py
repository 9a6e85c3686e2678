"""One Ctrl-C stops a run whose user code never returns: exit 130, the report written, nothing left
running. A real process and a real SIGINT (the in-process runner cannot receive one)."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from tests.runtimes.procs import ends

LOOPING_ASSERTION = """
prompts: ["{{q}}"]
providers: [echo]
tests:
  - vars: {q: a}
    assert:
      - type: python
        value: |
          import os, time
          open("running.pid", "w").write(str(os.getpid()))
          while True:
              time.sleep(0.01)
  - vars: {q: b}
    assert: [{type: contains, value: b}]
"""

HANGING_SCRIPT = """
prompts: ["{{q}}"]
providers: ["exec:sh app.sh"]
tests:
  - vars: {q: a}
"""


def interrupt_when_running(folder: Path) -> subprocess.CompletedProcess[str]:
    """Start ``evalh run``, send one SIGINT once the user's code runs, and wait for evalh to exit."""
    marker = folder / "running.pid"
    command = [sys.executable, "-m", "evalh", "run", "evalh.yaml", "-o", "out.json", "--no-cache"]
    process = subprocess.Popen(command, cwd=folder, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        for _ in range(6000):
            if (marker.exists() and marker.read_text().strip()) or process.poll() is not None:
                break
            time.sleep(0.01)
        assert process.poll() is None, "evalh ended before its user code ran"
        process.send_signal(signal.SIGINT)
        stdout, stderr = process.communicate(timeout=120)  # a guard against a hang, not a timing check
    finally:
        if process.poll() is None:
            process.kill()
    return subprocess.CompletedProcess(command, process.returncode, stdout, stderr)


@pytest.mark.slow
def test_one_ctrl_c_stops_a_looping_python_assertion(tmp_path: Path) -> None:
    (tmp_path / "evalh.yaml").write_text(LOOPING_ASSERTION, encoding="utf-8")
    done = interrupt_when_running(tmp_path)
    assert done.returncode == 130, done.stderr
    assert (tmp_path / "out.json").exists()
    assert ends(int((tmp_path / "running.pid").read_text()))


@pytest.mark.slow
def test_one_ctrl_c_stops_an_exec_script_and_its_children(tmp_path: Path) -> None:
    (tmp_path / "evalh.yaml").write_text(HANGING_SCRIPT, encoding="utf-8")
    (tmp_path / "app.sh").write_text(
        textwrap.dedent("""
        sleep 1000 &
        echo $! > running.pid
        wait
        """),
        encoding="utf-8",
    )
    done = interrupt_when_running(tmp_path)
    assert done.returncode == 130, done.stderr
    assert (tmp_path / "out.json").exists()
    assert ends(int((tmp_path / "running.pid").read_text()))
