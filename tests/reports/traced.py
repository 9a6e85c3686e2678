"""A run whose rows carry traces (the spans a traced run joins to its rows), for the tests of the trace at
rest: the row codec, the store, the viewer and the console. Until the runner fills ``TestResult.trace``
itself, the rows are the sample run's (tests/reports/sample.py) with a hand-made RowTrace added."""

from __future__ import annotations

import dataclasses
from typing import Any

from evalh.model import RowTrace, RunRecord, Span
from tests.reports.sample import sample_run, with_results

__all__ = ["TRACE_ID", "agent_trace", "traced_run"]

TRACE_ID = "0af7651916cd43dd8448eb211c80319c"
_START_NS = 1_764_300_000_123_456_000  # 2025-11-28, a whole microsecond: exact as float milliseconds


def _span(span_id: str, name: str, start_ms: float, end_ms: float | None, **fields: Any) -> Span:
    return Span(
        trace_id=TRACE_ID,
        span_id=span_id,
        name=name,
        start_ns=_START_NS + round(start_ms * 1e6),
        end_ns=None if end_ms is None else _START_NS + round(end_ms * 1e6),
        **fields,
    )


def agent_trace(attributes: dict[str, Any] | None = None, **root: Any) -> RowTrace:
    """An agent's trace: a root span, an LLM call, a tool call (its arguments a JSON string, as OTel
    SDKs send them) that errored, and a span that never ended. ``attributes`` go on the tool span."""
    spans = (
        _span("b7ad6b7169203331", "agent.run", 0, 250.5, kind="SERVER", service="agent", **root),
        _span(
            "00f067aa0ba902b7",
            "chat gpt-4o-mini",
            2,
            120,
            parent_span_id="b7ad6b7169203331",
            kind="CLIENT",
            attributes={"gen_ai.request.model": "gpt-4o-mini", "gen_ai.usage.input_tokens": 42},
            status_code="OK",
            service="agent",
        ),
        _span(
            "53995c3f42cd8ad8",
            "tool.call",
            125,
            240,
            parent_span_id="b7ad6b7169203331",
            attributes={
                "tool.name": "get_weather",
                "tool.arguments": '{"city": "Paris"}',
                "retries": [1, 2],
                **(attributes or {}),
            },
            status_code="ERROR",
            status_message="weather service timed out",
            service="agent",
        ),
        _span("e457b5a2e4d86bd1", "cleanup", 245, None, parent_span_id="b7ad6b7169203331", service="agent"),
    )
    return RowTrace(trace_id=TRACE_ID, spans=spans, dropped=0)


def traced_run(trace: RowTrace | None = None, *, rows: tuple[int, ...] = (0, 3)) -> RunRecord:
    """The sample run, the rows at ``rows`` (0: a pass, 3: a failure) carrying ``trace``."""
    run = sample_run()
    trace = trace or agent_trace()
    results = [
        dataclasses.replace(row, trace=trace) if index in rows else row
        for index, row in enumerate(run.results)
    ]
    return with_results(run, results)
