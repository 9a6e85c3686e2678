"""Spans as trajectory steps, by promptfoo's rules (trajectoryUtils.ts, traceUtils.ts, toolAttributes.ts)."""

from __future__ import annotations

import json

import pytest

from evalh.assertions import trace_steps
from evalh.assertions.trace_steps import (
    MAX_ARGUMENT_CHARS,
    MAX_ARGUMENT_DEPTH,
    StepMatcher,
    matches_pattern,
    trajectory_steps,
)
from evalh.assertions.trajectory_goal import summarize_for_judge
from tests.assertions.trace_support import TRACE_ID, span, tool_span


@pytest.mark.parametrize(
    ("text", "pattern", "expected"),
    [
        ("search_orders", "search_orders", True),
        ("Search_Orders", "search_orders", True),  # case-insensitive
        ("search_orders", "SEARCH*", True),
        ("search_orders", "search", False),  # the whole name, not a part
        ("search_orders", "*orders", True),
        ("search_orders", "search_order?", True),
        ("search_orders", "search_orde?", False),
        ("a.b", "a?b", True),
        ("axb", "a.b", False),  # a dot is a dot, not any character
        ("db (primary)", "db (*)", True),  # regex characters are literal
        ("line\nbreak", "line*", False),  # as JavaScript's '.', * does not cross a line break
        ("x" * 5000, "*" * 40 + "y", False),  # runs of * do not backtrack forever
    ],
)
def test_glob_matching(text: str, pattern: str, expected: bool) -> None:
    assert matches_pattern(text, pattern) is expected


@pytest.mark.parametrize(
    "key",
    [
        "tool.name",
        "tool_name",
        "tool",
        "function.name",
        "ai.toolCall.name",
        "gen_ai.tool.name",
        "agent.toolName",
    ],
)
def test_a_tool_name_attribute_makes_a_tool_step(key: str) -> None:
    (step,) = trajectory_steps([span("call", attributes={key: " lookup "})])
    assert (step.type, step.name, step.label) == ("tool", "lookup", "tool:lookup")
    assert step.aliases == ("call", "lookup")


def test_a_known_key_wins_over_a_lookalike_and_json_is_not_a_name() -> None:
    (step,) = trajectory_steps([span("s", attributes={"my.tool_name": "other", "gen_ai.tool.name": "known"})])
    assert step.name == "known"
    (step,) = trajectory_steps([span("s", attributes={"x.tool": '{"a": 1}', "custom.tool": "picked"})])
    assert step.name == "picked"  # a JSON object is a payload, never a name
    (step,) = trajectory_steps([span("s", attributes={"tool.result": "ok"})])
    assert step.type == "span"  # a result is not a tool name


def test_an_mcp_span_name_names_its_tool() -> None:
    (step,) = trajectory_steps([span("mcp server/read_file")])
    assert (step.type, step.name) == ("tool", "read_file")


def test_tool_arguments_are_parsed_from_json_text() -> None:
    (step,) = trajectory_steps([tool_span("search", 0, {"q": "shoes", "limit": 5})])
    assert step.has_args and step.args == {"q": "shoes", "limit": 5}
    (step,) = trajectory_steps(
        [span("s", attributes={"tool.name": "t", "gen_ai.tool.call.arguments": "[1, 2]"})]
    )
    assert step.args == [1, 2]
    (step,) = trajectory_steps([span("s", attributes={"tool.name": "t", "my.args": '{"k": true}'})])
    assert step.args == {"k": True}  # a key named like arguments
    (step,) = trajectory_steps([span("s", attributes={"tool.name": "t", "tool.output": '{"k": 1}'})])
    assert not step.has_args  # an output is not an argument


@pytest.mark.parametrize(
    "text",
    [
        "{not json",
        '{"a": NaN}',  # JavaScript's JSON.parse refuses NaN: it stays text
        "[" * 5000 + "]" * 5000,  # too deep for the parser
        json.dumps({"a": "x" * MAX_ARGUMENT_CHARS}),  # too long to parse
        "[" * (MAX_ARGUMENT_DEPTH + 1) + "]" * (MAX_ARGUMENT_DEPTH + 1),  # parses, but past the depth bound
    ],
)
def test_arguments_that_do_not_parse_within_bounds_stay_text(text: str) -> None:
    (step,) = trajectory_steps([tool_span("t", 0, text)])
    assert step.has_args and step.args == text.strip()


def test_arguments_at_the_depth_bound_parse() -> None:
    text = "[" * MAX_ARGUMENT_DEPTH + "]" * MAX_ARGUMENT_DEPTH
    (step,) = trajectory_steps([tool_span("t", 0, text)])
    assert isinstance(step.args, list)


def test_blank_arguments_are_no_arguments() -> None:
    (step,) = trajectory_steps([span("s", attributes={"tool.name": "t", "tool.arguments": "  "})])
    assert not step.has_args


def test_command_search_reasoning_message_and_plain_steps() -> None:
    steps = trajectory_steps(
        [
            span(
                "a", 1, attributes={"tool.name": "exec_command", "tool.arguments": '{"cmd": ["ls", "-la"]}'}
            ),
            span("b", 2, attributes={"command": "git status"}),
            span("exec pytest -q", 3),
            span("c", 4, attributes={"search.query": "weather paris"}),
            span("retrieve docs", 5, attributes={"query": "refund policy"}),
            span('search "cats"', 6),
            span("reasoning_summary", 7),
            span("agent response", 8),
            span("http GET", 9),
        ]
    )
    assert [(s.type, s.name) for s in steps] == [
        ("command", "ls -la"),
        ("command", "git status"),
        ("command", "pytest -q"),
        ("search", "weather paris"),
        ("search", "refund policy"),
        ("search", "cats"),
        ("reasoning", "reasoning_summary"),
        ("message", "agent response"),
        ("span", "http GET"),
    ]
    assert steps[0].aliases == ("a", "ls -la", "exec_command", "ls")  # the shell tool's name matches too
    assert "reasoning" in steps[6].aliases and "message" in steps[7].aliases


def test_steps_run_by_start_then_end_then_arrival() -> None:
    spans = [
        span("late", 5),
        span("long", 1, duration_ms=9),
        span("short", 1, duration_ms=2),
        span("tie", 1, 2),
    ]
    assert [s.name for s in trajectory_steps(spans)] == ["short", "tie", "long", "late"]


def test_a_matcher_filters_by_type_and_glob_on_any_alias() -> None:
    (step,) = trajectory_steps([span("execute_tool lookup", attributes={"tool.name": "lookup"})])
    assert StepMatcher.of("LOOK*", "tool").matches(step)
    assert StepMatcher.of("execute_tool *", "tool").matches(step)  # the span name is an alias
    assert not StepMatcher.of({"name": "lookup", "type": "command"}).matches(step)
    assert StepMatcher.of({"name": "lookup", "type": ["command", "tool"]}).matches(step)
    assert StepMatcher.of({}).matches(step)  # no name: every step of the type


def test_the_judge_summary_collapses_repeats_and_keeps_first_and_last_twelve() -> None:
    spans = [tool_span(f"tool_{i}", i) for i in range(30)]
    spans += [span("agent response", 100), span("agent response", 101)]
    spans.append(span("step", 200, status="ERROR", message="boom"))
    summary = json.loads(summarize_for_judge(TRACE_ID, trajectory_steps(spans)))
    assert summary["traceId"] == TRACE_ID
    assert (summary["stepCount"], summary["compactedStepCount"]) == (33, 32)
    entries = summary["steps"]
    assert len(entries) == 25 and entries[12] == {"omittedCount": 8}
    assert entries[0] == {"index": 1, "type": "tool", "name": "tool_0", "spanName": "execute_tool tool_0"}
    assert entries[-2] == {"index": 31, "type": "message", "name": "agent response", "collapsedCount": 2}
    assert entries[-1] == {
        "index": 33,
        "type": "span",
        "name": "step",
        "status": {"code": 2, "message": "boom"},
    }
    # promptfoo's JSON.stringify(summary, null, 2)
    assert summarize_for_judge(TRACE_ID, trajectory_steps(spans[:1])).startswith('{\n  "traceId": ')


def test_a_rows_settled_spans_are_normalised_once_for_all_its_assertions() -> None:
    # every trace assertion of a row reads the same tuple (its TraceSource's snapshot): the tool names and
    # JSON arguments of its spans are read once, not once per assertion
    spans = (tool_span("search", 0, {"q": "shoes"}), span("agent.run", 1))
    steps = trajectory_steps(spans)
    assert trajectory_steps(spans) is steps
    assert [(step.type, step.name, step.args) for step in steps] == [
        ("tool", "search", {"q": "shoes"}),
        ("span", "agent.run", None),
    ]
    same_content = tuple(list(spans))  # another row's tuple: its own steps, equal
    assert same_content is not spans
    assert trajectory_steps(same_content) == steps
    assert trajectory_steps(same_content) is not steps


def test_a_list_of_spans_is_read_again_and_kept_steps_are_bounded() -> None:
    spans = [tool_span("search", 0)]
    assert [step.name for step in trajectory_steps(spans)] == ["search"]
    spans.append(tool_span("book", 1))  # a list may change: never served from what was kept
    assert [step.name for step in trajectory_steps(spans)] == ["search", "book"]
    first = (tool_span("first", 0),)
    kept = trajectory_steps(first)
    for index in range(trace_steps._RECENT_LIMIT):
        trajectory_steps((tool_span(f"t{index}", 0),))
    assert len(trace_steps._RECENT_STEPS) <= trace_steps._RECENT_LIMIT
    again = trajectory_steps(first)  # evicted: read again, the same steps
    assert again == kept and again is not kept


def test_command_tool_names_make_a_custom_tools_calls_commands() -> None:
    """promptfoo's tracing.commandToolNames (lowercased by the config): `Bash` with a `command` argument is
    a command step as exec_command is; without the setting it stays a tool."""
    spans = (
        span("run", 1, attributes={"tool.name": "Bash", "tool.arguments": '{"command": ["git", "log"]}'}),
        span("other", 2, attributes={"tool.name": "Bash", "tool.arguments": '{"path": "a"}'}),
    )
    default = trajectory_steps(spans)
    assert [(s.type, s.name) for s in default] == [("tool", "Bash"), ("tool", "Bash")]
    custom = trajectory_steps(spans, ("bash",))
    assert [(s.type, s.name) for s in custom] == [("command", "git log"), ("tool", "Bash")]
    assert custom[0].aliases == ("run", "git log", "Bash", "git")
    assert trajectory_steps(spans) == default  # the steps kept for the tuple are per setting
