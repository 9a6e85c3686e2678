"""tracing.otlp.http.redactAttributes: promptfoo's matching (a lowercased part of the key), nested keys,
echoes in the span's name and status, and redaction as spans arrive, before any reader."""

from __future__ import annotations

import asyncio
import time

from evalh.model import Span
from evalh.secrets import MARKER
from evalh.tracing.collector import CollectedTrace, SpanCollector
from evalh.tracing.redact import AttributeRedactor


def _span(trace_id: str = "a" * 32, **fields: object) -> Span:
    base: dict[str, object] = {"trace_id": trace_id, "span_id": "1" * 16, "name": "call", "start_ns": 1}
    return Span(**{**base, **fields})  # type: ignore[arg-type]


def test_keys_containing_a_part_in_any_case_are_redacted_nested_too() -> None:
    redactor = AttributeRedactor(("api_key", "session"))
    span = _span(
        attributes={
            "user.API_KEY": "sk-live-123456",
            "http.session.id": 42,
            "tool.arguments": {"query": "shoes", "Api_Key_Header": "x", "list": [{"session": "s"}]},
            "tool.name": "search",
        }
    )
    redacted = redactor.span(span).attributes
    assert redacted == {
        "user.API_KEY": MARKER,
        "http.session.id": MARKER,
        "tool.arguments": {"query": "shoes", "Api_Key_Header": MARKER, "list": [{"session": MARKER}]},
        "tool.name": "search",
    }


def test_a_name_or_status_that_echoes_a_redacted_value_is_redacted() -> None:
    span = _span(
        name="sk-live-123456", status_message="sk-live-123456", attributes={"token": "sk-live-123456"}
    )
    redacted = AttributeRedactor(("token",)).span(span)
    assert (redacted.name, redacted.status_message) == (MARKER, MARKER)
    other = _span(name="call", status_message="boom", attributes={"token": "t"})
    assert AttributeRedactor(("token",)).span(other) == _span(
        name="call", status_message="boom", attributes={"token": MARKER}
    )


def test_no_parts_leave_the_span_as_it_is() -> None:
    span = _span(attributes={"password": "p"})
    assert AttributeRedactor(()).span(span) is span


def test_the_collector_redacts_as_spans_arrive_so_the_rows_trace_never_holds_the_value() -> None:
    collector = SpanCollector(redactor=AttributeRedactor(("secret",)))
    trace_id = collector.issue().trace_id
    collector.add([_span(trace_id, attributes={"db.secret": "hunter22", "db.name": "orders"})])
    seen = asyncio.run(CollectedTrace(collector, trace_id, time.monotonic(), wait_ms=0).spans())
    assert seen[0].attributes == {"db.secret": MARKER, "db.name": "orders"}  # what assertions read
