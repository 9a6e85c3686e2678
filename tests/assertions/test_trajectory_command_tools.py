"""tracing.commandToolNames reaches the trajectory assertions through the row's trace source."""

from __future__ import annotations

from evalh.model import Span
from tests.assertions.trace_support import run_trace_assertion, span


def _bash(start_ms: float, command: str) -> Span:
    return span("tool call", start_ms, attributes={"tool.name": "bash", "tool.input": {"cmd": command}})


def test_step_count_counts_a_configured_shell_tool_as_commands() -> None:
    spans = [_bash(1, "pytest -q"), _bash(2, "ruff check .")]
    value = {"type": "command", "min": 2}
    configured = run_trace_assertion("trajectory:step-count", value, spans, command_tools=("bash",))
    assert configured.passed, configured.reason
    assert not run_trace_assertion("trajectory:step-count", value, spans).passed


def test_a_command_step_answers_to_its_executable() -> None:
    spans = [_bash(1, "pytest -q tests")]
    value = {"type": "command", "pattern": "pytest", "min": 1, "max": 1}
    graded = run_trace_assertion("trajectory:step-count", value, spans, command_tools=("bash",))
    assert graded.passed, graded.reason
