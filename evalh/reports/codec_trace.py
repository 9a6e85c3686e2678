"""A row's ``trace`` written (evalh's key beside promptfoo's): its OpenTelemetry spans as the report and
the viewer's trace view hold them; :mod:`evalh.reports.codec_read` reads it back (``trace_from_json``).
Part of the row codec (:mod:`evalh.reports.codec`), in a module of its own to keep each small."""

from __future__ import annotations

from typing import Any

from evalh.model import RowTrace, Span
from evalh.secrets import redact_config as redact
from evalh.secrets import redact_json_text

__all__ = ["trace_to_json"]


def _milliseconds(nanoseconds: int) -> float:
    return round(nanoseconds / 1e6, 3)


def _span_to_json(span: Span) -> dict[str, Any]:
    """One span of a row's ``trace``: times in Unix milliseconds (promptfoo's trace view's unit) to the
    microsecond (a float holds no finer at today's epoch, and the short figure reads better). Its
    name, attributes and status message come from the provider's code, so they are redacted as a
    config copy is (secret-looking attribute names, URLs' credentials, the run's secret values), and the
    secret-looking keys inside an attribute that is JSON text (``tool.arguments``) as well: an assertion's
    reason quoting those arguments redacts them, so the span beside it must too."""
    return {
        "traceId": span.trace_id,
        "spanId": span.span_id,
        "parentSpanId": span.parent_span_id,
        "name": redact(span.name),
        "kind": span.kind,
        "startTime": _milliseconds(span.start_ns),
        "endTime": None if span.end_ns is None else _milliseconds(span.end_ns),
        "durationMs": span.duration_ms,
        "attributes": {
            # redact() did every string; JSON text (tool arguments) also has its keys looked at
            key: redact_json_text(value) if _json_like(value) else value
            for key, value in redact(dict(span.attributes)).items()
        },
        "status": {"code": span.status_code, "message": redact(span.status_message)},
        "service": redact(span.service),
    }


def _json_like(value: Any) -> bool:
    return isinstance(value, str) and value.lstrip().startswith(("{", "["))


def trace_to_json(trace: RowTrace) -> dict[str, Any]:
    """A row's ``trace``: ``{traceId, spans: [...], dropped}`` (codec_read's ``trace_from_json`` reads
    it back); ``dropped`` counts the spans the receiver refused beyond its bound."""
    return {
        "traceId": trace.trace_id,
        "spans": [_span_to_json(span) for span in trace.spans],
        "dropped": trace.dropped,
    }
