"""The OTLP decoder: JSON (hex and base64 ids) and protobuf (the real SDK's encoder) -> Span, bounded."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.trace import Status, StatusCode

from evalh.tracing.otlp import (
    MAX_ATTRIBUTES,
    MAX_BODY_BYTES,
    MAX_STRING_CHARS,
    MAX_VALUE_DEPTH,
    OtlpError,
    decode_export,
)

TRACE = "5b8efff798038103d269b633813fc60c"
SPAN = "eee19b7ec3c1b174"
PARENT = "eee19b7ec3c1b173"


def json_body(*spans: dict[str, Any], service: str = "agent") -> bytes:
    resource = {"attributes": [{"key": "service.name", "value": {"stringValue": service}}]}
    return json.dumps(
        {
            "resourceSpans": [
                {"resource": resource, "scopeSpans": [{"scope": {"name": "t"}, "spans": list(spans)}]}
            ]
        }
    ).encode()


def raw_span(**fields: Any) -> dict[str, Any]:
    return {
        "traceId": TRACE,
        "spanId": SPAN,
        "parentSpanId": PARENT,
        "name": "tool.search",
        "kind": 3,
        "startTimeUnixNano": "1700000000000000000",
        "endTimeUnixNano": "1700000000250000000",
        **fields,
    }


def test_json_span_with_hex_ids_and_every_value_kind() -> None:
    attributes = [
        {"key": "tool.name", "value": {"stringValue": "search"}},
        {"key": "n", "value": {"intValue": "42"}},
        {"key": "x", "value": {"doubleValue": 0.5}},
        {"key": "ok", "value": {"boolValue": True}},
        {"key": "list", "value": {"arrayValue": {"values": [{"stringValue": "a"}, {"intValue": 2}]}}},
        {"key": "map", "value": {"kvlistValue": {"values": [{"key": "k", "value": {"stringValue": "v"}}]}}},
    ]
    status = {"code": 2, "message": "boom"}
    decoded = decode_export(json_body(raw_span(attributes=attributes, status=status)), "application/json")
    (span,) = decoded.spans
    assert decoded.rejected == 0
    assert (span.trace_id, span.span_id, span.parent_span_id) == (TRACE, SPAN, PARENT)
    assert (span.name, span.kind, span.service) == ("tool.search", "CLIENT", "agent")
    assert span.duration_ms == 250.0
    assert span.attributes == {
        "tool.name": "search",
        "n": 42,
        "x": 0.5,
        "ok": True,
        "list": ["a", 2],
        "map": {"k": "v"},
    }
    assert (span.status_code, span.status_message) == ("ERROR", "boom")


def test_json_accepts_base64_ids_and_enum_names() -> None:
    b64 = {
        "traceId": base64.b64encode(bytes.fromhex(TRACE)).decode(),
        "spanId": base64.b64encode(bytes.fromhex(SPAN)).decode(),
        "parentSpanId": "",
        "kind": "SPAN_KIND_SERVER",
        "status": {"code": "STATUS_CODE_OK"},
    }
    (span,) = decode_export(json_body(raw_span(**b64)), "application/json; charset=utf-8").spans
    assert (span.trace_id, span.span_id, span.parent_span_id) == (TRACE, SPAN, None)
    assert (span.kind, span.status_code) == ("SERVER", "OK")


class _Keep(SpanExporter):
    def __init__(self) -> None:
        self.spans: list[ReadableSpan] = []

    def export(self, spans: Any) -> SpanExportResult:
        self.spans.extend(spans)
        return SpanExportResult.SUCCESS


def test_protobuf_from_the_sdks_own_encoder() -> None:
    kept = _Keep()
    provider = TracerProvider(resource=Resource.create({"service.name": "py-agent"}))
    provider.add_span_processor(SimpleSpanProcessor(kept))
    tracer = provider.get_tracer("test")
    with (
        tracer.start_as_current_span("agent") as parent,
        tracer.start_as_current_span("tool.lookup") as child,
    ):
        child.set_attribute("tool.name", "lookup")
        child.set_attribute("tool.arguments", '{"id": 7}')
        child.set_attribute("sizes", [1, 2, 3])
        child.set_status(Status(StatusCode.ERROR, "not found"))
    body = encode_spans(kept.spans).SerializeToString()
    decoded = decode_export(body, "application/x-protobuf")
    by_name = {span.name: span for span in decoded.spans}
    tool, agent = by_name["tool.lookup"], by_name["agent"]
    assert tool.trace_id == format(parent.get_span_context().trace_id, "032x")
    assert tool.parent_span_id == agent.span_id == format(parent.get_span_context().span_id, "016x")
    assert tool.attributes == {"tool.name": "lookup", "tool.arguments": '{"id": 7}', "sizes": [1, 2, 3]}
    assert (tool.status_code, tool.status_message, tool.service) == ("ERROR", "not found", "py-agent")
    assert tool.end_ns is not None and tool.end_ns >= tool.start_ns


def test_protobuf_spans_past_the_per_body_bound_are_refused_unconverted(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A 4 MiB body holds ~90,000 bare spans; converting all before the walk refused 80,000 of them cost
    0.9 s of the receiver's CPU per body, under the GIL the run needs (0.3 s now)."""
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    from evalh.tracing import otlp

    request = ExportTraceServiceRequest()
    for scope in range(2):
        spans = request.resource_spans.add().scope_spans.add().spans
        for index in range(6):
            span = spans.add(trace_id=bytes.fromhex(TRACE), span_id=bytes([scope + 1] * 7 + [index + 1]))
            span.name = f"s{scope}.{index}"
    converted: list[str] = []
    real = otlp._protobuf_span

    def counted(span: Any) -> dict[str, Any]:
        converted.append(span.name)
        return real(span)

    monkeypatch.setattr(otlp, "_protobuf_span", counted)
    monkeypatch.setattr(otlp, "MAX_SPANS_PER_BODY", 8)
    decoded = decode_export(request.SerializeToString(), "application/x-protobuf")
    assert (
        [span.name for span in decoded.spans] == converted == [*(f"s0.{i}" for i in range(6)), "s1.0", "s1.1"]
    )
    assert decoded.rejected == 4 and "more than 8 spans" in decoded.problem


@pytest.mark.parametrize(
    ("body", "content_type", "message"),
    [
        (b"{not json", "application/json", "not JSON"),
        (b"[1, 2]", "application/json", "not a JSON object"),
        (b'{"resourceSpans": 5}', "application/json", "resourceSpans is not a list"),
        (b"\xff\xff\xff\xff\x0f", "application/x-protobuf", "protobuf"),
        (b"{}", "text/plain", "unsupported content type"),
        (b"[" * 100_000, "application/json", "not JSON"),
    ],
)
def test_malformed_bodies_are_one_clear_error(body: bytes, content_type: str, message: str) -> None:
    with pytest.raises(OtlpError, match=message):
        decode_export(body, content_type)


def test_a_body_over_the_bound_is_refused_unread() -> None:
    with pytest.raises(OtlpError, match="larger than 4 MiB"):
        decode_export(b" " * (MAX_BODY_BYTES + 1), "application/json")


def test_a_malformed_span_is_rejected_alone() -> None:
    body = json_body(
        raw_span(), raw_span(traceId="abc"), raw_span(spanId="0" * 16), raw_span(startTimeUnixNano="x")
    )
    decoded = decode_export(body, "application/json")
    assert len(decoded.spans) == 1
    assert decoded.rejected == 3
    assert "traceId" in decoded.problem


def test_infinite_numbers_reject_the_span_or_drop_the_value_not_the_decoder() -> None:
    # JSON's 1e400 is float infinity, which int() refuses with OverflowError (not ValueError)
    body = (
        json_body(
            raw_span(startTimeUnixNano="S"), raw_span(attributes=[{"key": "n", "value": {"intValue": "I"}}])
        )
        .replace(b'"S"', b"1e400")
        .replace(b'"I"', b"-1e400")
    )
    decoded = decode_export(body, "application/json")
    assert decoded.rejected == 1 and "startTimeUnixNano" in decoded.problem
    assert [span.attributes for span in decoded.spans] == [{"n": None}]


def test_an_int_value_beyond_int64_is_dropped() -> None:
    # OTLP's intValue is an int64; a 4,200-digit one made the traced run's own report unreadable
    values = [str(2**63 - 1), str(2**63), "9" * 4200, str(-(2**63))]
    attributes = [{"key": f"n{index}", "value": {"intValue": text}} for index, text in enumerate(values)]
    (span,) = decode_export(json_body(raw_span(attributes=attributes)), "application/json").spans
    assert span.attributes == {"n0": 2**63 - 1, "n1": None, "n2": None, "n3": -(2**63)}


def test_attributes_are_bounded_in_count_length_and_depth() -> None:
    deep: dict[str, Any] = {"stringValue": "leaf"}
    for _ in range(MAX_VALUE_DEPTH + 5):
        deep = {"arrayValue": {"values": [deep]}}
    attributes = [{"key": f"k{i}", "value": {"intValue": i}} for i in range(MAX_ATTRIBUTES + 50)]
    attributes.insert(0, {"key": "deep", "value": deep})
    attributes.insert(0, {"key": "long", "value": {"stringValue": "x" * (MAX_STRING_CHARS * 3)}})
    (span,) = decode_export(json_body(raw_span(attributes=attributes)), "application/json").spans
    assert len(span.attributes) == MAX_ATTRIBUTES
    assert len(span.attributes["long"]) == MAX_STRING_CHARS
    value = span.attributes["deep"]
    depth = 0
    while isinstance(value, list):
        value, depth = value[0], depth + 1
    assert depth == MAX_VALUE_DEPTH
    assert value == "[nested too deep]"
