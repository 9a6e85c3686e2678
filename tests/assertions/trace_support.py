"""Trace assertions run as the runner runs them, on real Span objects held by an in-memory TraceSource."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import Mapping, Sequence
from typing import Any

from evalh.assertions.base import AssertionContext, GradingServices
from evalh.model import GradedAssertion, Span
from evalh.runner.grading import positive_verdict
from evalh.runner.scoring import finalize
from tests.assertions.helpers import definition_of, make_context

__all__ = ["TRACE_ID", "MemoryTrace", "run_trace_assertion", "span", "tool_span"]

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"


class MemoryTrace:
    """A TraceSource whose spans are all there already (the receiver's waits are its own tests')."""

    def __init__(
        self, spans: Sequence[Span], trace_id: str = TRACE_ID, command_tool_names: tuple[str, ...] = ()
    ) -> None:
        self.trace_id = trace_id
        self.command_tool_names = command_tool_names
        self._spans = tuple(spans)
        self.reads = 0

    async def spans(self) -> tuple[Span, ...]:
        self.reads += 1
        return self._spans


_ids = iter(range(1, 1 << 30))


def span(
    name: str,
    start_ms: float = 0,
    duration_ms: float | None = 1,
    attributes: Mapping[str, Any] | None = None,
    status: str = "UNSET",
    message: str = "",
) -> Span:
    """A span of the trace starting ``start_ms`` after the epoch (``duration_ms`` None: not ended)."""
    start = int(start_ms * 1_000_000)
    return Span(
        trace_id=TRACE_ID,
        span_id=f"{next(_ids):016x}",
        name=name,
        start_ns=start,
        end_ns=None if duration_ms is None else start + int(duration_ms * 1_000_000),
        attributes=dict(attributes or {}),
        status_code=status,
        status_message=message,
    )


def tool_span(tool: str, start_ms: float, args: Any = None, key: str = "tool.name") -> Span:
    """A tool call as an OpenTelemetry GenAI exporter writes it: the name, the arguments as JSON text."""
    attributes: dict[str, Any] = {key: tool}
    if args is not None:
        attributes["tool.arguments"] = args if isinstance(args, str) else json.dumps(args)
    return span(f"execute_tool {tool}", start_ms, attributes=attributes)


def run_trace_assertion(
    assertion_type: str,
    value: Any,
    spans: Sequence[Span] | None,
    *,
    vars: Mapping[str, Any] | None = None,
    output: Any = "done",
    threshold: float | None = None,
    services: GradingServices | None = None,
    provider: Any = None,
    command_tools: tuple[str, ...] = (),
) -> GradedAssertion:
    """The finalized verdict (``not-`` applied) of one assertion on a row whose trace holds ``spans``
    (None: the run does not trace; ``command_tools``: the config's ``tracing.commandToolNames``)."""
    ctx = make_context(
        assertion_type,
        value=value,
        output=output,
        vars=vars,
        threshold=threshold,
        services=services,
        provider=provider,
    )
    trace = None if spans is None else MemoryTrace(spans, command_tool_names=command_tools)
    ctx = dataclasses.replace(ctx, trace=trace)
    return finalize(ctx.spec, asyncio.run(_verdict(ctx)))


async def _verdict(ctx: AssertionContext) -> Any:
    return await positive_verdict(definition_of(ctx.spec.base_type), ctx)
