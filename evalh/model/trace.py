"""Traces of a row: the OpenTelemetry spans a provider call produced, and the run's tracing settings.

A row whose run traces (``tracing.enabled``) gets a W3C trace context for its provider call (a
``traceparent``, :class:`TraceContext`); the spans exporters send with that trace id are joined to the row
(:class:`RowTrace`). Trace assertions (``trajectory:*``, ``trace-*``) read them through
:class:`TraceSource`, which waits a bounded time for spans that arrive after the provider answered.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

__all__ = [
    "DEFAULT_OTLP_PORT",
    "RowTrace",
    "Span",
    "TraceContext",
    "TraceSource",
    "TracingSettings",
]

DEFAULT_OTLP_PORT = 4318  # OTLP/HTTP's registered port, promptfoo's default


@dataclass(frozen=True)
class TracingSettings:
    """The config's ``tracing:`` block (promptfoo's keys). ``port`` 0: a free port the system picks.
    ``wait_ms``: how long a row's trace assertions wait for spans to arrive after its provider answered
    (evalh's key ``tracing.waitMs``; promptfoo has no such bound)."""

    enabled: bool = False
    port: int = DEFAULT_OTLP_PORT
    receive: bool = True  # otlp.http.enabled: run the receiver (false: spans only from built-in providers)
    wait_ms: int = 3000
    forward_to: str | None = None  # forwarding.endpoint: not followed (no network); kept for the warning
    # otlp.http.redactAttributes: lowercased parts of attribute keys whose values become the redaction
    # marker as spans arrive (promptfoo's rule: the key, lowercased, contains one of them)
    redact_attributes: tuple[str, ...] = ()
    # commandToolNames: lowercased tool names whose calls are `command` steps, beside promptfoo's own
    # (exec_command, local_shell, shell)
    command_tool_names: tuple[str, ...] = ()


@dataclass(frozen=True)
class TraceContext:
    """The W3C trace context of one provider call: ``00-<trace id>-<span id>-01``."""

    trace_id: str  # 32 lowercase hex digits
    span_id: str  # 16 lowercase hex digits: the provider call's span, parent of the provider's own spans

    @property
    def traceparent(self) -> str:
        return f"00-{self.trace_id}-{self.span_id}-01"


@dataclass(frozen=True)
class Span:
    """One span, decoded from OTLP (JSON or protobuf) or recorded by evalh for a built-in provider.

    ``attributes`` hold plain values (str, int, float, bool, lists of those); ``status_code`` is
    ``"UNSET"``, ``"OK"`` or ``"ERROR"``; times are Unix nanoseconds (``end_ns`` None: not ended)."""

    trace_id: str
    span_id: str
    name: str
    start_ns: int
    end_ns: int | None = None
    parent_span_id: str | None = None
    kind: str = "INTERNAL"
    attributes: Mapping[str, Any] = field(default_factory=dict)
    status_code: str = "UNSET"
    status_message: str = ""
    service: str = ""  # the resource's service.name

    @property
    def duration_ms(self) -> float | None:
        return None if self.end_ns is None else max(0, self.end_ns - self.start_ns) / 1e6


@dataclass(frozen=True)
class RowTrace:
    """What a row keeps of its trace: its id and its spans in start order (at most the receiver's bound
    per trace; ``dropped`` counts those it refused)."""

    trace_id: str
    spans: tuple[Span, ...] = ()
    dropped: int = 0


class TraceSource(Protocol):
    """A row's trace as its assertions see it."""

    trace_id: str
    command_tool_names: tuple[str, ...]  # the config's tracing.commandToolNames, for the trajectory steps

    async def spans(self) -> tuple[Span, ...]:
        """The row's spans, after waiting (bounded by ``tracing.waitMs``) for late ones to arrive."""
        ...
