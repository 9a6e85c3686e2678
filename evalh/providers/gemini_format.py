"""Gemini's generateContent wire format, as promptfoo writes and reads it (``src/providers/google/util.ts``).

Chat messages become ``contents`` and ``system_instruction``; OpenAI-style tools become
``functionDeclarations`` and ``tool_choice`` a ``functionCallingConfig``; a reply's first candidate becomes
the output (its text, or its parts when one is not text), a blocked prompt or answer a
:class:`~evalh.providers.chat.ReplyRefused` worded as promptfoo's, and safety ratings promptfoo's
``guardrails``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from evalh.providers.chat import ReplyRefused

__all__ = [
    "candidate_output",
    "gemini_contents",
    "gemini_tool_config",
    "gemini_tools",
    "instruction_parts",
    "reply_metadata",
]

_BLOCKED_FINISH = ("SAFETY", "RECITATION", "PROHIBITED_CONTENT", "BLOCKLIST", "SPII")


def gemini_contents(
    messages: Sequence[Mapping[str, Any]], system_instruction: Any = None
) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    """(``contents``, ``system_instruction``) of chat messages, as promptfoo's
    ``geminiFormatAndSystemInstructions``: Gemini-shaped messages (``parts``) pass as they are; OpenAI-style
    ones become ``{role, parts}``; system messages join the configured instruction, after it."""
    if all(isinstance(m.get("parts"), list) and m.get("role", "user") in ("user", "model") for m in messages):
        contents = [dict(m) for m in messages]
        system_parts: list[Any] = []
    else:
        converted = [_as_content(m) for m in messages]
        system_parts = [
            part
            for m in converted
            if m["role"] == "system"
            for part in m["parts"]
            if isinstance(part.get("text"), str)
        ]
        contents = [m for m in converted if m["role"] != "system"]
        if not contents and system_parts:  # a prompt of system text alone is the user's message
            contents, system_parts = [{"role": "user", "parts": system_parts}], []
    configured = instruction_parts(system_instruction)
    parts = configured + system_parts
    return contents, ({"parts": parts} if parts else None)


def _as_content(message: Mapping[str, Any]) -> dict[str, Any]:
    role = "model" if message.get("role") == "assistant" else str(message.get("role", "user"))
    content = message.get("content")
    if isinstance(content, list):
        parts = [
            {"text": item}
            if isinstance(item, str)
            else {"text": item.get("text")}
            if isinstance(item, Mapping) and item.get("type") == "text"
            else item
            for item in content
        ]
    elif isinstance(content, Mapping):
        parts = [dict(content)]
    else:
        parts = [{"text": "" if content is None else str(content)}]
    return {"role": role, "parts": parts}


def instruction_parts(instruction: Any) -> list[Any]:
    if not instruction:
        return []
    if isinstance(instruction, str):
        return [{"text": instruction}]
    if isinstance(instruction, Mapping) and isinstance(instruction.get("parts"), list):
        return list(instruction["parts"])
    raise ValueError("systemInstruction must be text or {parts: [...]}")


def gemini_tools(tools: Any) -> list[Any]:
    """OpenAI-style tools as one ``functionDeclarations`` tool (promptfoo's ``openaiToolsToGoogle``);
    Gemini-style tools (``functionDeclarations``, ``googleSearch``...) as they are."""
    if not isinstance(tools, list):
        return [tools]
    if tools and all(isinstance(t, Mapping) and t.get("type") == "function" for t in tools):
        functions = [t.get("function") or {} for t in tools]
        keys = ("name", "description", "parameters")
        return [{"functionDeclarations": [{k: f[k] for k in keys if f.get(k)} for f in functions]}]
    return tools


def gemini_tool_config(choice: Any) -> dict[str, Any] | None:
    """An OpenAI ``tool_choice`` as Gemini's ``functionCallingConfig``."""
    modes = {"auto": "AUTO", "none": "NONE", "required": "ANY"}
    if isinstance(choice, str) and choice in modes:
        return {"functionCallingConfig": {"mode": modes[choice]}}
    if isinstance(choice, Mapping) and isinstance(choice.get("function"), Mapping):
        names = [choice["function"].get("name")]
        return {"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": names}}
    return None


def candidate_output(payload: Mapping[str, Any]) -> Any:
    """The first candidate's text, or its parts when one is not text; ReplyRefused for a blocked prompt
    or answer (promptfoo's ``getCandidate`` / ``formatCandidateContents`` messages)."""
    candidates = payload.get("candidates") or []
    if not candidates:
        raise ReplyRefused(_no_candidate(payload))
    candidate = candidates[0]
    finish = candidate.get("finishReason")
    if finish in _BLOCKED_FINISH:
        message = f"Response was blocked with finish reason: {finish}"
        flagged = [
            f"{rating.get('category')}: {rating.get('probability')}"
            + (" (BLOCKED)" if rating.get("blocked") else "")
            for rating in candidate.get("safetyRatings") or []
            if rating.get("probability") != "NEGLIGIBLE" or rating.get("blocked")
        ]
        raise ReplyRefused(message + (f"\nSafety ratings: {', '.join(flagged)}" if flagged else ""))
    parts = (candidate.get("content") or {}).get("parts")
    # no parts (a MAX_TOKENS stop before any text) or empty text: promptfoo's "No output found" error
    if not isinstance(parts, list) or not parts:
        raise ReplyRefused(f"No output found in response: {_compact(payload)}")
    if all("text" in part for part in parts):
        text = "".join(str(part["text"]) for part in parts)
        if not text:
            raise ReplyRefused(f"No output found in response: {_compact(payload)}")
        return text
    return parts


def _no_candidate(payload: Mapping[str, Any]) -> str:
    feedback = payload.get("promptFeedback") or {}
    flagged = [
        f"{rating.get('category')}: {rating.get('probability')}"
        for rating in feedback.get("safetyRatings") or []
        if rating.get("probability") != "NEGLIGIBLE"
    ]
    if feedback.get("blockReason"):
        detail = f" (Safety ratings: {', '.join(flagged)})" if flagged else ""
        return f"Response blocked: {feedback['blockReason']}{detail}"
    if flagged:
        return f"Response may have been blocked due to safety filters: {', '.join(flagged)}"
    return "No candidates returned in API response."


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))[:300]


def reply_metadata(payload: Mapping[str, Any]) -> dict[str, Any]:
    """promptfoo's ``guardrails`` (any safety rating above NEGLIGIBLE) and grounding metadata."""
    metadata: dict[str, Any] = {}
    candidate = (payload.get("candidates") or [{}])[0]
    prompt_ratings = (payload.get("promptFeedback") or {}).get("safetyRatings")
    answer_ratings = candidate.get("safetyRatings")
    if prompt_ratings or answer_ratings:
        flagged_input = any(rating.get("probability") != "NEGLIGIBLE" for rating in prompt_ratings or [])
        flagged_output = any(rating.get("probability") != "NEGLIGIBLE" for rating in answer_ratings or [])
        metadata["guardrails"] = {
            "flaggedInput": flagged_input,
            "flaggedOutput": flagged_output,
            "flagged": flagged_input or flagged_output,
        }
    if candidate.get("groundingMetadata") is not None:
        metadata["groundingMetadata"] = candidate["groundingMetadata"]
    return metadata
