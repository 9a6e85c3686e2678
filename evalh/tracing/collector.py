"""The run's spans by trace id, and the trace context each provider call gets.

Only trace ids this run issued (:meth:`SpanCollector.issue`) are kept: a span of any other trace (another
program exporting to the same port: ``unknown``; a late span of a row already written: ``late``) is
dropped and counted, for the run's closing notice. The attributes ``tracing.otlp.http.redactAttributes``
names are redacted as spans arrive (:mod:`evalh.tracing.redact`), before anything reads them. Each
trace keeps at most :data:`MAX_SPANS_PER_TRACE` spans holding at most :data:`MAX_TRACE_BYTES` of text in
all, and at most :data:`MAX_OPEN_TRACES` traces hold spans at once (a trace is released when its row is
written), so a provider flooding the receiver costs bounded memory. The receiver's threads add spans
while the run's event loop reads them: one lock.

:class:`CollectedTrace` is the runner's :class:`~evalh.model.TraceSource`: its :meth:`~CollectedTrace.spans`
waits until no span of the trace arrived for :data:`QUIET_S` (spans exported while the provider ran are
in already; a batch processor's come a little later), at most ``wait_ms`` after the provider answered.
"""

from __future__ import annotations

import asyncio
import secrets
import threading
import time
from dataclasses import dataclass, field

from evalh.model import RowTrace, Span, TraceContext
from evalh.tracing.redact import AttributeRedactor

__all__ = [
    "MAX_OPEN_TRACES",
    "MAX_RELEASED_REMEMBERED",
    "MAX_SPANS_PER_TRACE",
    "MAX_TRACE_BYTES",
    "QUIET_S",
    "CollectedTrace",
    "SpanCollector",
    "new_trace_context",
]

MAX_SPANS_PER_TRACE = 1000
MAX_OPEN_TRACES = 10_000
# The text a trace may hold (names, attribute keys and values): 1,000 spans of the decoder's largest
# attributes (128 of 16,384 characters) would be 2 GB, so the count alone does not bound the memory.
MAX_TRACE_BYTES = 16 * 1024 * 1024
# released trace ids remembered, to tell a late span (its row is written) from one of an unknown trace:
# late spans come seconds after their row, so the last rows' ids are enough, at bounded memory
MAX_RELEASED_REMEMBERED = 10_000
QUIET_S = 0.15  # no new span for this long after the answer: the trace is complete


def new_trace_context() -> TraceContext:
    """A fresh W3C trace context: a random 16-byte trace id and 8-byte span id (never all zero)."""
    trace_id = span_id = "0"
    while int(trace_id, 16) == 0 or int(span_id, 16) == 0:
        trace_id, span_id = secrets.token_hex(16), secrets.token_hex(8)
    return TraceContext(trace_id=trace_id, span_id=span_id)


def span_size(span: Span) -> int:
    """About the memory a span's text takes: its name, status message and attributes."""
    return (
        len(span.name)
        + len(span.status_message)
        + sum(len(key) + _value_size(value) for key, value in span.attributes.items())
    )


def _value_size(value: object) -> int:
    if isinstance(value, str):
        return len(value)
    if isinstance(value, list | tuple):
        return sum(_value_size(item) for item in value) + 8
    if isinstance(value, dict):
        return sum(len(str(key)) + _value_size(item) for key, item in value.items()) + 8
    return 8


@dataclass
class _Trace:
    spans: list[Span] = field(default_factory=list)
    dropped: int = 0
    size: int = 0  # span_size of the spans kept
    last_arrival: float = 0.0  # time.monotonic() of the last span added


@dataclass
class SpanCollector:
    """Spans of the run's traces, bounded; thread-safe."""

    max_spans_per_trace: int = MAX_SPANS_PER_TRACE
    max_open_traces: int = MAX_OPEN_TRACES
    max_trace_bytes: int = MAX_TRACE_BYTES
    redactor: AttributeRedactor = field(default_factory=lambda: AttributeRedactor(()))
    unknown: int = 0  # spans of a trace this run did not issue
    late: int = 0  # spans of a row's trace that came after the row took its spans
    _issued: set[str] = field(default_factory=set)
    _released: dict[str, None] = field(default_factory=dict)  # an ordered set, oldest first
    _traces: dict[str, _Trace] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def issue(self) -> TraceContext:
        """A new trace context whose spans this collector will keep."""
        context = new_trace_context()
        with self._lock:
            self._issued.add(context.trace_id)
        return context

    def add(self, spans: tuple[Span, ...] | list[Span]) -> int:
        """Keep the spans of issued traces, within the bounds; return how many were refused."""
        refused = 0
        if self.redactor:
            spans = [self.redactor.span(span) for span in spans]
        now = time.monotonic()
        with self._lock:
            for span in spans:
                trace = self._traces.get(span.trace_id)
                if trace is None:
                    if span.trace_id not in self._issued:
                        if span.trace_id in self._released:
                            self.late += 1
                        else:
                            self.unknown += 1
                        refused += 1
                        continue
                    if len(self._traces) >= self.max_open_traces:
                        refused += 1
                        continue
                    trace = self._traces[span.trace_id] = _Trace()
                size = span_size(span)
                if len(trace.spans) >= self.max_spans_per_trace or trace.size + size > self.max_trace_bytes:
                    trace.dropped += 1
                    refused += 1
                    continue
                trace.size += size
                trace.spans.append(span)
                trace.last_arrival = now
        return refused

    def last_arrival(self, trace_id: str) -> float:
        with self._lock:
            trace = self._traces.get(trace_id)
            return trace.last_arrival if trace is not None else 0.0

    def row_trace(self, trace_id: str) -> RowTrace:
        """The trace's spans so far, in start order."""
        with self._lock:
            trace = self._traces.get(trace_id) or _Trace()
            spans, dropped = list(trace.spans), trace.dropped
        spans.sort(key=lambda span: (span.start_ns, span.end_ns or 0))
        return RowTrace(trace_id=trace_id, spans=tuple(spans), dropped=dropped)

    def release(self, trace_id: str, taken: int = 0) -> None:
        """Forget the trace (its row is written with ``taken`` of its spans, kept or dropped): the spans
        that came after the row took its snapshot, and any later ones, count as late."""
        with self._lock:
            trace = self._traces.pop(trace_id, None)
            self._issued.discard(trace_id)
            if trace is not None:
                self.late += max(0, len(trace.spans) + trace.dropped - taken)
            self._released[trace_id] = None
            if len(self._released) > MAX_RELEASED_REMEMBERED:
                del self._released[next(iter(self._released))]


class CollectedTrace:
    """One row's trace as its assertions see it (:class:`~evalh.model.TraceSource`)."""

    def __init__(
        self,
        collector: SpanCollector,
        trace_id: str,
        answered_at: float,
        wait_ms: int,
        command_tool_names: tuple[str, ...] = (),
    ) -> None:
        self.trace_id = trace_id
        self.command_tool_names = command_tool_names
        self.collector = collector
        self.answered_at = answered_at  # time.monotonic() when the provider answered
        self.deadline = answered_at + max(0, wait_ms) / 1000
        self._settled: RowTrace | None = None

    async def row_trace(self) -> RowTrace:
        """The trace once quiet for :data:`QUIET_S`, or at the deadline; the same snapshot afterwards, so
        every assertion of the row and its result see the same spans."""
        while self._settled is None:
            now = time.monotonic()
            quiet_at = max(self.answered_at, self.collector.last_arrival(self.trace_id)) + QUIET_S
            wake_at = min(quiet_at, self.deadline)
            if now >= wake_at:
                self._settled = self.collector.row_trace(self.trace_id)
                break
            # until the trace would be quiet, not a fixed poll: a span arriving meanwhile moves that on,
            # and the row looks again then (a poll every 50 ms settled rows up to 50 ms late)
            await asyncio.sleep(wake_at - now)
        return self._settled

    async def spans(self) -> tuple[Span, ...]:
        return (await self.row_trace()).spans
