"""is-valid-openai-tools-call, is-valid-openai-function-call, tool-call-f1 and finish-reason: promptfoo's
verdicts and reasons on each output shape the chat providers return."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest

from evalh.assertions.base import AssertionContext
from evalh.model import ProviderSpec
from tests.assertions.helpers import declared_problems, grade, make_context

WEATHER = {
    "name": "get_weather",
    "description": "The weather in a city",
    "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string"}, "unit": {"enum": ["c", "f"]}},
        "required": ["city"],
    },
}
TOOLS = [{"type": "function", "function": WEATHER}]
TOOLS_PROVIDER = ProviderSpec(id="openai:chat:gpt-4o-mini", config={"tools": TOOLS}, path="providers[0]")
FUNCTIONS_PROVIDER = ProviderSpec(id="openai:chat:gpt-4o-mini", config={"functions": [WEATHER]})


def call(name: str, arguments: Any) -> dict[str, Any]:
    text = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return {"id": "call_1", "type": "function", "function": {"name": name, "arguments": text}}


def context(
    assertion_type: str,
    output: Any,
    *,
    value: Any = None,
    provider: ProviderSpec | None = TOOLS_PROVIDER,
    metadata: dict[str, Any] | None = None,
    vars: dict[str, Any] | None = None,
    threshold: float | None = None,
) -> AssertionContext:
    ctx = make_context(assertion_type, value=value, output=output, vars=vars, threshold=threshold)
    return dataclasses.replace(ctx, provider_spec=provider, provider_metadata=metadata or {})


# A valid use of each type of this family: tests/runner/test_threshold_contract.py runs every registered
# type's handler on its sample and checks it returns a Measurement (scoring decides). A new type adds its own.
CONTRACT_SAMPLES: dict[str, dict[str, Any]] = {
    "is-valid-openai-tools-call": {
        "output": [call("get_weather", {"city": "Paris"})],
        "provider_spec": TOOLS_PROVIDER,
    },
    "is-valid-openai-function-call": {
        "output": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
        "provider_spec": FUNCTIONS_PROVIDER,
    },
    "is-valid-function-call": {
        "output": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
        "provider_spec": FUNCTIONS_PROVIDER,
    },
    "tool-call-f1": {"output": [call("get_weather", {"city": "Paris"})], "value": ["get_weather"]},
    "finish-reason": {"output": "Paris", "value": "stop", "provider_metadata": {"finishReason": "stop"}},
}


# -- is-valid-openai-tools-call ------------------------------------------------------------------------


def test_tools_call_passes_when_every_call_matches_its_schema() -> None:
    output = [call("get_weather", {"city": "Paris"}), call("get_weather", {"city": "Lyon", "unit": "c"})]
    verdict = grade(context("is-valid-openai-tools-call", output))
    assert (verdict.passed, verdict.reason) == (True, "Assertion passed")


def test_tools_call_reads_the_whole_message_when_it_has_text_too() -> None:
    message = {"role": "assistant", "content": "Checking", "tool_calls": [call("get_weather", {"city": "X"})]}
    assert grade(context("is-valid-openai-tools-call", message)).passed


def test_tools_call_fails_on_arguments_against_the_schema() -> None:
    verdict = grade(context("is-valid-openai-tools-call", [call("get_weather", {"unit": "k"})]))
    assert not verdict.passed and not verdict.error
    assert verdict.reason.startswith('Call to "get_weather" does not match schema: $')


def test_tools_call_fails_on_an_unknown_function_and_on_text() -> None:
    unknown = grade(context("is-valid-openai-tools-call", [call("send_email", {})]))
    assert unknown.reason == 'Called "send_email", but there is no function with that name'
    text = grade(context("is-valid-openai-tools-call", "It is sunny"))
    assert not text.passed
    assert text.reason == 'OpenAI did not return a valid-looking tools response: "It is sunny"'
    empty = grade(context("is-valid-openai-tools-call", []))
    assert empty.reason == "OpenAI did not return a valid-looking tools response: []"


def test_tools_call_arguments_that_are_not_json_fail_with_the_reason() -> None:
    verdict = grade(context("is-valid-openai-tools-call", [call("get_weather", "{city: Paris")]))
    assert not verdict.passed and not verdict.error
    assert verdict.reason.startswith('Call to "get_weather" has arguments that are not JSON: ')


def test_tools_call_without_tools_in_the_provider_fails() -> None:
    bare = ProviderSpec(id="openai:chat:gpt-4o-mini")
    verdict = grade(
        context("is-valid-openai-tools-call", [call("get_weather", {"city": "P"})], provider=bare)
    )
    assert (verdict.passed, verdict.error, verdict.reason) == (
        False,
        False,
        "No tools configured in provider, but output contains tool calls",
    )


def test_a_parameters_value_that_is_not_a_schema_is_an_error_for_the_row() -> None:
    broken = {**WEATHER, "parameters": {"type": "objekt"}}
    provider = ProviderSpec(id="openai:chat:x", config={"tools": [{"type": "function", "function": broken}]})
    verdict = grade(context("is-valid-openai-tools-call", [call("get_weather", {})], provider=provider))
    assert verdict.error and not verdict.passed
    assert 'the parameters of function "get_weather" are not a JSON Schema' in verdict.reason
    # an error is never inverted into a pass
    negated = grade(context("not-is-valid-openai-tools-call", [call("get_weather", {})], provider=provider))
    assert negated.error and not negated.passed


def test_tools_are_rendered_with_the_vars_but_the_vars_are_not_rendered() -> None:
    templated = {
        **WEATHER,
        "parameters": {"type": "object", "properties": {"city": {"enum": ["{{ city }}"]}}},
    }
    provider = ProviderSpec(
        id="openai:chat:x", config={"tools": [{"type": "function", "function": templated}]}
    )
    output = [call("get_weather", {"city": "Paris"})]
    assert grade(
        context("is-valid-openai-tools-call", output, provider=provider, vars={"city": "Paris"})
    ).passed
    # a var holding template text stays text: {{ 7*7 }} is not computed
    sneaky = {"city": "{{ 7*7 }}"}
    literal = [call("get_weather", {"city": "{{ 7*7 }}"})]
    assert grade(context("is-valid-openai-tools-call", literal, provider=provider, vars=sneaky)).passed
    assert not grade(
        context(
            "is-valid-openai-tools-call",
            [call("get_weather", {"city": "49"})],
            provider=provider,
            vars=sneaky,
        )
    ).passed


# -- is-valid-openai-function-call ---------------------------------------------------------------------


def test_function_call_validates_the_legacy_shape() -> None:
    good = {"name": "get_weather", "arguments": '{"city": "Paris"}'}
    assert grade(context("is-valid-openai-function-call", good, provider=FUNCTIONS_PROVIDER)).passed
    message = {"role": "assistant", "content": None, "function_call": good}
    assert grade(context("is-valid-openai-function-call", message, provider=FUNCTIONS_PROVIDER)).passed
    bad = grade(
        context(
            "is-valid-openai-function-call",
            {"name": "get_weather", "arguments": "{}"},
            provider=FUNCTIONS_PROVIDER,
        )
    )
    assert not bad.passed and "does not match schema" in bad.reason
    shape = grade(context("is-valid-openai-function-call", "text", provider=FUNCTIONS_PROVIDER))
    assert shape.reason == 'OpenAI did not return a valid-looking function call: "text"'
    none = grade(context("is-valid-openai-function-call", good, provider=TOOLS_PROVIDER))
    assert none.reason == 'Called "get_weather", but there is no function with that name'
    # a tool that is not of type function is not offered (promptfoo filters them out)
    odd = ProviderSpec(id="openai:chat:x", config={"tools": [{"type": "retrieval", "function": WEATHER}]})
    assert not grade(
        context("is-valid-openai-tools-call", [call("get_weather", {"city": "P"})], provider=odd)
    ).passed


# -- tool-call-f1 --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("output", "expected", "score"),
    [
        ([call("a", {}), call("b", {})], ["a", "b"], 1.0),
        ([call("a", {}), call("a", {}), call("b", {})], "b, a", 1.0),  # order and repeats do not count
        ([call("a", {})], ["a", "b"], 2 / 3),
        ([call("a", {}), call("c", {})], ["a", "b"], 0.5),
        ("plain text", ["a"], 0.0),
        # Anthropic (promptfoo's text of blocks), Ollama, simple {name} items and Google functionCall
        ('I will look.\n\n{"type":"tool_use","id":"t1","name":"a","input":{}}', "a", 1.0),
        ({"content": "x", "tool_calls": [{"function": {"name": "a", "arguments": "{}"}}]}, "a", 1.0),
        ([{"name": "a"}, {"name": "b"}], "a", 2 / 3),
        ([{"functionCall": {"name": "a", "args": {}}}], "a", 1.0),
        (json.dumps([call("a", {})]), "a", 1.0),
        # promptfoo reads a bare legacy call {name, arguments} as no call, and JSON lines inside text
        ({"name": "a", "arguments": "{}"}, "a", 0.0),
        ('I will call a tool:\n{"tool_calls": [{"function": {"name": "a", "arguments": "{}"}}]}\n', "a", 1.0),
        ('Example:\n```\n{"tool_calls": [{"function": {"name": "a"}}]}\n```\n', "a", 0.0),
        ('Two:\n{"type": "tool_use", "name": "a",\n "input": {}}\ntext {"name": "b"}', "a", 1.0),
    ],
)
def test_tool_call_f1_scores_the_sets(output: Any, expected: Any, score: float) -> None:
    verdict = grade(context("tool-call-f1", output, value=expected))
    assert verdict.score == pytest.approx(score)
    assert verdict.passed is (score == 1.0)  # default threshold 1


def test_tool_call_f1_threshold_and_reason() -> None:
    verdict = grade(context("tool-call-f1", [call("a", {})], value=["a", "b"], threshold=0.6))
    assert verdict.passed
    assert "precision=1.000, recall=0.500" in verdict.reason
    assert "Expected: [a, b], Called: [a]" in verdict.reason
    missed = grade(context("tool-call-f1", "no calls", value="a"))
    assert "Called: [(none)]" in missed.reason


def test_tool_call_f1_needs_a_name() -> None:
    assert declared_problems({"type": "tool-call-f1", "value": " , "})
    assert declared_problems({"type": "tool-call-f1", "value": []})
    assert declared_problems({"type": "tool-call-f1"})
    assert not declared_problems({"type": "tool-call-f1", "value": "a, b"})


def test_is_valid_function_call_is_promptfoos_other_name_for_the_function_call_check() -> None:
    good = {"name": "get_weather", "arguments": '{"city": "Paris"}'}
    bad = {"name": "get_weather", "arguments": '{"city": 3}'}
    for output in (good, bad):
        legacy = grade(context("is-valid-openai-function-call", output, provider=FUNCTIONS_PROVIDER))
        alias = grade(context("is-valid-function-call", output, provider=FUNCTIONS_PROVIDER))
        assert (alias.passed, alias.reason) == (legacy.passed, legacy.reason)
    assert not grade(context("is-valid-function-call", bad, provider=FUNCTIONS_PROVIDER)).passed


# -- finish-reason -------------------------------------------------------------------------------------


def test_finish_reason_compares_ignoring_case() -> None:
    meta = {"finishReason": "tool_calls"}
    assert grade(context("finish-reason", "x", value="TOOL_CALLS", metadata=meta)).passed
    wrong = grade(context("finish-reason", "x", value="stop", metadata=meta))
    assert wrong.reason == 'Expected finish reason "stop" but got "tool_calls"'
    none = grade(context("finish-reason", "x", value="stop"))
    assert (none.passed, none.error, none.reason) == (
        False,
        False,
        "Provider did not supply stop/finish reason",
    )
