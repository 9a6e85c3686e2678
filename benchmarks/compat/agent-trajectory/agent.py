"""An agent standing in for a real one: it reads the W3C trace context its caller gives it
(context['traceparent']) and exports its spans with the OpenTelemetry SDK (protobuf over OTLP/HTTP;
the `json-export` case, and ../agent-exec-trace's agent, send OTLP/JSON written by hand) before it
answers, so they are there when the trace assertions run. The test's `case` var picks the trajectory.
Span times are set explicitly, so durations are exact (milliseconds after the call began).

The receiver's URL comes from OTEL_EXPORTER_OTLP_ENDPOINT (evalh sets it for its Python providers)
or else from the provider's config `collector` (promptfoo sets no variable)."""

import json
import os
import secrets
import time
import urllib.request

MS = 1_000_000


def tool(name, args, start, end, key="tool", extra=None):
    """A tool span: the name and arguments under one of the attribute families promptfoo reads."""
    names = {"tool": "tool.name", "gen_ai": "gen_ai.tool.name", "function": "function.name"}
    arg_keys = {
        "tool": "tool.arguments",
        "gen_ai": "gen_ai.tool.call.arguments",
        "function": "function.arguments",
    }
    attributes = {names[key]: name, **(extra or {})}
    if args is not None:
        attributes[arg_keys[key]] = args if isinstance(args, str) else json.dumps(args)
    return {"name": f"tool {name}", "start": start, "end": end, "attributes": attributes}


def span(name, start, end, children=(), **attributes):
    return {"name": name, "start": start, "end": end, "attributes": attributes, "children": list(children)}


TRAJECTORIES = {
    # plan, search, weather (with a nested HTTP call), answer
    "weather": [
        span(
            "agent.run",
            0,
            400,
            [
                span("llm.plan", 5, 60, **{"gen_ai.request.model": "stub-1"}),
                tool("search", {"query": "weather paris", "limit": 3}, 70, 110),
                dict(
                    tool("get_weather", {"city": "Paris", "unit": "c"}, 120, 240, key="gen_ai"),
                    children=[span("http GET", 130, 230, **{"http.status_code": 200})],
                ),
                span("llm.answer", 250, 380, **{"gen_ai.request.model": "stub-1"}),
            ],
        ),
    ],
    # a failing call retried: an ERROR status, an HTTP 503, an `error` attribute
    "retry": [
        span(
            "agent.run",
            0,
            900,
            [
                dict(
                    tool("get_weather", {"city": "Rome"}, 10, 310, key="gen_ai"),
                    status="upstream timeout",
                    children=[span("http GET", 20, 300, **{"http.status_code": 503})],
                ),
                tool("get_weather", {"city": "Rome"}, 320, 420, key="gen_ai"),
                span("cache.write", 430, 440, **{"error": True}),
                span("llm.answer", 450, 880),
            ],
        ),
    ],
    # function.* attributes, the same tool twice, a database span, nested agent steps
    "research": [
        span(
            "agent.run",
            0,
            700,
            [
                tool(
                    "search",
                    {"query": "otel", "filters": {"lang": "en", "year": 2024}},
                    10,
                    60,
                    key="function",
                ),
                tool("search", {"query": "otlp", "filters": {"lang": "de"}}, 70, 130, key="function"),
                span("db.query", 140, 150, **{"db.system": "sqlite"}),
                span("db.query", 155, 165, **{"db.system": "sqlite"}),
                span(
                    "subagent.summarise",
                    170,
                    650,
                    [
                        tool("read_file", {"path": "notes.md"}, 180, 200),
                        tool("write_file", {"path": "summary.md", "content": "ok"}, 210, 260),
                    ],
                ),
            ],
        ),
    ],
    # arguments that are not JSON, arguments that are a list, a tool with no arguments
    "odd-args": [
        span(
            "agent.run",
            0,
            200,
            [
                tool("calculator", "2 + 2", 10, 20),
                tool("batch", [1, "two", {"three": 3}], 30, 40),
                tool("clock", None, 50, 60),
            ],
        ),
    ],
    # one slow step
    "slow": [
        span(
            "agent.run",
            0,
            2500,
            [
                span("llm.plan", 0, 1900, **{"gen_ai.request.model": "stub-1"}),
                tool("search", {"query": "x"}, 1900, 1950),
                span("llm.answer", 1950, 2450),
            ],
        ),
    ],
    # sent as OTLP/JSON: typed attribute values, a failed refund
    "json-export": [
        tool(
            "lookup_order",
            {"order_id": "A7"},
            0,
            30,
            extra={"retries": 2, "cached": False, "tags": ["a", "b"]},
        ),
        dict(tool("refund", {"order_id": "A7", "amount": 12.5}, 40, 90), status="refund failed"),
    ],
    # the provider sends nothing
    "silent": [],
}


def export(traceparent, trajectory, collector):
    """The trajectory through the OpenTelemetry SDK (protobuf over OTLP/HTTP), sent before returning."""
    # imported here, so the module also serves agents run by a Python without the SDK (OTLP/JSON only)
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.trace import Status, StatusCode, set_span_in_context
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    provider = TracerProvider(resource=Resource.create({"service.name": "compat-agent"}))
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=f"{collector}/v1/traces")))
    tracer = provider.get_tracer("compat-agent")
    parent = TraceContextTextMapPropagator().extract({"traceparent": traceparent})
    began = time.time_ns()

    def emit(node, context):
        started = tracer.start_span(
            node["name"],
            context=context,
            start_time=began + node["start"] * MS,
            attributes=node["attributes"],
        )
        if node.get("status"):  # an ERROR status with its message
            started.set_status(Status(StatusCode.ERROR, node["status"]))
        for child in node.get("children", []):
            emit(child, set_span_in_context(started))
        started.end(end_time=began + node["end"] * MS)

    for node in trajectory:
        emit(node, parent)
    provider.shutdown()  # exports what is left before the answer goes back


def otlp_json(traceparent, trajectory):
    """The trajectory as an OTLP/JSON body, written by hand (no SDK): ids in hex, times as strings of
    nanoseconds, typed attribute values (ints, bools, lists), an OK or ERROR status on every span."""
    _, trace_id, parent_id, _ = traceparent.split("-")
    began = time.time_ns()
    spans = []

    def value(v):
        if isinstance(v, bool):
            return {"boolValue": v}
        if isinstance(v, int):
            return {"intValue": str(v)}
        if isinstance(v, list):
            return {"arrayValue": {"values": [value(x) for x in v]}}
        return {"stringValue": v}

    def emit(node, parent):
        span_id = secrets.token_hex(8)
        status = {"code": 2, "message": node["status"]} if node.get("status") else {"code": 1}
        spans.append(
            {
                "traceId": trace_id,
                "spanId": span_id,
                "parentSpanId": parent,
                "name": node["name"],
                "kind": 1,
                "startTimeUnixNano": str(began + node["start"] * MS),
                "endTimeUnixNano": str(began + node["end"] * MS),
                "attributes": [{"key": k, "value": value(v)} for k, v in node["attributes"].items()],
                "status": status,
            }
        )
        for child in node.get("children", []):
            emit(child, span_id)

    for node in trajectory:
        emit(node, parent_id)
    resource = {"attributes": [{"key": "service.name", "value": value("json-agent")}]}
    return {
        "resourceSpans": [
            {"resource": resource, "scopeSpans": [{"scope": {"name": "compat-agent"}, "spans": spans}]}
        ]
    }


def export_json(traceparent, trajectory, collector):
    body = json.dumps(otlp_json(traceparent, trajectory)).encode()
    headers = {"Content-Type": "application/json"}
    request = urllib.request.Request(f"{collector}/v1/traces", data=body, headers=headers, method="POST")
    with urllib.request.urlopen(request, timeout=10) as answer:
        answer.read()


def call_api(prompt, options, context):
    case = context["vars"]["case"]
    traceparent = context.get("traceparent")
    if traceparent:
        collector = (os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT") or options["config"]["collector"]).rstrip(
            "/"
        )
        if case == "json-export":
            export_json(traceparent, TRAJECTORIES[case], collector)
        else:
            export(traceparent, TRAJECTORIES[case], collector)
    return {"output": f"done: {case}"}
