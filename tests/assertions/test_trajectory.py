"""trajectory:tool-used, tool-args-match, tool-sequence and step-count: promptfoo's verdicts and reasons."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from evalh.assertions.trace_checks import TRACING_OFF
from evalh.config.load import load_suite
from evalh.errors import ConfigError
from tests.assertions.helpers import declared_problems
from tests.assertions.trace_support import TRACE_ID, MemoryTrace, run_trace_assertion, span, tool_span

AGENT = [
    span("agent run", 0, duration_ms=50),
    tool_span(
        "search_orders", 1, {"order_id": "123", "page": 1, "filters": {"status": "open", "tags": ["a"]}}
    ),
    span("reasoning", 2),
    tool_span("search_orders", 3, {"order_id": "456"}),
    tool_span("compose_reply", 4, {"tone": "friendly", "citations": ["doc_1", "doc_2"]}),
    span("agent response", 5),
]

# A valid use of each type of this family: tests/runner/test_threshold_contract.py runs every registered
# type's handler on its sample and checks it returns a Measurement (scoring decides).
CONTRACT_SAMPLES: dict[str, dict[str, Any]] = {
    "trajectory:tool-used": {"value": "search_*", "output": "done", "trace": MemoryTrace(AGENT)},
    "trajectory:tool-args-match": {
        "value": {"name": "search_orders", "args": {"order_id": "123"}},
        "output": "done",
        "trace": MemoryTrace(AGENT),
    },
    "trajectory:tool-sequence": {
        "value": ["search_orders", "compose_reply"],
        "output": "done",
        "trace": MemoryTrace(AGENT),
    },
    "trajectory:step-count": {
        "value": {"type": "tool", "min": 1},
        "output": "done",
        "trace": MemoryTrace(AGENT),
    },
}

TYPES = [
    "trajectory:tool-used",
    "trajectory:tool-args-match",
    "trajectory:tool-sequence",
    "trajectory:step-count",
]
VALUES: dict[str, Any] = {
    "trajectory:tool-used": "search_orders",
    "trajectory:tool-args-match": {"name": "search_orders", "args": {}},
    "trajectory:tool-sequence": ["search_orders"],
    "trajectory:step-count": {"max": 3},
}


def verdict(kind: str, value: Any, spans: Any = AGENT, **kwargs: Any) -> tuple[bool, float, str]:
    graded = run_trace_assertion(kind, value, spans, **kwargs)
    assert not graded.error, graded.reason
    return graded.passed, graded.score, graded.reason


# ------------------------------------------------------------------------------------- no trace


@pytest.mark.parametrize("kind", TYPES)
def test_tracing_off_is_an_error_that_says_how_to_turn_it_on(kind: str) -> None:
    for written in (kind, f"not-{kind}"):
        graded = run_trace_assertion(written, VALUES[kind], None)
        assert graded.error and not graded.passed
        assert graded.reason == TRACING_OFF


@pytest.mark.parametrize("kind", TYPES)
def test_no_spans_is_an_error_naming_the_trace_and_the_fix(kind: str) -> None:
    graded = run_trace_assertion(f"not-{kind}", VALUES[kind], [])
    assert graded.error and not graded.passed  # never inverted into a pass
    assert TRACE_ID in graded.reason and "traceparent" in graded.reason and "OTLP" in graded.reason


# ---------------------------------------------------------------------------------- tool-used


def test_tool_used_by_name_glob_and_list() -> None:
    assert verdict("trajectory:tool-used", "search_orders")[0]
    assert verdict("trajectory:tool-used", "COMPOSE_*")[0]
    assert verdict("trajectory:tool-used", ["search_orders", "compose_reply"]) == (
        True,
        1.0,
        "Observed required tool(s): search_orders, compose_reply. Actual tools: tool:search_orders, "
        "tool:search_orders, tool:compose_reply",
    )
    passed, score, reason = verdict("trajectory:tool-used", ["search_orders", "refund", "cancel*"])
    assert (passed, score) == (False, 0.0)
    assert reason.startswith("Missing required tool(s): refund, cancel*. Actual tools: tool:search_orders")


def test_tool_used_counts_only_tool_steps() -> None:
    assert not verdict("trajectory:tool-used", "reasoning")[0]  # a reasoning step is no tool
    assert not verdict("trajectory:tool-used", "search_orders", [span("x")])[0]
    assert verdict("trajectory:tool-used", "search_orders", [span("x")])[2].endswith("Actual tools: (none)")


def test_tool_used_with_min_and_max() -> None:
    assert verdict("trajectory:tool-used", {"name": "search_orders", "min": 2})[0]
    passed, _, reason = verdict("trajectory:tool-used", {"pattern": "search*", "min": 1, "max": 1})
    assert not passed
    assert reason == (
        'Matched tool "search*" 2 time(s) (expected 1-1). Matches: tool:search_orders, tool:search_orders'
    )
    passed, _, reason = verdict("trajectory:tool-used", {"pattern": "refund"})  # min defaults to 1
    assert (passed, reason) == (False, 'Matched tool "refund" 0 time(s) (expected at least 1)')
    assert verdict("trajectory:tool-used", {"pattern": "refund", "min": 0, "max": 0})[0]


def test_not_tool_used_with_a_list_forbids_every_tool_in_it() -> None:
    """promptfoo: a negated list passes only when none of its tools was used (not when one is missing)."""
    passed, score, reason = verdict("not-trajectory:tool-used", ["refund", "compose_reply"])
    assert (passed, score) == (False, 0.0)
    assert reason.startswith("Forbidden tool(s) were used: compose_reply. Actual tools:")
    assert verdict("not-trajectory:tool-used", ["refund", "cancel"]) == (
        True,
        1.0,
        "Forbidden tool(s) were not used: refund, cancel",
    )
    assert not verdict("not-trajectory:tool-used", "search_orders")[0]
    assert verdict("not-trajectory:tool-used", {"name": "search_orders", "max": 1})[0]  # inverse of the range


# ----------------------------------------------------------------------------- tool-args-match


@pytest.mark.parametrize(
    ("expected", "mode", "passes"),
    [
        ({"order_id": "123"}, "partial", True),
        ({"order_id": "456"}, "partial", True),  # any matching call passes
        ({"filters": {"status": "open"}}, "partial", True),  # a recursive subset
        ({"filters": {"tags": ["a"]}}, "partial", True),
        ({"filters": {"tags": []}}, "partial", False),  # lists match item by item, same length
        ({"order_id": 123}, "partial", False),  # "123" is not 123
        ({"order_id": "999"}, "partial", False),
        ({"order_id": "123"}, "exact", False),  # exact: the whole payload
        ({"order_id": "456"}, "exact", True),
    ],
)
def test_tool_args_partial_and_exact(expected: dict[str, Any], mode: str, passes: bool) -> None:
    value = {"name": "search_orders", "args": expected, "mode": mode}
    assert verdict("trajectory:tool-args-match", value)[0] is passes


def test_tool_args_reasons() -> None:
    passed, _, reason = verdict(
        "trajectory:tool-args-match", {"pattern": "compose_*", "arguments": {"tone": "friendly"}}
    )
    assert passed
    assert reason == (
        'Tool "compose_*" matched expected arguments (partial) on tool:compose_reply. '
        'Args: {"tone":"friendly","citations":["doc_1","doc_2"]}'
    )
    passed, _, reason = verdict("trajectory:tool-args-match", {"name": "refund", "args": {}})
    assert not passed and reason.startswith('No tool call matched "refund". Actual tools: tool:search_orders')
    no_args = [tool_span("refund", 0)]
    passed, _, reason = verdict("trajectory:tool-args-match", {"name": "refund", "args": {}}, no_args)
    assert (passed, reason) == (
        False,
        'Tool "refund" was observed but no arguments were captured. Actual tools: tool:refund',
    )
    passed, _, reason = verdict(
        "trajectory:tool-args-match", {"name": "compose_reply", "args": {"tone": "curt"}}
    )
    assert reason == (
        'No call to tool "compose_reply" matched expected arguments (partial): {"tone":"curt"}. '
        'Observed args: {"tone":"friendly","citations":["doc_1","doc_2"]}'
    )


def test_tool_args_defaults_and_ignore() -> None:
    call = [tool_span("orders", 0, {"status": "Q", "page": 1, "request_id": "a1", "cursor_id": "z"})]
    base = {"name": "orders", "mode": "exact", "args": {"status": "Q"}}
    assert not verdict("trajectory:tool-args-match", base, call)[0]
    value = {**base, "defaults": {"page": 1}, "ignore": ["request_id", "*_ID"]}
    passed, _, reason = verdict("trajectory:tool-args-match", value, call)
    assert passed
    assert reason.endswith(". Ignored argument(s): request_id, cursor_id. Ignored default argument(s): page")
    paged = [tool_span("orders", 0, {"status": "Q", "page": 2})]
    assert not verdict("trajectory:tool-args-match", {**base, "defaults": {"page": 1}}, paged)[0]
    # a plain ignore entry is an exact, case-sensitive key
    assert not verdict("trajectory:tool-args-match", {**base, "ignore": "PAGE"}, paged)[0]
    assert verdict("trajectory:tool-args-match", {**base, "ignore": "page"}, paged)[0]


def test_tool_args_that_are_not_json_compare_as_text() -> None:
    call = [tool_span("run", 0, "ls -la {oops")]
    assert verdict("trajectory:tool-args-match", {"name": "run", "args": "ls -la {oops"}, call)[0]
    assert not verdict("trajectory:tool-args-match", {"name": "run", "args": {"cmd": "ls"}}, call)[0]


# ------------------------------------------------------------------------------- tool-sequence


def test_tool_sequence_in_order_allows_steps_between() -> None:
    passed, _, reason = verdict("trajectory:tool-sequence", ["search_orders", "compose_reply"])
    assert passed
    assert reason == (
        "Observed tool sequence in order: tool:search_orders, tool:compose_reply. Actual tools: "
        "tool:search_orders, tool:search_orders, tool:compose_reply"
    )
    passed, _, reason = verdict("trajectory:tool-sequence", {"steps": ["compose_reply", "search_orders"]})
    assert not passed and reason.startswith('Expected tool "search_orders" was not observed in order.')
    assert verdict(
        "trajectory:tool-sequence", {"steps": [{"pattern": "SEARCH*"}, {"name": "compose_reply"}]}
    )[0]


def test_tool_sequence_exact() -> None:
    steps = ["search_orders", "search_orders", "compose_reply"]
    assert verdict("trajectory:tool-sequence", {"steps": steps, "mode": "exact"})[0]
    passed, _, reason = verdict("trajectory:tool-sequence", {"steps": steps[1:], "mode": "exact"})
    assert not passed
    assert reason == (
        "Expected exact tool sequence of search_orders, compose_reply, but actual tools were "
        "tool:search_orders, tool:search_orders, tool:compose_reply"
    )
    assert verdict("not-trajectory:tool-sequence", {"steps": steps[1:], "mode": "exact"})[0]


# ---------------------------------------------------------------------------------- step-count


def test_step_count_by_type_pattern_and_bounds() -> None:
    passed, _, reason = verdict("trajectory:step-count", {"type": "tool", "min": 3, "max": 3})
    assert passed
    assert reason.startswith(
        "Matched 3 trajectory step(s) for type=tool (expected 3-3). Matches: tool:search_orders"
    )
    assert verdict("trajectory:step-count", {"type": ["reasoning", "message"], "min": 2})[0]
    assert verdict("trajectory:step-count", {"max": 6})[0]  # every step counts without a filter
    passed, _, reason = verdict("trajectory:step-count", {"pattern": "search*", "max": 1})
    assert (passed, reason.split(".")[0]) == (
        False,
        "Matched 2 trajectory step(s) for pattern=search* (expected at most 1)",
    )
    assert verdict("not-trajectory:step-count", {"type": "command", "min": 1})[0]


# ------------------------------------------------------------------------------ config checks


@pytest.mark.parametrize(
    ("assertion", "problem"),
    [
        ({"type": "trajectory:tool-used", "value": []}, "at least 1 item"),
        ({"type": "trajectory:tool-used", "value": {"min": 1}}, "missing required key 'name'"),
        (
            {"type": "trajectory:tool-used", "value": {"name": "a", "min": 3, "max": 1}},
            "min (3) must not be above max (1)",
        ),
        ({"type": "trajectory:tool-args-match", "value": {"name": "a"}}, "args"),
        ({"type": "trajectory:tool-args-match", "value": {"args": {}}}, "missing required key 'name'"),
        ({"type": "trajectory:tool-args-match", "value": {"name": "a", "args": {}, "mode": "fuzzy"}}, "mode"),
        ({"type": "trajectory:tool-sequence", "value": {"steps": []}}, "steps"),
        ({"type": "trajectory:tool-sequence", "value": {"steps": ["a"], "mode": "exactly"}}, "mode"),
        ({"type": "trajectory:tool-sequence", "value": [{"type": "tool"}]}, "value.0: missing required key"),
        ({"type": "trajectory:step-count", "value": {"type": "tool"}}, "needs min and/or max"),
        ({"type": "trajectory:step-count", "value": {"type": "tools", "min": 1}}, "type"),
        ({"type": "trajectory:step-count", "value": {"min": 1, "patern": "x"}}, "pattern"),
    ],
)
def test_bad_values_are_config_problems(assertion: dict[str, Any], problem: str) -> None:
    found = declared_problems(assertion)
    assert found and problem in found[0], found


def test_a_bad_step_type_is_named_as_a_step_type_not_an_assertion_type() -> None:
    """``value.type`` is a step type: the schema's enum message lists them (it once said "unknown assertion
    type 'tools'. Run `evalh list assertions`", the wrong list)."""
    found = declared_problems({"type": "trajectory:step-count", "value": {"type": "tools", "min": 1}})
    assert found and "unknown assertion type" not in found[0], found
    assert "value.type: must be one of 'tool', 'command'" in found[0]


@pytest.mark.parametrize(
    "assertion",
    [
        {"type": "trajectory:tool-used", "value": "search_orders"},
        {"type": "trajectory:tool-used", "value": ["a", "b*"]},
        {"type": "not-trajectory:tool-used", "value": {"pattern": "a*", "min": 0, "max": 2}},
        {"type": "trajectory:tool-args-match", "value": {"pattern": "a*", "arguments": [1], "ignore": "x"}},
        {"type": "trajectory:tool-sequence", "value": {"steps": ["a", {"name": "b"}], "mode": "exact"}},
        {"type": "trajectory:step-count", "value": {"type": ["tool", "command"], "max": 3}},
    ],
)
def test_promptfoo_values_are_accepted(assertion: dict[str, Any]) -> None:
    assert declared_problems(assertion) == []


# ------------------------------------------------------------------------- rendering at load


def test_tool_args_are_rendered_with_the_tests_vars_at_load(tmp_path: Path) -> None:
    """promptfoo's docs: ``args: {order_id: '{{ order_id }}'}``; other texts of an object stay as written."""
    config = tmp_path / "agent.yaml"
    config.write_text(
        """
prompts: ["Find order {{ order_id }}"]
providers: [echo]
tests:
  - vars: {order_id: "123", secret_var: "{{ not_rendered }}"}
    assert:
      - type: trajectory:tool-args-match
        value:
          name: "{{ order_id }}"
          args: {order_id: "{{ order_id }}", list: ["x{{ order_id }}", 5, {deep: "{{ order_id }}"}]}
      - type: trajectory:tool-args-match
        value: {pattern: "a*", arguments: ["{{ order_id }}"]}
      - type: contains-json
        value: {type: object, description: "{{ order_id }}"}
""",
        encoding="utf-8",
    )
    asserts = load_suite(config).tests[0].asserts
    assert asserts[0].value == {
        "name": "{{ order_id }}",
        "args": {"order_id": "123", "list": ["x123", 5, {"deep": "123"}]},
    }
    assert asserts[1].value == {"pattern": "a*", "arguments": ["123"]}
    assert asserts[2].value == {"type": "object", "description": "{{ order_id }}"}


def test_a_broken_template_in_args_is_a_located_config_error(tmp_path: Path) -> None:
    config = tmp_path / "agent.yaml"
    config.write_text(
        """
prompts: ["hi"]
providers: [echo]
tests:
  - assert:
      - type: trajectory:tool-args-match
        value: {name: t, args: {q: "{{ unclosed"}}
""",
        encoding="utf-8",
    )
    with pytest.raises(ConfigError) as caught:
        load_suite(config)
    assert "value.args.q" in str(caught.value) and "agent.yaml" in str(caught.value)


def test_tool_args_given_as_an_attribute_array_match_a_list() -> None:
    call = [span("s", attributes={"tool.name": "t", "tool.args": ("a", "b")})]  # an OTLP array value
    assert verdict("trajectory:tool-args-match", {"name": "t", "args": ["a", "b"]}, call)[0]
    assert not verdict("trajectory:tool-args-match", {"name": "t", "args": ["a"]}, call)[0]


def test_secret_arguments_are_redacted_in_reasons_but_still_compared() -> None:
    call = [tool_span("login", 0, {"user": "ann", "api_key": "sk-live-0123456789abcdef"})]
    value = {"name": "login", "args": {"api_key": "sk-live-0123456789abcdef"}}
    passed, _, reason = verdict("trajectory:tool-args-match", value, call)
    assert passed
    assert "sk-live" not in reason and '"api_key":"[REDACTED]"' in reason
    passed, _, reason = verdict(
        "trajectory:tool-args-match", {"name": "login", "args": {"user": "bob"}}, call
    )
    assert not passed and "sk-live" not in reason
