"""A row's spans as an agent's trajectory: promptfoo's normalised steps, its glob matching, its summary.

promptfoo (``src/assertions/trajectoryUtils.ts``, ``traceUtils.ts``, ``src/tracing/toolAttributes.ts``)
turns each span, in start order, into a step of a type: ``tool`` (a tool-name attribute: ``tool.name``,
``gen_ai.tool.name``, ``function.name``, ...), ``command``, ``search``, ``reasoning``, ``message`` or plain
``span``, with the names it answers to (its aliases) and, for tools and commands, the call's arguments.
The trajectory assertions (``trajectory.py``) match these steps; the rules here are promptfoo's, so a
config written for promptfoo finds the same steps. Span attributes are data from the agent: arguments
that are JSON text are parsed, within bounds (size, depth), and stay text otherwise.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from evalh.assertions.strings import loads_strict, stringify_value
from evalh.model import Span
from evalh.secrets import redact_config

__all__ = [
    "MAX_ARGUMENT_CHARS",
    "MAX_ARGUMENT_DEPTH",
    "Step",
    "StepMatcher",
    "format_args",
    "matches_pattern",
    "status_number",
    "trajectory_steps",
]

# A tool call's arguments as JSON text are parsed up to this size and nesting; beyond, they stay text
# (an agent's span is not a reason to parse megabytes, and a deep one would exhaust the stack).
MAX_ARGUMENT_CHARS = 1024 * 1024
MAX_ARGUMENT_DEPTH = 64


# promptfoo's attribute families (src/tracing/toolAttributes.ts), in its order: the first key present wins.
_TOOL_NAME_KEYS = (
    "tool.name",
    "tool_name",
    "tool",
    "function.name",
    "function_name",
    "ai.toolCall.name",
    "gen_ai.tool.name",
    "agent.tool_name",
    "agent.tool",
    "agent.toolName",
    "codex.mcp.tool",
)
_TOOL_ARGUMENT_KEYS = (
    *(f"tool{suffix}" for suffix in (".args", ".arguments", ".input", "_args", "_arguments", "_input")),
    *(f"function{suffix}" for suffix in (".args", ".arguments", ".input", "_args", "_arguments")),
    *(
        f"{prefix}{suffix}"
        for prefix in ("ai.toolCall", "gen_ai.tool")
        for suffix in (".args", ".arguments", ".input")
    ),
    "gen_ai.tool.call.args",
    "gen_ai.tool.call.arguments",
    *(
        f"{prefix}{suffix}"
        for prefix in ("agent.tool", "codex.mcp")
        for suffix in (".args", ".arguments", ".input")
    ),
    "args",
    "arguments",
    "input",
)
_COMMAND_KEYS = ("codex.command", "command", "command.name", "command_name")
_SEARCH_KEYS = ("codex.search.query", "search.query", "search_query")
_COMMAND_TOOL_NAMES = frozenset({"exec_command", "local_shell", "shell"})

_NAME_LIKE_KEY = re.compile(r"tool.?name|function.?name", re.IGNORECASE)
_TOOL_KEY = re.compile(r"(^|[._])tool($|[._])", re.IGNORECASE)
_NOT_TOOL_KEY = re.compile(r"result|output|definition", re.IGNORECASE)
_ARGUMENT_KEY = re.compile(r"(^|[._])(arguments|args|input)($|[._])", re.IGNORECASE)
_NOT_ARGUMENT_KEY = re.compile(r"result|output|error|status", re.IGNORECASE)
_COMMAND_KEY = re.compile(r"command", re.IGNORECASE)
_NOT_COMMAND_KEY = re.compile(r"output|result", re.IGNORECASE)
_SEARCH_NAME = re.compile(r"(^|[\s._:/-])(search|find|lookup|retriev(?:e|al))($|[\s._:/-])", re.IGNORECASE)
_SEARCH_KEY = re.compile(r"(^|[._])(search|lookup|retriev(?:e|al))($|[._])", re.IGNORECASE)
_REASONING_NAME = re.compile(r"^reasoning([_\s]|$)", re.IGNORECASE)

_STATUS_NUMBERS = {"UNSET": 0, "OK": 1, "ERROR": 2}  # OTLP's StatusCode, as promptfoo reports it


@dataclass(frozen=True)
class Step:
    """One span as a trajectory step (promptfoo's TrajectoryStep)."""

    type: str
    name: str
    aliases: tuple[str, ...]
    span: Span
    args: Any = None
    has_args: bool = False  # the span carried arguments (``args`` may be JSON null)

    @property
    def label(self) -> str:
        """``tool:search_orders``: how reasons list a step."""
        return f"{self.type}:{self.name}"


@dataclass(frozen=True)
class StepMatcher:
    """Which steps a value names: a glob (``pattern``, else ``name``) and optional step types."""

    pattern: str | None = None
    name: str | None = None
    types: tuple[str, ...] = ()

    @classmethod
    def of(cls, value: Any, default_type: str | None = None) -> StepMatcher:
        """A string (a pattern) or a mapping ``{name | pattern, type}``, as validated by the schema."""
        if isinstance(value, str):
            return cls(pattern=value, types=(default_type,) if default_type else ())
        kind = value.get("type")
        types = (kind,) if isinstance(kind, str) else tuple(kind or ())
        if not types and default_type:
            types = (default_type,)
        return cls(pattern=value.get("pattern") or None, name=value.get("name") or None, types=types)

    @property
    def label(self) -> str:
        return self.pattern or self.name or "*"

    def matches(self, step: Step) -> bool:
        if self.types and step.type not in self.types:
            return False
        glob = self.pattern or self.name
        return glob is None or any(matches_pattern(alias, glob) for alias in step.aliases)


@functools.lru_cache(maxsize=256)
def _glob(pattern: str) -> re.Pattern[str]:
    # runs of * are one *: the same matches, without the backtracking a long run costs
    parts = [".*" if char == "*" else "." if char == "?" else re.escape(char) for char in pattern]
    collapsed = [
        part for index, part in enumerate(parts) if not (part == ".*" and index and parts[index - 1] == ".*")
    ]
    return re.compile("".join(collapsed), re.IGNORECASE)


def matches_pattern(text: str, pattern: str) -> bool:
    """promptfoo's glob: ``*`` any characters, ``?`` one, the whole text, case-insensitively."""
    return _glob(pattern).fullmatch(text) is not None


def status_number(span: Span) -> int:
    """The span's status as OTLP numbers it (0 unset, 1 ok, 2 error): what promptfoo's reasons show."""
    return _STATUS_NUMBERS.get(span.status_code, 0)


def format_args(args: Any, present: bool = True) -> str:
    """Arguments for a reason: compact JSON (``(none)`` when the span carried none), the values of
    secret-looking keys (``api_key``, ``token``) redacted as everywhere else: an agent's tool call may
    carry a credential, and a reason goes into the report."""
    if not present:
        return "(none)"
    try:
        return json.dumps(redact_config(args), ensure_ascii=False, separators=(",", ":"), default=str)
    except (TypeError, ValueError):
        return str(args)


# ------------------------------------------------------------------------------------- attributes


def _structured(value: Any) -> tuple[bool, Any]:
    """(present?, value) of an attribute that may hold JSON text: promptfoo parses a string as JSON
    and keeps the trimmed text when it does not parse; blank and null are absent."""
    if value is None:
        return False, None
    if isinstance(value, str):
        text = value.strip()
        if not text:
            return False, None
        return True, _parsed_json(text)
    return True, value


def _parsed_json(text: str) -> Any:
    if len(text) > MAX_ARGUMENT_CHARS:
        return text
    try:
        parsed = loads_strict(text)
    except ValueError:
        return text
    return text if _deeper_than(parsed, MAX_ARGUMENT_DEPTH) else parsed


def _deeper_than(value: Any, limit: int) -> bool:
    level: list[Any] = [value]
    depth = 0
    while level:
        containers = [item for item in level if isinstance(item, dict | list)]
        if not containers:
            return False
        depth += 1
        if depth > limit:
            return True
        level = [
            child for item in containers for child in (item.values() if isinstance(item, dict) else item)
        ]
    return False


def _first_text(attributes: Mapping[str, Any], keys: Sequence[str]) -> str | None:
    for key in keys:
        value = attributes.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return None


def _is_json_container(text: str) -> bool:
    if not text.startswith(("[", "{")):
        return False
    try:
        return isinstance(loads_strict(text), dict | list)
    except ValueError:
        return False


def tool_name(span: Span) -> str | None:
    """The tool a span calls: a known key, else a key that looks like one, else an ``mcp .../tool`` name."""
    attributes = span.attributes
    direct = _first_text(attributes, _TOOL_NAME_KEYS)
    if direct:
        return direct
    for key, value in attributes.items():
        if not isinstance(value, str) or not value.strip():
            continue
        text = value.strip()
        if len(text) <= MAX_ARGUMENT_CHARS and _is_json_container(text):
            continue
        if _NAME_LIKE_KEY.search(key):
            return text
        if _TOOL_KEY.search(key) and not _NOT_TOOL_KEY.search(key):
            return text
    if span.name.startswith("mcp "):
        slash = span.name.rfind("/")
        if slash != -1 and slash < len(span.name) - 1:
            return span.name[slash + 1 :].strip()
    return None


def tool_args(span: Span) -> tuple[bool, Any]:
    """(present?, arguments) of a tool call: a known key, else a key named like arguments."""
    attributes = span.attributes
    for key in _TOOL_ARGUMENT_KEYS:
        present, value = _structured(attributes.get(key))
        if present:
            return True, value
    for key, raw in attributes.items():
        if _NOT_ARGUMENT_KEY.search(key) or not _ARGUMENT_KEY.search(key):
            continue
        present, value = _structured(raw)
        if present:
            return True, value
    return False, None


def _command(span: Span, name: str | None, args: tuple[bool, Any], shells: frozenset[str]) -> str | None:
    """The shell command a span ran: a command attribute, a shell tool's (``shells``) ``cmd`` /
    ``command`` / ``commands`` argument, or an ``exec <command>`` span name."""
    attributes = span.attributes
    direct = _first_text(attributes, _COMMAND_KEYS)
    if direct:
        return direct
    for key, value in attributes.items():
        if (
            isinstance(value, str)
            and value.strip()
            and _COMMAND_KEY.search(key)
            and not _NOT_COMMAND_KEY.search(key)
        ):
            return value.strip()
    present, arguments = args
    if _is_command_tool(name, shells) and present and isinstance(arguments, Mapping):
        for key, separator in (("cmd", " "), ("command", " "), ("commands", "; ")):
            if key not in arguments:
                continue
            command = arguments[key]
            if isinstance(command, str) and command.strip():
                return command.strip()
            if isinstance(command, list | tuple):
                parts = [stringify_value(part).strip() for part in command]
                joined = separator.join(part for part in parts if part)
                if joined:
                    return joined
            break  # promptfoo reads the first of the three keys present, and only that one
    if span.name.startswith("exec "):
        return span.name[5:].strip()
    return None


def _is_command_tool(name: str | None, shells: frozenset[str]) -> bool:
    return bool(name) and name is not None and name.strip().lower() in shells


def _search_query(span: Span) -> str | None:
    attributes = span.attributes
    direct = _first_text(attributes, _SEARCH_KEYS)
    if direct:
        return direct
    query = _first_text(attributes, ("query",))
    if query and _is_search_like(span):
        return query
    if span.name.startswith("search "):
        return span.name[7:].removeprefix('"').removesuffix('"').strip()
    return None


def _is_search_like(span: Span) -> bool:
    if _SEARCH_NAME.search(span.name) or span.name.startswith("search "):
        return True
    return any(key != "query" and _SEARCH_KEY.search(key) for key in span.attributes)


def _is_reasoning(span: Span) -> bool:
    return span.attributes.get("codex.item.type") == "reasoning" or bool(_REASONING_NAME.match(span.name))


def _is_message(span: Span) -> bool:
    return span.attributes.get("codex.item.type") == "agent_message" or span.name in (
        "agent response",
        "send input",
    )


def _executable(command: str) -> str | None:
    words = command.strip().split()
    return words[0] if words else None


def _step(span: Span, shells: frozenset[str]) -> Step:
    """promptfoo's order of precedence: a shell tool's command, a tool, a command, a search, reasoning,
    a message, else a plain span. ``shells``: the tool names whose calls are commands."""
    name = tool_name(span)
    args = tool_args(span) if name else (False, None)
    command = _command(span, name, args, shells)
    aliases: dict[str, None] = {span.name: None}  # ordered and unique, as promptfoo's Set
    if command and _is_command_tool(name, shells):
        aliases.update(dict.fromkeys(a for a in (command, name, _executable(command)) if a))
        return Step("command", command, tuple(aliases), span, args[1], args[0])
    if name:
        aliases[name] = None
        return Step("tool", name, tuple(aliases), span, args[1], args[0])
    if command:
        aliases.update(dict.fromkeys(a for a in (command, _executable(command)) if a))
        return Step("command", command, tuple(aliases), span)
    query = _search_query(span)
    if query:
        aliases[query] = None
        return Step("search", query, tuple(aliases), span)
    if _is_reasoning(span):
        aliases["reasoning"] = None
        return Step("reasoning", span.name, tuple(aliases), span)
    if _is_message(span):
        aliases["message"] = None
        return Step("message", span.name, tuple(aliases), span)
    return Step("span", span.name, tuple(aliases), span)


# A row's trace assertions all read the same settled tuple of spans (its TraceSource's snapshot), and each
# trajectory assertion would otherwise normalise every span again (tool names, JSON arguments): 80% of a
# row's grading over a 1,000-span trace with four of them. The steps of the last few such tuples are kept,
# by the tuple's identity (the entry holds the tuple, so its id is not reused while kept).
_RECENT_STEPS: dict[tuple[int, tuple[str, ...]], tuple[tuple[Span, ...], tuple[Step, ...]]] = {}
_RECENT_LIMIT = 64


def trajectory_steps(spans: Sequence[Span], command_tools: tuple[str, ...] = ()) -> tuple[Step, ...]:
    """The spans as steps, by start time, then end time, then arrival; computed once per tuple of spans
    (a list, which may change, every time). ``command_tools``: the config's ``tracing.commandToolNames``
    (lowercased), tools whose calls are ``command`` steps as promptfoo's shell tools are."""
    if not isinstance(spans, tuple):
        return _steps_of(spans, command_tools)
    key = (id(spans), command_tools)
    kept = _RECENT_STEPS.get(key)
    if kept is not None and kept[0] is spans:
        return kept[1]
    steps = _steps_of(spans, command_tools)
    if len(_RECENT_STEPS) >= _RECENT_LIMIT:
        del _RECENT_STEPS[next(iter(_RECENT_STEPS))]  # the oldest: rows are graded one after another
    _RECENT_STEPS[key] = (spans, steps)
    return steps


def _steps_of(spans: Sequence[Span], command_tools: tuple[str, ...]) -> tuple[Step, ...]:
    shells = _COMMAND_TOOL_NAMES.union(command_tools)
    ordered = sorted(
        enumerate(spans),
        key=lambda item: (
            item[1].start_ns,
            item[1].end_ns if item[1].end_ns is not None else item[1].start_ns,
            item[0],
        ),
    )
    return tuple(_step(span, shells) for _, span in ordered)
