"""User Python in worker processes: timeouts, cancellation, exits and prints never reach evalh."""

from __future__ import annotations

import asyncio
import os
import textwrap
from pathlib import Path
from typing import Any

import pytest

from evalh.model import AssertionResult, Prompt, ProviderSpec, RunOptions, Status, Suite, TestCase
from evalh.runner.execute import run_suite
from evalh.runtimes.python import InlineCode, Returned, call_python, shutdown_workers
from tests.assertions.helpers import definition_of, grade, make_context
from tests.runtimes.procs import ends


def run(code: str, output: Any = "hello", **kwargs: Any) -> AssertionResult:
    return grade(make_context("python", value=code, output=output, **kwargs))


def test_a_looping_assertion_times_out_and_the_next_call_gets_a_fresh_worker() -> None:
    looping = run("while True:\n    pass", config={"timeoutMs": 300})
    assert looping.error and not looping.passed
    assert looping.reason.startswith("python assertion timed out after 0.3 s and was stopped")
    assert "config.timeoutMs" in looping.reason
    assert run("output == 'hello'").passed


def test_the_timeout_is_validated_with_the_config() -> None:
    definition = definition_of("python")
    assert definition.check is not None
    assert (
        definition.check("True", {"timeoutMs": "soon"})
        == "config.timeoutMs must be a positive number (got 'soon')"
    )
    assert definition.check("True", {"timeout": 0}) == "config.timeout must be a positive number (got 0)"
    assert definition.check("True", {"timeout": 2.5}) is None


@pytest.mark.parametrize(
    ("code", "fragment"),
    [
        ("raise SystemExit(4)", "python assertion raised SystemExit: 4 (at line 1 of the code)"),
        ("raise KeyboardInterrupt", "python assertion raised KeyboardInterrupt (at line 1 of the code)"),
        ("__import__('os')._exit(9)", "python assertion's process exited during the call"),
    ],
)
def test_exits_and_interrupts_in_user_code_are_errors_not_crashes(code: str, fragment: str) -> None:
    result = run(code)
    assert result.error and not result.passed
    assert result.reason.startswith(fragment)
    assert run("True").passed  # evalh and the pool carry on


def test_prints_and_stdin_reads_cannot_disturb_the_worker() -> None:
    code = "print('noise ' * 1000)\nimport sys\nreturn sys.stdin.read() == '' and output == 'hello'"
    assert run(code).passed


def test_an_unreadable_return_value_names_its_type() -> None:
    result = run("object()")
    assert result.error
    assert "got object" in result.reason


def test_module_state_survives_between_calls_of_one_worker(tmp_path: Path) -> None:
    (tmp_path / "count.py").write_text(
        "CALLS = []\ndef get_assert(output, context):\n    CALLS.append(1)\n    return len(CALLS)\n"
    )
    scores = [run("file://count.py", config_dir=tmp_path).score for _ in range(3)]
    assert scores == [1.0, 2.0, 3.0]


def test_cancelling_a_call_kills_its_worker(tmp_path: Path) -> None:
    marker = tmp_path / "pid"
    code = (
        f"import os, time\nopen({str(marker)!r}, 'w').write(str(os.getpid()))\n"
        "while True:\n    time.sleep(0.01)"
    )

    async def cancel_while_running() -> int:
        task = asyncio.create_task(call_python(InlineCode(code), ("x", {}), timeout_s=600))
        while not (marker.exists() and marker.read_text()):
            await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return int(marker.read_text())

    pid = asyncio.run(cancel_while_running())
    assert ends(pid)


def test_a_worker_serves_calls_from_several_event_loops() -> None:
    first = asyncio.run(call_python(InlineCode("__import__('os').getpid()"), ("x", {}), timeout_s=30))
    second = asyncio.run(call_python(InlineCode("__import__('os').getpid()"), ("x", {}), timeout_s=30))
    assert isinstance(first, Returned) and isinstance(second, Returned)
    assert first.value == second.value != os.getpid()


def _provider_suite(tmp_path: Path, source: str, config: dict[str, Any]) -> Suite:
    (tmp_path / "provider.py").write_text(textwrap.dedent(source), encoding="utf-8")
    return Suite(
        tests=(TestCase(index=0, vars={"q": "hi"}), TestCase(index=1, vars={"q": "stop"})),
        prompts=(Prompt(raw="{{q}}", label="q"),),
        providers=(ProviderSpec(id="python:provider.py", config=config),),
        config_path=str(tmp_path / "evalh.yaml"),
    )


def test_a_python_provider_that_never_returns_is_stopped_by_its_timeout(tmp_path: Path) -> None:
    source = """
        import time

        def call_api(prompt, options, context):
            while prompt == "stop":
                time.sleep(0.05)
            return prompt.upper()
    """
    run_result = run_suite(_provider_suite(tmp_path, source, {"timeoutMs": 300}), RunOptions(cache=False))
    first, second = run_result.results
    assert first.status is Status.PASS and first.output == "HI"
    assert second.status is Status.ERROR
    assert second.error == (
        "provider.py: call_api timed out after 0.3 s and was stopped (raise config.timeoutMs to allow longer)"
    )


def test_a_python_provider_raising_system_exit_fails_its_row(tmp_path: Path) -> None:
    source = """
        import sys

        def call_api(prompt, options, context):
            if prompt == "stop":
                sys.exit("no more")
            return prompt
    """
    first, second = run_suite(_provider_suite(tmp_path, source, {}), RunOptions(cache=False)).results
    assert first.status is Status.PASS
    assert second.status is Status.ERROR
    assert second.error == "provider.py: call_api raised SystemExit: no more"


def test_modules_in_the_working_directory_cannot_break_a_worker(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "json.py").write_text("raise ImportError('a json.py of the project')\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    shutdown_workers()  # the next call starts a worker here
    assert run("json.loads(output) == 1", output="1").passed
