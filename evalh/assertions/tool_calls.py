"""Assertions on tool calls, with promptfoo's semantics (``src/assertions/openai.ts``, ``toolCallF1.ts``,
``finishReason.ts``, ``src/providers/openai/util.ts`` ``validateFunctionCall``).

- ``is-valid-openai-tools-call``: the output is a non-empty list of ``{type: function, function: {name,
  arguments}}`` calls (or a message holding ``tool_calls``), each naming a function the provider's
  ``tools`` offer, with JSON arguments that validate against that function's ``parameters`` schema.
- ``is-valid-openai-function-call``: the same for the legacy ``function_call`` and ``functions``
  (``is-valid-function-call`` is promptfoo's other name for it).
- ``tool-call-f1``: the F1 of the set of tool names called against the expected names.
- ``finish-reason``: the provider's normalised finish reason equals the value (case-insensitive).

The tools are the provider's config (a ``file://`` value already loaded by the config layer), rendered
with the test's vars as the provider renders them for its call. A ``parameters`` value that is not a
JSON Schema, or tools that do not render, make the row an ERROR that says so.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from evalh.assertions.base import AssertionContext
from evalh.assertions.registry import NONBLANK_TEXT, UNUSED_VALUE, assertion
from evalh.assertions.structured import json_schema_validator, schema_violation
from evalh.errors import TemplateError
from evalh.model import AssertionResult, Measurement
from evalh.providers.tools import json_blocks, render_tools

__all__ = ["NO_FINISH_REASON", "called_tool_names", "expected_tool_names"]

NO_FINISH_REASON = "Provider did not supply stop/finish reason"
_FAMILY = "tool-calls"


def _compact(value: Any) -> str:
    """JSON.stringify's text of a value, for promptfoo's reasons."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def _offered(ctx: AssertionContext, key: str) -> list[Any] | AssertionResult | None:
    """The provider's ``tools`` or ``functions`` rendered with the test's vars (None: none offered)."""
    spec = ctx.provider_spec
    if spec is None or spec.config.get(key) is None:
        return None
    where = f"{spec.path}.config" if spec.path else "config"
    try:
        offered = render_tools({key: spec.config[key]}, ctx.vars, where)[key]
    except TemplateError as error:
        return AssertionResult.failure(f"the provider's {key} do not render: {error.render()}")
    if not isinstance(offered, list):
        return AssertionResult.failure(f"the provider's {key} must be a list (got {_compact(offered)[:80]})")
    return offered


def _check_call(name: str, arguments: str, functions: list[Any]) -> Measurement | AssertionResult | None:
    """What is wrong with one call (a fail, or an ERROR for an unusable schema); None when it is valid."""
    try:
        parsed = json.loads(arguments)
    except (ValueError, RecursionError) as error:
        return Measurement.pass_fail(False, f'Call to "{name}" has arguments that are not JSON: {error}')
    schema = next(
        (f.get("parameters") for f in functions if isinstance(f, Mapping) and f.get("name") == name), None
    )
    if not schema:
        return Measurement.pass_fail(False, f'Called "{name}", but there is no function with that name')
    validator = json_schema_validator(schema)
    if isinstance(validator, str) or validator is None:
        problem = validator or "it is empty"
        return AssertionResult.failure(
            f'the parameters of function "{name}" are not a JSON Schema: {problem}'
        )
    violation = schema_violation(validator, parsed)
    if violation is not None:
        return Measurement.pass_fail(False, f'Call to "{name}" does not match schema: {violation}')
    return None


def _check_calls(calls: list[Mapping[str, Any]], functions: list[Any]) -> Measurement | AssertionResult:
    for call in calls:
        problem = _check_call(call["name"], call["arguments"], functions)
        if problem is not None:
            return problem
    return Measurement.pass_fail(True, "Assertion passed")


def _well_formed(call: Any) -> bool:
    return (
        isinstance(call, Mapping)
        and isinstance(call.get("name"), str)
        and isinstance(call.get("arguments"), str)
    )


@assertion(
    "is-valid-openai-tools-call",
    family=_FAMILY,
    description="Output is OpenAI tool calls, each naming one of the provider's tools with arguments "
    "that validate against its parameters schema",
    value_schema=UNUSED_VALUE,
)
def is_valid_openai_tools_call(ctx: AssertionContext) -> Measurement | AssertionResult:
    output = _held(ctx.output, "tool_calls")
    calls = output if isinstance(output, list) else []
    functions = [
        call["function"] for call in calls if isinstance(call, Mapping) and _well_formed(call.get("function"))
    ]
    if not functions or len(functions) != len(calls):
        return _misshapen("tools response", output)
    return _graded(ctx, functions, "tools")


@assertion(
    "is-valid-openai-function-call",
    family=_FAMILY,
    description="Output is an OpenAI function call (legacy function_call) naming one of the provider's "
    "functions with arguments that validate against its parameters schema",
    value_schema=UNUSED_VALUE,
)
def is_valid_openai_function_call(ctx: AssertionContext) -> Measurement | AssertionResult:
    output = _held(ctx.output, "function_call")
    if not _well_formed(output):
        return _misshapen("function call", output)
    return _graded(ctx, [output], "functions")


@assertion(
    "is-valid-function-call",
    family=_FAMILY,
    description="Alias of is-valid-openai-function-call (promptfoo runs both names with one handler)",
    value_schema=UNUSED_VALUE,
)
def is_valid_function_call(ctx: AssertionContext) -> Measurement | AssertionResult:
    return is_valid_openai_function_call(ctx)


def _held(output: Any, key: str) -> Any:
    """The calls a whole message holds under ``key`` (promptfoo reads them there), else the output."""
    return output[key] if isinstance(output, Mapping) and key in output else output


def _misshapen(what: str, output: Any) -> Measurement:
    return Measurement.pass_fail(False, f"OpenAI did not return a valid-looking {what}: {_compact(output)}")


def _graded(ctx: AssertionContext, calls: list[Any], key: str) -> Measurement | AssertionResult:
    """``calls`` checked against the provider's ``tools`` (each one's ``function``) or ``functions``."""
    offered = _offered(ctx, key)
    if isinstance(offered, AssertionResult):
        return offered
    if key == "functions":  # promptfoo: no functions offered is a call to a function that is not there
        return _check_calls(calls, offered or [])
    if not offered:
        return Measurement.pass_fail(False, "No tools configured in provider, but output contains tool calls")
    functions = [
        tool["function"]
        for tool in offered
        if isinstance(tool, Mapping) and tool.get("type") == "function" and "function" in tool
    ]
    return _check_calls(calls, functions)


# ------------------------------------------------------------------------------------------ tool-call-f1


def expected_tool_names(value: Any) -> list[str]:
    """The expected names: a list, or a comma-separated string; each trimmed, empty ones dropped."""
    items = value if isinstance(value, list) else str(value or "").split(",")
    return [name for name in (str(item).strip() for item in items) if name]


def called_tool_names(output: Any) -> set[str]:
    """The names of the tools ``output`` calls, by promptfoo's ``extractToolNames``: OpenAI
    ``{tool_calls: [...]}`` (each item's ``function.name`` and ``name``), one Anthropic ``tool_use``
    block, one Responses ``function_call`` item, Google ``functionCall`` / ``toolCall.functionCalls``,
    or a list of such items or of ``{function: {name}}`` / ``{name}``; a string is read as JSON, else
    as text with JSON blocks in it. A bare ``{name, arguments}`` object is not read as a call."""
    if isinstance(output, str):
        parsed = _json_value(output)
        if parsed is _NOT_JSON:
            return {name for _, _, block in json_blocks(output) for name in called_tool_names(block)}
        return called_tool_names(parsed)
    if isinstance(output, Mapping):
        return _names_in_object(output)
    if isinstance(output, list):
        return {name for item in output if isinstance(item, Mapping) and (name := _item_name(item))}
    return set()


_NOT_JSON = object()


def _json_value(text: str) -> Any:
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return _NOT_JSON


def _names_in_object(value: Mapping[str, Any]) -> set[str]:
    if isinstance(value.get("tool_calls"), list):
        names = set()
        for call in value["tool_calls"]:
            if isinstance(call, Mapping):
                function = call.get("function")
                names |= {n for n in (_name(function), _name(call)) if n}
        return names
    if value.get("type") in ("tool_use", "function_call") and _name(value):
        return {value["name"]}
    if isinstance(value.get("functionCall"), Mapping):
        name = _name(value["functionCall"])
        return {name} if name else set()
    if isinstance(value.get("toolCall"), Mapping):
        calls = value["toolCall"].get("functionCalls")
        return {n for call in calls if (n := _name(call))} if isinstance(calls, list) else set()
    return set()


def _item_name(item: Mapping[str, Any]) -> str | None:
    if item.get("type") == "tool_use" and _name(item):
        return _name(item)
    for inner in ("functionCall", "function"):
        if isinstance(item.get(inner), Mapping):
            return _name(item[inner])
    return _name(item)


def _name(value: Any) -> str | None:
    name = value.get("name") if isinstance(value, Mapping) else None
    return name if isinstance(name, str) else None


def _check_f1_value(value: Any, _config: Mapping[str, Any]) -> str | None:
    if not expected_tool_names(value):
        return "tool-call-f1 needs at least one expected tool name (a list, or a comma-separated text)"
    return None


_F1_VALUE: Mapping[str, Any] = {
    "anyOf": [
        NONBLANK_TEXT,
        {"type": "array", "items": {"type": "string"}, "minItems": 1},
    ],
    "description": "The expected tool names: a list, or a comma-separated text.",
}


@assertion(
    "tool-call-f1",
    family=_FAMILY,
    description="F1 of the set of tool names called against the expected names (order and repeats "
    "do not count; default threshold 1)",
    requires_value=True,
    value_schema=_F1_VALUE,
    check=_check_f1_value,
    direction="higher",
    bounds=(0.0, 1.0),
    default_threshold=1.0,
    threshold_meaning="min F1",
)
def tool_call_f1(ctx: AssertionContext) -> Measurement:
    expected = set(expected_tool_names(ctx.value))
    called = called_tool_names(ctx.output)
    both = len(expected & called)
    precision = both / len(called) if called else 0.0
    recall = both / len(expected) if expected else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    suffix = (
        f" (precision={precision:.3f}, recall={recall:.3f}). Expected: [{', '.join(sorted(expected))}], "
        f"Called: [{', '.join(sorted(called)) or '(none)'}]"
    )
    return Measurement(
        value=f1,
        subject=f"Tool Call F1 {f1:.3f}",
        suffix=suffix,
        details={"precision": precision, "recall": recall, "called": sorted(called)},
    )


# ----------------------------------------------------------------------------------------- finish-reason


@assertion(
    "finish-reason",
    family=_FAMILY,
    description="The provider's finish reason (normalised: stop, length, content_filter, tool_calls) "
    "equals the value, ignoring case",
    requires_value=True,
    value_schema=NONBLANK_TEXT,
)
def finish_reason(ctx: AssertionContext) -> Measurement:
    reason = ctx.provider_metadata.get("finishReason")
    if not isinstance(reason, str) or not reason:
        return Measurement.pass_fail(False, NO_FINISH_REASON)
    expected = str(ctx.value)
    if expected.lower() == reason.lower():
        return Measurement.pass_fail(True, "Assertion passed")
    return Measurement.pass_fail(False, f'Expected finish reason "{expected}" but got "{reason}"')
