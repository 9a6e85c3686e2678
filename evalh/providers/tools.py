"""Tool calls: the tools a chat provider offers, the calls a model makes, and its finish reason.

The one home of promptfoo's tool-call rules that providers, assertions and reports share:

- :func:`render_tools`: a config's ``tools`` / ``tool_choice`` / ``functions`` / ``function_call``
  (OpenAI's names; a ``file://`` value arrives already loaded by the config layer) with each string
  rendered with the test's vars, as promptfoo's ``maybeLoadToolsFromExternalFile``. The vars are data:
  only the config's template text is rendered.
- :func:`anthropic_tools` / :func:`anthropic_tool_choice`: OpenAI-format tools in Anthropic's shape.
- :func:`normalize_finish_reason`: promptfoo's ``src/util/finishReason.ts``.
- :func:`tool_calls_of`: the calls (name, arguments) an output holds, in any of the shapes the chat
  providers return (OpenAI ``tool_calls`` / ``function_call``, the whole message, Anthropic
  ``tool_use`` blocks, Ollama, Google ``functionCall``), for ``tool-call-f1`` and readable display.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from evalh.templating import render_deep

__all__ = [
    "TOOL_KEYS",
    "ToolCall",
    "anthropic_tool_choice",
    "anthropic_tools",
    "json_blocks",
    "normalize_finish_reason",
    "render_tools",
    "tool_call_lines",
    "tool_calls_of",
]

# The config keys that offer tools, by OpenAI's names (``functions`` / ``function_call``: the legacy API).
TOOL_KEYS: tuple[str, ...] = ("tools", "tool_choice", "functions", "function_call")

# promptfoo's FINISH_REASON_MAP: each provider's stop reason -> OpenAI's value; others pass through.
_FINISH_REASONS: Mapping[str, str] = {
    "stop": "stop",
    "length": "length",
    "content_filter": "content_filter",
    "tool_calls": "tool_calls",
    "function_call": "tool_calls",
    "max_output_tokens": "length",
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "tool_use": "tool_calls",
    "refusal": "content_filter",
    "pause_turn": "pause_turn",
    "tool-calls": "tool_calls",
    "content-filter": "content_filter",
}


_FENCE = re.compile(r"^\s*(`{3,}|~{3,})")  # a Markdown code fence: JSON inside one is not a call
_BLOCK_WORK = 4  # characters json_blocks may parse per character of text (promptfoo's bound)


def normalize_finish_reason(raw: Any) -> str | None:
    """A provider's finish (stop) reason as OpenAI's value, lower-cased; None when there is none."""
    if not isinstance(raw, str) or not raw.strip():
        return None
    key = raw.strip().lower()
    return _FINISH_REASONS.get(key, key)


def render_tools(config: Mapping[str, Any], variables: Mapping[str, Any], where: str) -> dict[str, Any]:
    """The tool settings ``config`` sets, each string rendered once with ``variables``. Raises
    TemplateError (naming ``where``) for a template that does not render."""
    return {
        key: render_deep(config[key], variables, where=f"{where}.{key}" if where else key)
        for key in TOOL_KEYS
        if config.get(key) is not None
    }


def anthropic_tools(tools: Any) -> Any:
    """OpenAI-format tools (``{type: function, function: {name, description, parameters}}``) as
    Anthropic's ``{name, description, input_schema}``; a tool already in Anthropic's shape is kept."""
    if not isinstance(tools, list):
        return tools
    return [_anthropic_tool(tool) for tool in tools]


def _anthropic_tool(tool: Any) -> Any:
    if not isinstance(tool, Mapping) or not isinstance(tool.get("function"), Mapping):
        return tool
    function = tool["function"]
    converted: dict[str, Any] = {"name": function.get("name")}
    if function.get("description"):  # promptfoo leaves out an empty one
        converted["description"] = function["description"]
    converted["input_schema"] = function.get("parameters") or {"type": "object", "properties": {}}
    return converted


def anthropic_tool_choice(choice: Any) -> Any:
    """OpenAI's ``tool_choice`` (``auto``, ``required``, ``none``, ``{type: function, function:
    {name}}``) as Anthropic's (``{type: auto | any | none | tool, name}``); Anthropic's own is kept."""
    if isinstance(choice, str):
        return {"type": {"required": "any"}.get(choice, choice)}
    if isinstance(choice, Mapping) and isinstance(choice.get("function"), Mapping):
        return {"type": "tool", "name": choice["function"].get("name")}
    return choice


@dataclass(frozen=True)
class ToolCall:
    """One call a model made: the tool's name and its arguments (a JSON string, or any value)."""

    name: str
    arguments: Any = None


def tool_calls_of(output: Any) -> list[ToolCall] | None:
    """The tool calls ``output`` holds, or None when it is not a tool-call output. A string is read
    as JSON first, then as text with JSON blocks in it (:func:`json_blocks`: promptfoo's Anthropic
    output joins text and ``tool_use`` blocks)."""
    if not isinstance(output, str):
        return _calls_in_value(output)
    parsed = _json_or_none(output.strip()) if output.lstrip().startswith(("{", "[")) else None
    if parsed is not None:
        return _calls_in_value(parsed)
    calls = [call for _, _, value in json_blocks(output) for call in _calls_in_value(value) or []]
    return calls or None


def json_blocks(text: str) -> Iterator[tuple[int, int, Any]]:
    """The JSON objects and lists in ``text`` that start a line and end one, outside code fences, as
    (first line, last line, value): promptfoo's rule for calls serialised into text. The parsing done
    is bounded by four times the text's length, so a hostile text cannot make it quadratic."""
    if "{" not in text and "[" not in text:
        return
    lines = text.split("\n")
    budget = _BLOCK_WORK * len(text)
    fence, index = "", 0
    while index < len(lines) and budget > 0:
        marker = _FENCE.match(lines[index])
        if fence:  # inside a fence until its closing marker
            closing = marker.group(1) if marker else ""
            fence = "" if closing[:1] == fence[:1] and len(closing) >= len(fence) else fence
        elif marker:
            fence = marker.group(1)
        elif lines[index].lstrip().startswith(("{", "[")):
            last, value, cost = _block_at(lines, index, budget)
            budget -= cost
            if value is not None:
                yield index, last, value
                index = last
        index += 1


def _block_at(lines: list[str], first: int, budget: int) -> tuple[int, Any, int]:
    """The shortest run of lines from ``first`` that parses as a JSON object or list: (its last line,
    the value or None, the characters parsed)."""
    cost = 0
    for last in range(first, len(lines)):
        if not lines[last].rstrip().endswith(("}", "]")):
            continue
        block = "\n".join(lines[first : last + 1])
        cost += len(block)
        if cost > budget:
            break
        value = _json_or_none(block)
        if isinstance(value, dict | list):
            return last, value, cost
    return first, None, cost


def _json_or_none(text: str) -> Any:
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return None


def _calls_in_value(value: Any) -> list[ToolCall] | None:
    if isinstance(value, Mapping):
        for key in ("tool_calls", "function_call"):
            if value.get(key):
                return _calls_in_value(value[key])
        if isinstance(value.get("toolCall"), Mapping):
            return _calls_in_value(value["toolCall"].get("functionCalls"))
        call = _call_of(value)
        return [call] if call else None
    if isinstance(value, list):
        calls = [call for item in value if (call := _call_of(item)) is not None]
        return calls or None
    return None


def _call_of(item: Any) -> ToolCall | None:
    """One call in OpenAI (``{function: {name, arguments}}`` or a legacy ``{name, arguments}``),
    Anthropic (``{type: tool_use, name, input}``) or Google (``{functionCall: {name, args}}``, or
    ``{name, args}``) shape."""
    if not isinstance(item, Mapping):
        return None
    for inner_key, args_key in (("function", "arguments"), ("functionCall", "args")):
        inner = item.get(inner_key)
        if isinstance(inner, Mapping) and isinstance(inner.get("name"), str):
            return ToolCall(inner["name"], inner.get(args_key))
    if isinstance(item.get("name"), str):
        if item.get("type") == "tool_use":
            return ToolCall(item["name"], item.get("input"))
        for args_key in ("arguments", "args"):
            if args_key in item or item.get("type") == "function_call":
                return ToolCall(item["name"], item.get(args_key))
    return None


def tool_call_lines(output: Any) -> list[str] | None:
    """An output that is tool calls as ``name(arguments)`` lines (the arguments as compact JSON),
    with the message's text in its place; None for any other output."""
    calls = tool_calls_of(output)
    if not calls:
        return None
    if isinstance(output, str) and _json_or_none(output.strip()) is None:
        return _text_lines(output)
    lines = [_call_line(call) for call in calls]
    content = output.get("content") if isinstance(output, Mapping) else None
    return [content, *lines] if isinstance(content, str) and content.strip() else lines


def _text_lines(text: str) -> list[str]:
    """Text with calls in it: each block of calls as its lines, the text around them kept."""
    lines, shown, source = [], 0, text.split("\n")
    for first, last, value in json_blocks(text):
        calls = _calls_in_value(value)
        if calls:
            before = "\n".join(source[shown:first]).strip()
            lines.extend([before] if before else [])
            lines.extend(_call_line(call) for call in calls)
            shown = last + 1
    rest = "\n".join(source[shown:]).strip()
    return [*lines, rest] if rest else lines


def _call_line(call: ToolCall) -> str:
    return f"{call.name}({_arguments_text(call.arguments)})"


def _arguments_text(arguments: Any) -> str:
    if arguments is None:
        return ""
    if isinstance(arguments, str):
        parsed = _json_or_none(arguments)
        if parsed is None:
            return arguments
        arguments = parsed
    return json.dumps(arguments, ensure_ascii=False, separators=(", ", ": "))
