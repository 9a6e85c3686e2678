"""A loopback order-support agent for examples/configs/agent.yaml: no model, no network beyond evalh's own
receiver on 127.0.0.1.

It reads the customer's message, decides which tools to call (a few rules stand in for the model), "runs"
them against a small in-memory order table, and answers as an OpenAI chat model answers when it calls
tools: the ``tool_calls`` list. Each tool step is an OpenTelemetry span (``tool.name``,
``tool.arguments``) under the ``traceparent`` evalh passed in ``context``, exported to
``OTEL_EXPORTER_OTLP_ENDPOINT``: with the OpenTelemetry SDK and its OTLP/HTTP exporter when they are
installed (protobuf, as any instrumented Python app does), else as plain OTLP JSON over urllib, so the
example runs on evalh's base install.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import time
import urllib.request
from typing import Any

ORDERS = {
    "1001": {"status": "shipped", "carrier": "DHL", "eta": "2026-12-02"},
    "1002": {"status": "processing", "carrier": None, "eta": None},
}


def plan(message: str) -> list[tuple[str, dict[str, Any]]]:
    """The tool calls a model might make for ``message``: (name, arguments) in order."""
    order = re.search(r"\b(\d{4})\b", message)
    text = message.lower()
    steps: list[tuple[str, dict[str, Any]]] = []
    if order:
        steps.append(("search_orders", {"order_id": order.group(1)}))
        if "where" in text or "ship" in text or "track" in text:
            steps.append(("get_shipping_status", {"order_id": order.group(1)}))
        if "cancel" in text:
            steps.append(("cancel_order", {"order_id": order.group(1)}))
    else:
        steps.append(("search_faq", {"query": message}))
    steps.append(("compose_reply", {"tone": "friendly"}))
    return steps


def run_tool(name: str, arguments: dict[str, Any]) -> tuple[bool, str]:
    """(ok, what happened): an unknown order fails the lookup, as a real backend would."""
    order_id = arguments.get("order_id")
    if order_id is not None and order_id not in ORDERS:
        return False, f"order {order_id} not found"
    return True, "ok"


# -- spans ---------------------------------------------------------------------------------------------
def _export_with_sdk(spans: list[dict[str, Any]], traceparent: str) -> bool:
    """Export through the OpenTelemetry SDK (protobuf) when it is installed; False when it is not."""
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.propagate import extract
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.trace import Status, StatusCode
    except ImportError:
        return False
    provider = TracerProvider(resource=Resource.create({"service.name": "order-agent"}))
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter()))  # reads OTEL_EXPORTER_OTLP_ENDPOINT
    tracer = provider.get_tracer("order-agent")
    with tracer.start_as_current_span("agent.run", context=extract({"traceparent": traceparent})):
        for span in spans:
            with tracer.start_as_current_span(span["name"], attributes=span["attributes"]) as current:
                if not span["ok"]:
                    current.set_status(Status(StatusCode.ERROR, span["message"]))
    provider.shutdown()
    return True


def _export_as_json(spans: list[dict[str, Any]], traceparent: str) -> None:
    """The same spans as OTLP/JSON, posted with the standard library."""
    _, trace_id, parent_id, _ = traceparent.split("-")
    now = time.time_ns()
    root = {"name": "agent.run", "attributes": {}, "ok": True, "message": ""}
    root_id = secrets.token_hex(8)
    out = [_otlp_json(root, trace_id, root_id, parent_id, now)]
    out += [_otlp_json(span, trace_id, secrets.token_hex(8), root_id, now) for span in spans]
    resource = {"attributes": [{"key": "service.name", "value": {"stringValue": "order-agent"}}]}
    body = {"resourceSpans": [{"resource": resource, "scopeSpans": [{"spans": out}]}]}
    request = urllib.request.Request(
        os.environ["OTEL_EXPORTER_OTLP_ENDPOINT"].rstrip("/") + "/v1/traces",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=10):
        pass


def _otlp_json(span: dict[str, Any], trace_id: str, span_id: str, parent_id: str, now: int) -> dict[str, Any]:
    return {
        "traceId": trace_id,
        "spanId": span_id,
        "parentSpanId": parent_id,
        "name": span["name"],
        "kind": 1,
        "startTimeUnixNano": str(now),
        "endTimeUnixNano": str(now + 1_000_000),
        "attributes": [{"key": k, "value": {"stringValue": str(v)}} for k, v in span["attributes"].items()],
        "status": {"code": 1 if span["ok"] else 2, "message": span["message"]},
    }


def call_api(prompt: str, options: dict[str, Any], context: dict[str, Any]) -> dict[str, Any]:
    steps = plan(prompt)
    spans = []
    for name, arguments in steps:
        ok, message = run_tool(name, arguments)
        attributes = {"tool.name": name, "tool.arguments": json.dumps(arguments)}
        spans.append({"name": f"tool {name}", "attributes": attributes, "ok": ok, "message": message})
    traceparent = str(context.get("traceparent") or "")  # absent: the run does not trace
    exporting = traceparent and os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT")
    if exporting and not _export_with_sdk(spans, traceparent):
        _export_as_json(spans, traceparent)
    tool_calls = [
        {"id": f"call_{index}", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
        for index, (name, args) in enumerate(steps)
    ]
    return {"output": tool_calls}
