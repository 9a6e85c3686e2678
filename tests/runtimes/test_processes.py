"""exec: programs run in their own process group: a child holding stdout cannot hang the call or
outlive it, and a timeout kills the whole group."""

from __future__ import annotations

import asyncio
import logging
import os
import re
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from evalh.model import ProviderResponse, ProviderSpec
from evalh.providers.base import CallContext
from evalh.providers.scripts import ExecProvider
from evalh.runtimes.processes import TimedOut, run_program
from tests.runtimes.procs import ends


def child_pid(marker: Path) -> int:
    for _ in range(500):  # the child writes its pid right after it starts
        if marker.exists() and marker.read_text().strip():
            return int(marker.read_text())
        time.sleep(0.01)
    raise AssertionError("the script never wrote its child's pid")


def script(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "app.sh"
    path.write_text(textwrap.dedent(body), encoding="utf-8")
    return path


def complete(tmp_path: Path, command: str, config: dict[str, object] | None = None) -> ProviderResponse:
    provider = ExecProvider(ProviderSpec(id=f"exec:{command}", base_dir=str(tmp_path), config=config or {}))
    return asyncio.run(provider.complete("question", CallContext()))


def test_a_child_holding_stdout_neither_hangs_the_call_nor_outlives_it(tmp_path: Path) -> None:
    marker = tmp_path / "child.pid"
    script(tmp_path, f"sleep 1000 &\necho $! > {marker}\necho answer\n")
    response = complete(tmp_path, "sh app.sh", {"timeoutMs": 60_000})
    assert response.error is None
    assert response.output == "answer"
    assert ends(child_pid(marker))


def test_a_timeout_kills_the_script_and_its_children(tmp_path: Path) -> None:
    marker = tmp_path / "child.pid"
    script(tmp_path, f"sleep 1000 &\necho $! > {marker}\nwait\n")
    response = complete(tmp_path, "sh app.sh", {"timeoutMs": 500})
    assert response.error == "exec: sh timed out after 0.5 s and was stopped"
    assert ends(child_pid(marker))


def cancel_once_started(tmp_path: Path, marker: Path) -> None:
    """Run app.sh in a loop of its own and cancel the call once the script has written ``marker``."""

    async def cancel_while_running() -> None:
        task = asyncio.create_task(run_program(["sh", "app.sh"], cwd=str(tmp_path), timeout_s=600))
        while not (marker.exists() and marker.read_text().strip()):
            await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(cancel_while_running())


def test_cancelling_a_program_kills_its_group(tmp_path: Path) -> None:
    marker = tmp_path / "child.pid"
    script(tmp_path, f"sleep 1000 &\necho $! > {marker}\nwait\n")
    cancel_once_started(tmp_path, marker)
    assert ends(child_pid(marker))


def test_a_cancelled_program_is_reaped_before_the_loop_closes(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # Cancelling the call used to cancel the exit future itself, so nothing waited for the exit:
    # asyncio's watcher thread then found the loop closed and logged it on the console of a stopped run.
    marker = tmp_path / "pid"
    script(tmp_path, f"echo $$ > {marker}\nexec sleep 1000\n")
    caplog.set_level(logging.WARNING, logger="asyncio")
    cancel_once_started(tmp_path, marker)
    pid = int(marker.read_text())
    for _ in range(1000):  # reaped by asyncio's watcher thread, which logs just after if the loop is closed
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.01)
    for thread in threading.enumerate():
        if thread.name.startswith("asyncio-waitpid"):
            thread.join(timeout=1)
    messages = [r.getMessage() for r in caplog.records if r.name == "asyncio"]
    # "Unknown child process pid N, ..." or "Loop ... that handles pid N is closed"
    assert [m for m in messages if re.search(rf"\bpid {pid}\b", m)] == []


def test_output_and_exit_code_are_kept(tmp_path: Path) -> None:
    code = "import sys; print('out'); print('err', file=sys.stderr); sys.exit(3)"
    finished = asyncio.run(run_program([sys.executable, "-c", code], cwd=None, timeout_s=60))
    assert (finished.returncode, finished.stdout.strip(), finished.stderr.strip()) == (3, b"out", b"err")
    with pytest.raises(TimedOut, match=r"^timed out after 0\.2 s$"):
        asyncio.run(
            run_program([sys.executable, "-c", "import time; time.sleep(60)"], cwd=None, timeout_s=0.2)
        )


def test_a_bad_exec_timeout_is_a_config_error(tmp_path: Path) -> None:
    from evalh.errors import ConfigError

    with pytest.raises(ConfigError, match=r"^providers\[0\]\.config\.timeoutMs: config\.timeoutMs must be"):
        ExecProvider(ProviderSpec(id="exec:true", config={"timeoutMs": "soon"}, path="providers[0]"))
