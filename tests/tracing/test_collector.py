"""The span collector: only issued traces, bounded, and one snapshot per row."""

from __future__ import annotations

import asyncio
import time

from evalh.model import Span
from evalh.tracing.collector import (
    MAX_TRACE_BYTES,
    QUIET_S,
    CollectedTrace,
    SpanCollector,
    new_trace_context,
    span_size,
)
from evalh.tracing.otlp import is_valid_id


def span(trace_id: str, number: int) -> Span:
    return Span(trace_id=trace_id, span_id=f"{number + 1:016x}", name=f"s{number}", start_ns=1000 - number)


def test_trace_contexts_are_fresh_w3c_ids() -> None:
    contexts = [new_trace_context() for _ in range(100)]
    assert len({c.trace_id for c in contexts}) == 100
    for context in contexts:
        assert is_valid_id(context.trace_id, 16) and is_valid_id(context.span_id, 8)
        assert context.traceparent == f"00-{context.trace_id}-{context.span_id}-01"


def test_only_issued_traces_are_kept_in_start_order() -> None:
    collector = SpanCollector()
    issued = collector.issue().trace_id
    refused = collector.add([span(issued, 0), span("f" * 32, 1), span(issued, 2)])
    assert refused == 1 and collector.unknown == 1
    assert [s.name for s in collector.row_trace(issued).spans] == ["s2", "s0"]


def test_open_traces_are_bounded_and_a_released_trace_takes_no_more_spans() -> None:
    collector = SpanCollector(max_open_traces=2)
    first, second, third = (collector.issue().trace_id for _ in range(3))
    assert collector.add([span(first, 0), span(second, 0), span(third, 0)]) == 1
    assert collector.row_trace(third).spans == ()
    collector.release(first, taken=1)
    assert collector.add([span(first, 1)]) == 1 and (collector.late, collector.unknown) == (1, 0)
    assert collector.add([span(third, 0)]) == 0  # the released trace made room


def test_a_trace_holds_a_bounded_amount_of_text_and_counts_the_rest() -> None:
    """A span count alone does not bound memory: 1,000 spans of 128 long attributes would be 2 GB."""
    collector = SpanCollector()
    trace_id = collector.issue().trace_id
    heavy = [
        Span(
            trace_id=trace_id,
            span_id=f"{n + 1:016x}",
            name="big",
            start_ns=n,
            attributes={f"a{i}": "x" * 16_384 for i in range(128)},
        )
        for n in range(20)
    ]
    size = span_size(heavy[0])
    assert size > 128 * 16_384
    refused = collector.add(heavy)
    kept = collector.row_trace(trace_id)
    assert len(kept.spans) == MAX_TRACE_BYTES // size and refused == 20 - len(kept.spans)
    assert kept.dropped == refused
    assert collector.add([span(trace_id, 0)]) == 0  # a small span still fits


def test_a_rows_trace_is_one_snapshot() -> None:
    collector = SpanCollector()
    trace_id = collector.issue().trace_id
    collector.add([span(trace_id, 0)])
    source = CollectedTrace(collector, trace_id, time.monotonic(), wait_ms=0)
    first = asyncio.run(source.row_trace())
    collector.add([span(trace_id, 1)])  # arrives after the row's trace settled
    assert asyncio.run(source.row_trace()) == first
    assert [s.name for s in asyncio.run(source.spans())] == ["s0"]


class _CountingCollector(SpanCollector):
    """The real collector, counting how often a waiting row looks at its trace."""

    looks = 0

    def last_arrival(self, trace_id: str) -> float:
        self.looks += 1
        return super().last_arrival(trace_id)


def test_a_quiet_trace_settles_after_one_sleep_not_a_poll() -> None:
    # the row sleeps until the trace would be quiet and looks again once (it polled every 50 ms before)
    collector = _CountingCollector()
    trace_id = collector.issue().trace_id
    collector.add([span(trace_id, 0)])
    source = CollectedTrace(collector, trace_id, time.monotonic(), wait_ms=3000)
    assert [s.name for s in asyncio.run(source.spans())] == ["s0"]
    assert collector.looks <= 3  # 2, or 3 when the loop wakes a hair early


def test_a_span_arriving_during_the_quiet_wait_extends_it() -> None:
    collector = SpanCollector()
    trace_id = collector.issue().trace_id
    collector.add([span(trace_id, 0)])

    async def settle() -> list[str]:
        source = CollectedTrace(collector, trace_id, time.monotonic(), wait_ms=3000)
        # before the trace is quiet (QUIET_S after the answer): the row must wait for quiet again
        asyncio.get_running_loop().call_later(QUIET_S * 0.6, collector.add, [span(trace_id, 1)])
        return [s.name for s in await source.spans()]

    assert asyncio.run(settle()) == ["s1", "s0"]


def test_spans_after_a_rows_snapshot_count_as_late_and_foreign_ones_as_unknown() -> None:
    collector = SpanCollector()
    trace_id = collector.issue().trace_id
    collector.add([span(trace_id, 0)])
    taken = collector.row_trace(trace_id)  # the row takes its spans
    collector.add([span(trace_id, 1)])  # after the snapshot, before the row is written
    collector.release(trace_id, taken=len(taken.spans))
    collector.add([span(trace_id, 2), span("e" * 32, 3)])  # after the row is written; another trace
    assert (collector.late, collector.unknown) == (2, 1)
