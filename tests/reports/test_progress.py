"""Progress for every run that calls a provider: the bar with each provider's activity on a terminal,
a status line now and then off one; the activity counters it reads."""

from __future__ import annotations

import io
import json
import threading
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

from evalh.cli.app import app
from evalh.common import activity
from evalh.reports.progress_bar import activity_bar
from evalh.reports.table import progress, status_line
from tests.loopback import LoopbackServer, Reply


def test_activity_counts_calls_in_flight_failures_and_retries() -> None:
    activity.reset()
    activity.note_retry("ignored: no call is running")
    with activity.calling("slow") as first, activity.calling("slow"):
        activity.note_retry("HTTP 429")  # attributed to the innermost call's provider
        (busy,) = activity.snapshot()
        assert (busy.name, busy.in_flight, busy.done, busy.retries) == ("slow", 2, 0, 1)
        first.failed = True
    with pytest.raises(RuntimeError), activity.calling("other"):
        raise RuntimeError("a provider bug")
    slow, other = activity.snapshot()
    assert (slow.in_flight, slow.done, slow.failed, slow.last_retry) == (0, 2, 1, "HTTP 429")
    assert (other.done, other.failed) == (1, 1)
    assert activity.describe(slow) == "slow: 0 in flight, 2 done, 1 failed, 1 retries (last: HTTP 429)"


def test_status_line_names_each_provider() -> None:
    activity.reset()
    with activity.calling("endpoint-a"):
        assert status_line(3, 10) == "evalh: 3/10 rows done; endpoint-a: 1 in flight, 0 done"


def test_a_small_run_that_calls_providers_shows_progress_on_a_terminal(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FORCE_COLOR", "1")
    monkeypatch.setenv("TTY_COMPATIBLE", "1")
    with progress(3, calls=True) as advance:
        advance(1)
    assert "Evaluating" in capsys.readouterr().err
    with progress(3) as advance:  # recorded outputs only, and small: no bar
        advance(3)
    assert capsys.readouterr().err == ""


def test_the_bar_shows_each_provider_beneath_it() -> None:
    activity.reset()
    buffer = io.StringIO()
    bar = activity_bar(Console(file=buffer, width=100))
    task = bar.add_task("rows", total=4)
    bar.advance(task, 1)
    with activity.calling("my-endpoint"), activity.calling("my-endpoint"):
        activity.note_retry("HTTP 503")
        bar.console.print(*bar.get_renderables())
    lines = buffer.getvalue().splitlines()
    assert lines[-1] == "  my-endpoint: 2 in flight, 0 done, 1 retries (last: HTTP 503)"


def test_off_a_terminal_a_status_line_comes_while_providers_are_called(
    capsys: pytest.CaptureFixture[str],
) -> None:
    printed = threading.Event()
    with progress(5, calls=True, heartbeat_s=0.001) as advance, activity.calling("dead-endpoint"):
        advance(2)
        for _ in range(10_000):  # wait for the heartbeat thread's first line (no fixed sleep)
            if printed.wait(0.01):
                break
            captured = capsys.readouterr()
            if "dead-endpoint" in captured.err:
                printed.set()
                text = captured.err
    assert printed.is_set()
    assert "evalh: 2/5 rows done; dead-endpoint: 1 in flight" in text
    capsys.readouterr()  # lines the heartbeat printed before the first progress closed
    with progress(5, calls=False, heartbeat_s=0.001) as advance:
        advance(5)
    assert "rows done" not in capsys.readouterr().err


def test_a_retried_http_call_shows_in_its_providers_activity(
    loopback: LoopbackServer, tmp_path: Path
) -> None:
    answer = {"choices": [{"message": {"content": "hi there"}, "finish_reason": "stop"}]}
    loopback.script(
        "POST", "/v1/chat/completions", [Reply.json({"error": "busy"}, status=503), Reply.json(answer)]
    )
    config = {
        "prompts": ["hello"],
        "providers": [
            {
                "id": "openai:chat:m",
                "label": "flaky",
                "config": {
                    "apiBaseUrl": f"{loopback.url}/v1",
                    "apiKey": "sk-test-123456",
                    "retryBaseDelayS": 0.01,
                },
            }
        ],
        "tests": [{"assert": [{"type": "contains", "value": "hi"}]}],
    }
    (tmp_path / "evalh.yaml").write_text(json.dumps(config), encoding="utf-8")
    result = CliRunner().invoke(
        app, ["run", str(tmp_path / "evalh.yaml"), "--no-cache", "--no-write", "--no-table"]
    )
    assert result.exit_code == 0, result.output
    (flaky,) = activity.snapshot()
    assert (flaky.name, flaky.in_flight, flaky.done, flaky.failed, flaky.retries) == ("flaky", 0, 1, 0, 1)
    assert flaky.last_retry == "HTTP 503"
