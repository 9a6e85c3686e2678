"""The one decoder of OTLP/HTTP trace export bodies: JSON and protobuf -> :class:`~evalh.model.Span`.

An exporter posts an ``ExportTraceServiceRequest``: ``resourceSpans[].scopeSpans[].spans[]``. JSON bodies
(``application/json``) carry ids as hex strings, as the OTLP spec's JSON encoding says (base64 is
accepted too: some exporters send the protobuf JSON mapping's bytes); protobuf bodies
(``application/x-protobuf``, the Python SDK's default) are parsed with the ``opentelemetry-proto``
classes and walked through the same code as JSON (the protobuf JSON mapping: ids in base64, 64-bit
times as strings, enums by name).

Bodies are untrusted and bounded: their size (:data:`MAX_BODY_BYTES`), the spans one body may carry,
the attributes a span keeps, the length of a string value and the nesting of ``AnyValue``s. A body that
is not OTLP raises :class:`OtlpError` (the receiver answers 400); a span that is not well formed (an id
of the wrong length) is rejected alone and counted, as OTLP's ``partial_success`` reports it.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from evalh.model import Span

__all__ = [
    "MAX_BODY_BYTES",
    "Decoded",
    "OtlpError",
    "decode_export",
    "is_valid_id",
]

MAX_BODY_BYTES = 4 * 1024 * 1024  # one export request; the Python SDK sends one small batch per call
MAX_SPANS_PER_BODY = 10_000
MAX_ATTRIBUTES = 128  # per span (the SDK's own default limit), the rest dropped
MAX_STRING_CHARS = 16_384  # one string value, cut beyond
MAX_VALUE_DEPTH = 8  # arrays / key-value lists inside one another
_TOO_DEEP = "[nested too deep]"
_HEX = re.compile(r"[0-9a-f]+")

_KINDS = ("UNSPECIFIED", "INTERNAL", "SERVER", "CLIENT", "PRODUCER", "CONSUMER")
_STATUS_CODES = ("UNSET", "OK", "ERROR")
_JSON_TYPES = ("application/json",)
_PROTOBUF_TYPES = ("application/x-protobuf", "application/protobuf")


class OtlpError(ValueError):
    """The body is not an OTLP trace export request (the message says why)."""


@dataclass(frozen=True)
class Decoded:
    spans: tuple[Span, ...]
    rejected: int  # spans refused one by one (malformed ids, over the per-body bound)
    problem: str = ""  # why the first of them was refused


def body_format(content_type: str) -> str | None:
    """``"json"``, ``"protobuf"`` or None (a content type OTLP/HTTP does not define)."""
    media = content_type.split(";", 1)[0].strip().lower()
    if media in _JSON_TYPES:
        return "json"
    if media in _PROTOBUF_TYPES:
        return "protobuf"
    return None


def decode_export(body: bytes, content_type: str) -> Decoded:
    """The spans of one export request body; OtlpError when it is not one."""
    if len(body) > MAX_BODY_BYTES:
        raise OtlpError(f"the body is larger than {MAX_BODY_BYTES // (1024 * 1024)} MiB")
    kind = body_format(content_type)
    if kind is None:
        raise OtlpError(
            f"unsupported content type {content_type!r} (application/json or application/x-protobuf)"
        )
    request = _parse_json(body) if kind == "json" else _parse_protobuf(body)
    return _walk(request)


def _parse_json(body: bytes) -> Mapping[str, Any]:
    try:
        value = json.loads(body)
    except (ValueError, RecursionError) as error:
        raise OtlpError(f"the body is not JSON: {error}") from None
    if not isinstance(value, Mapping):
        raise OtlpError("the body is not a JSON object (an ExportTraceServiceRequest)")
    return value


def _parse_protobuf(body: bytes) -> Mapping[str, Any]:
    from google.protobuf.message import DecodeError
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    request = ExportTraceServiceRequest()
    try:
        request.ParseFromString(body)
    except (DecodeError, RecursionError, ValueError) as error:
        raise OtlpError(f"the body is not an ExportTraceServiceRequest in protobuf: {error}") from None
    left = [MAX_SPANS_PER_BODY]  # spans past the bound are refused by the walk unread: not converted

    def converted(spans: Any) -> list[dict[str, Any] | None]:
        kept = spans[: max(0, left[0])]
        left[0] -= len(kept)
        return [*(_protobuf_span(span) for span in kept), *[None] * (len(spans) - len(kept))]

    return {
        "resourceSpans": [
            {
                "resource": {"attributes": _protobuf_attributes(resource_spans.resource.attributes)},
                "scopeSpans": [
                    {"spans": converted(scope_spans.spans)} for scope_spans in resource_spans.scope_spans
                ],
            }
            for resource_spans in request.resource_spans
        ]
    }


# The protobuf classes read into OTLP/JSON's shape (ids in hex, enums as numbers), so one walker reads both
# encodings; by hand rather than json_format.MessageToDict, which is about ten times slower per span.
def _protobuf_span(span: Any) -> dict[str, Any]:
    return {
        "traceId": span.trace_id.hex(),
        "spanId": span.span_id.hex(),
        "parentSpanId": span.parent_span_id.hex(),
        "name": span.name,
        "kind": span.kind,
        "startTimeUnixNano": span.start_time_unix_nano,
        "endTimeUnixNano": span.end_time_unix_nano,
        "attributes": _protobuf_attributes(span.attributes),
        "status": {"code": span.status.code, "message": span.status.message},
    }


def _protobuf_attributes(pairs: Any) -> list[dict[str, Any]]:
    return [{"key": pair.key, "value": _protobuf_value(pair.value)} for pair in pairs[:MAX_ATTRIBUTES]]


_SCALARS = {
    "string_value": "stringValue",
    "bool_value": "boolValue",
    "int_value": "intValue",
    "double_value": "doubleValue",
}


def _protobuf_value(value: Any) -> dict[str, Any]:
    which = value.WhichOneof("value")
    if which in _SCALARS:
        return {_SCALARS[which]: getattr(value, which)}
    if which == "array_value":
        return {"arrayValue": {"values": [_protobuf_value(item) for item in value.array_value.values]}}
    if which == "kvlist_value":
        return {"kvlistValue": {"values": _protobuf_attributes(value.kvlist_value.values)}}
    if which == "bytes_value":
        return {"bytesValue": base64.b64encode(value.bytes_value).decode("ascii")}
    return {}


def _list(value: Any, where: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise OtlpError(f"{where} is not a list")
    return value


def _object(value: Any, where: str) -> Mapping[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise OtlpError(f"{where} is not an object")
    return value


class _SpanRejected(ValueError):
    pass


def _walk(request: Mapping[str, Any]) -> Decoded:
    spans: list[Span] = []
    rejected = 0
    problem = ""
    for resource_spans in _list(request.get("resourceSpans"), "resourceSpans"):
        resource_spans = _object(resource_spans, "resourceSpans[]")
        resource = _object(resource_spans.get("resource"), "resource")
        service = str(_attributes(resource.get("attributes")).get("service.name", ""))
        # instrumentationLibrarySpans: the name before OTLP 0.15, still sent by old exporters
        scopes = resource_spans.get("scopeSpans", resource_spans.get("instrumentationLibrarySpans"))
        for scope_spans in _list(scopes, "scopeSpans"):
            for raw in _list(_object(scope_spans, "scopeSpans[]").get("spans"), "spans"):
                if len(spans) >= MAX_SPANS_PER_BODY:
                    rejected += 1
                    problem = problem or f"more than {MAX_SPANS_PER_BODY} spans in one request"
                    continue
                try:
                    spans.append(_span(_object(raw, "spans[]"), service))
                except _SpanRejected as error:
                    rejected += 1
                    problem = problem or str(error)
    return Decoded(tuple(spans), rejected, problem)


def _span(raw: Mapping[str, Any], service: str) -> Span:
    trace_id = _id(raw.get("traceId"), 16, "traceId")
    span_id = _id(raw.get("spanId"), 8, "spanId")
    parent = raw.get("parentSpanId")
    status = _object(raw.get("status") if isinstance(raw.get("status"), Mapping) else None, "status")
    start = _nanos(raw.get("startTimeUnixNano"), "startTimeUnixNano")
    end = _nanos(raw.get("endTimeUnixNano"), "endTimeUnixNano") if raw.get("endTimeUnixNano") else None
    return Span(
        trace_id=trace_id,
        span_id=span_id,
        name=_text(raw.get("name", "")),
        start_ns=start,
        end_ns=end,
        parent_span_id=_id(parent, 8, "parentSpanId") if parent else None,
        kind=_enum(raw.get("kind"), _KINDS, "SPAN_KIND_", default="UNSPECIFIED"),
        attributes=_attributes(raw.get("attributes")),
        status_code=_enum(status.get("code"), _STATUS_CODES, "STATUS_CODE_", default="UNSET"),
        status_message=_text(status.get("message", "")),
        service=service,
    )


def is_valid_id(text: str, size: int) -> bool:
    """Whether ``text`` is ``size`` bytes in lowercase hex, not all zero (W3C's invalid id)."""
    return len(text) == 2 * size and _HEX.fullmatch(text) is not None and text != "0" * (2 * size)


def _id(value: Any, size: int, name: str) -> str:
    """A trace or span id as lowercase hex: hex as OTLP/JSON writes it, or base64 (the protobuf JSON
    mapping's bytes)."""
    if not isinstance(value, str):
        raise _SpanRejected(f"{name} is not a string")
    text = value.lower()
    if len(value) != 2 * size:
        try:
            text = base64.b64decode(value, validate=True).hex()
        except (binascii.Error, ValueError):
            raise _SpanRejected(f"{name} {value[:40]!r} is neither hex nor base64") from None
    if not is_valid_id(text, size):
        raise _SpanRejected(f"{name} {value[:40]!r} is not {size} bytes (or is all zero)")
    return text


def _nanos(value: Any, name: str) -> int:
    """A fixed64 time: a number, or a decimal string (JSON's way to carry 64-bit integers)."""
    if isinstance(value, bool):
        raise _SpanRejected(f"{name} is not a number")
    if value is None:
        return 0
    try:
        nanos = int(value)
    except (TypeError, ValueError, OverflowError):  # OverflowError: JSON's 1e400 is float infinity
        raise _SpanRejected(f"{name} {str(value)[:40]!r} is not a number") from None
    if not 0 <= nanos < 2**64:
        raise _SpanRejected(f"{name} is out of range")
    return nanos


def _enum(value: Any, names: tuple[str, ...], prefix: str, *, default: str) -> str:
    """An OTLP enum given as its number (OTLP/JSON) or its full name (``SPAN_KIND_CLIENT``)."""
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < len(names):
        return names[value]
    if isinstance(value, str) and value.removeprefix(prefix) in names:
        return value.removeprefix(prefix)
    return default


def _text(value: Any) -> str:
    text = value if isinstance(value, str) else str(value)
    return text[:MAX_STRING_CHARS]


def _attributes(raw: Any) -> dict[str, Any]:
    """OTLP ``KeyValue``s as a plain dict (the first :data:`MAX_ATTRIBUTES`; a malformed entry skipped)."""
    attributes: dict[str, Any] = {}
    if not isinstance(raw, list):
        return attributes
    for item in raw:
        if len(attributes) >= MAX_ATTRIBUTES:
            break
        if isinstance(item, Mapping) and isinstance(item.get("key"), str):
            attributes[_text(item["key"])] = _any_value(item.get("value"), 0)
    return attributes


def _any_value(value: Any, depth: int) -> Any:
    """An OTLP ``AnyValue`` as a plain JSON value; bytes stay base64 text; too deep a value is a marker."""
    if not isinstance(value, Mapping):
        return None
    if depth >= MAX_VALUE_DEPTH:
        return _TOO_DEEP
    if "stringValue" in value:
        return _text(value["stringValue"])
    if "boolValue" in value:
        return bool(value["boolValue"])
    if "intValue" in value:
        try:
            number = int(value["intValue"])
        except (TypeError, ValueError, OverflowError):
            return None
        # OTLP's intValue is an int64; a longer one would make the run's own report unreadable (its
        # reader takes whole numbers of at most 4,000 digits)
        return number if -(2**63) <= number < 2**63 else None
    if "doubleValue" in value:
        try:
            return float(value["doubleValue"])
        except (TypeError, ValueError):
            return None
    if "arrayValue" in value:
        items = _object(value["arrayValue"], "arrayValue").get("values")
        return [_any_value(item, depth + 1) for item in (items if isinstance(items, list) else [])]
    if "kvlistValue" in value:
        pairs = _object(value["kvlistValue"], "kvlistValue").get("values")
        return {
            _text(pair["key"]): _any_value(pair.get("value"), depth + 1)
            for pair in (pairs if isinstance(pairs, list) else [])
            if isinstance(pair, Mapping) and isinstance(pair.get("key"), str)
        }
    if "bytesValue" in value:
        return _text(value["bytesValue"])
    return None
