"""The Converse API's wire format, as promptfoo writes and reads it (``src/providers/bedrock/converse.ts``).

A rendered prompt becomes ``messages`` and ``system`` (a JSON chat prompt's messages as content blocks; a
text prompt split on lines that start with ``system:`` / ``user:`` / ``assistant:``); OpenAI-style or
Converse-style tools become ``toolConfig``; a reply's content blocks become the output text (thinking as
``<thinking>`` text, tool uses as ``tool_use`` JSON).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from evalh.providers.chat import RequestShapeError, json_list

__all__ = ["converse_messages", "converse_output", "converse_tools", "pick"]


def _json_text(value: Any) -> str:
    """JavaScript's JSON.stringify of a value (compact), as promptfoo writes blocks into text."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def converse_messages(
    prompt: str | Sequence[Mapping[str, Any]],
) -> tuple[list[dict[str, Any]], list[dict[str, Any]] | None]:
    """(``messages``, ``system``) of a rendered prompt, as promptfoo's ``parseConverseMessages``."""
    chat = prompt if not isinstance(prompt, str) else _chat_of(json_list(prompt))
    if chat is None:
        return _text_messages(str(prompt))
    system: list[dict[str, Any]] = []
    messages: list[dict[str, Any]] = []
    for message in chat:
        role, content = message.get("role"), message.get("content")
        if role == "system":
            system.append({"text": content if isinstance(content, str) else _json_text(content)})
        elif role in ("user", "assistant"):
            messages.append({"role": role, "content": _content_blocks(content)})
    return messages, system or None


def _chat_of(value: list[Any] | None) -> list[Mapping[str, Any]] | None:
    return value if value is not None and all(isinstance(item, Mapping) for item in value) else None


def _content_blocks(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"text": content}]
    if not isinstance(content, list):
        return [{"text": _json_text(content)}]
    blocks: list[dict[str, Any]] = []
    for block in content:
        if isinstance(block, str):
            blocks.append({"text": block})
        elif block.get("type") == "text":
            blocks.append({"text": block.get("text")})
        elif block.get("type") == "tool_use" or "toolUse" in block:
            use = block.get("toolUse") or block
            blocks.append(
                {
                    "toolUse": {
                        "toolUseId": use.get("toolUseId") or use.get("id"),
                        **pick(use, "name", "input"),
                    }
                }
            )
        elif block.get("type") == "tool_result" or "toolResult" in block:
            result = block.get("toolResult") or block
            inner = result.get("content")
            blocks.append(
                {
                    "toolResult": {
                        "toolUseId": result.get("toolUseId") or result.get("tool_use_id"),
                        "content": [{"text": c} if isinstance(c, str) else c for c in inner]
                        if isinstance(inner, list)
                        else [{"text": str(inner)}],
                        **pick(result, "status"),
                    }
                }
            )
        else:  # images and documents are not converted: sent as their JSON text
            blocks.append({"text": _json_text(block)})
    return blocks


def pick(mapping: Mapping[str, Any], *keys: str) -> dict[str, Any]:
    return {key: mapping[key] for key in keys if mapping.get(key) is not None}


def _text_messages(prompt: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]] | None]:
    """A text prompt split on ``system:`` / ``user:`` / ``assistant:`` lines (case-insensitive)."""
    messages: list[dict[str, Any]] = []
    system: list[dict[str, Any]] | None = None
    role: str | None = None
    lines: list[str] = []

    def flush() -> None:
        if role and lines:
            messages.append({"role": role, "content": [{"text": "\n".join(lines)}]})
        lines.clear()

    for line in prompt.split("\n"):
        stripped = line.strip()
        lowered = stripped.lower()
        if lowered.startswith("system:"):
            flush()
            system, role = [{"text": stripped[7:].strip()}], None
        elif lowered.startswith(("user:", "assistant:")):
            flush()
            role = "user" if lowered.startswith("user:") else "assistant"
            rest = stripped[len(role) + 1 :].strip()
            if rest:
                lines.append(rest)
        else:
            role = role or "user"
            lines.append(line)
    flush()
    return messages or [{"role": "user", "content": [{"text": prompt}]}], system


def converse_output(blocks: Sequence[Mapping[str, Any]], show_thinking: bool = True) -> str:
    """promptfoo's ``extractTextFromContentBlocks``; with tool uses, only those (as it answers)."""
    uses = [block for block in blocks if block.get("toolUse")]
    parts: list[str] = []
    for block in uses or blocks:
        if block.get("text"):
            parts.append(str(block["text"]))
        elif block.get("reasoningContent") and show_thinking:
            parts.extend(_thinking(block["reasoningContent"]))
        elif block.get("toolUse"):
            use = block["toolUse"]
            parts.append(
                _json_text(
                    {
                        "type": "tool_use",
                        "id": use.get("toolUseId"),
                        "name": use.get("name"),
                        **pick(use, "input"),
                    }
                )
            )
    return "\n\n".join(parts)


def _thinking(reasoning: Mapping[str, Any]) -> list[str]:
    if reasoning.get("reasoningText"):
        text = str(reasoning["reasoningText"].get("text") or "")
        signature = reasoning["reasoningText"].get("signature")
        if not text.strip():
            return []
        return [f"<thinking>\n{text}\n</thinking>", *([f"Signature: {signature}"] if signature else [])]
    return ["<thinking>[Redacted]</thinking>"] if reasoning.get("redactedContent") else []


def converse_tools(tools: Any, choice: Any) -> dict[str, Any] | None:
    """``toolConfig`` from OpenAI-style or Converse-style tools (promptfoo's conversion)."""
    if not tools or choice == "none":
        return None
    if not isinstance(tools, list) or not all(isinstance(tool, Mapping) for tool in tools):
        raise RequestShapeError(f"tools must be a list of tool definitions (got {_json_text(tools)[:200]})")
    specs = []
    for tool in tools:
        if tool.get("toolSpec"):
            specs.append({"toolSpec": tool["toolSpec"]})
            continue
        function = tool.get("function") if tool.get("type") == "function" else tool
        if not isinstance(function, Mapping) or not function.get("name"):
            raise RequestShapeError(f"Invalid tool configuration: {_json_text(tool)[:200]}")
        schema = function.get("parameters") or function.get("input_schema") or {}
        specs.append({"toolSpec": {**pick(function, "name", "description"), "inputSchema": {"json": schema}}})
    config: dict[str, Any] = {"tools": specs}
    if choice in ("any", "required"):
        config["toolChoice"] = {"any": {}}
    elif isinstance(choice, Mapping) and (choice.get("tool") or choice.get("function")):
        named = choice.get("tool") or choice.get("function") or {}
        config["toolChoice"] = {"tool": {"name": named.get("name")}}
    elif choice is not None:
        config["toolChoice"] = {"auto": {}}
    return config
