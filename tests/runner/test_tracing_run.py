"""A traced run end to end: the receiver for the run, a trace context per call reaching Python, exec and
HTTP providers, spans joined to their row by trace id, evalh's GenAI span, no cache reads, and the
receiver gone after the run."""

from __future__ import annotations

import json
import socket
import sys
import textwrap
from dataclasses import replace
from pathlib import Path

import pytest

from evalh.errors import ConfigError
from evalh.model import (
    AssertionSpec,
    Prompt,
    ProviderSpec,
    RunOptions,
    Status,
    Suite,
    TestCase,
    TracingSettings,
)
from evalh.runner.execute import run_suite
from tests.loopback import LoopbackServer, Reply
from tests.runner.test_completion_cache import chat_reply

TRACED = TracingSettings(enabled=True, port=0, wait_ms=3000)

# A Python provider instrumented as promptfoo's docs say: the real SDK, SimpleSpanProcessor, an OTLP/HTTP
# exporter (protobuf) finding the receiver through OTEL_EXPORTER_OTLP_ENDPOINT, child spans of the
# call's traceparent.
AGENT = """
import json
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.propagate import extract
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter()))
tracer = provider.get_tracer("agent")

def call_api(prompt, options, context):
    if "traceparent" not in context:
        return {"output": json.dumps(sorted(context))}
    parent = extract({"traceparent": context["traceparent"]})
    with tracer.start_as_current_span("agent.run", context=parent):
        for step in range(2):
            with tracer.start_as_current_span(f"tool.{prompt}") as span:
                span.set_attribute("tool.name", prompt)
                span.set_attribute("step", step)
    return {"output": context["traceId"]}
"""


def python_suite(tmp_path: Path, names: list[str], tracing: TracingSettings = TRACED) -> Suite:
    (tmp_path / "agent.py").write_text(AGENT)
    provider = ProviderSpec(id="file://agent.py", base_dir=str(tmp_path))
    tests = tuple(TestCase(index=i, vars={"q": name}) for i, name in enumerate(names))
    return Suite(
        tests=tests, prompts=(Prompt(raw="{{q}}", label="q"),), providers=(provider,), tracing=tracing
    )


def test_spans_from_the_real_exporter_join_their_row_with_rows_in_parallel(tmp_path: Path) -> None:
    names = ["search", "lookup", "book", "cancel", "refund", "greet"]
    run = run_suite(python_suite(tmp_path, names), RunOptions(max_concurrency=4))
    assert [row.status for row in run.results] == [Status.PASS] * len(names)
    for name, row in zip(names, run.results, strict=True):
        assert row.trace is not None
        assert row.output == row.trace.trace_id  # the provider's context['traceId']
        assert [span.name for span in row.trace.spans] == ["agent.run", f"tool.{name}", f"tool.{name}"]
        assert {span.trace_id for span in row.trace.spans} == {row.trace.trace_id}
        tools = [span.attributes for span in row.trace.spans[1:]]
        assert tools == [{"tool.name": name, "step": 0}, {"tool.name": name, "step": 1}]
    assert len({row.trace.trace_id for row in run.results if row.trace}) == len(names)


def test_a_run_without_tracing_is_unchanged(tmp_path: Path) -> None:
    run = run_suite(python_suite(tmp_path, ["search"], TracingSettings()), RunOptions(cache=False))
    (row,) = run.results
    assert row.trace is None
    assert json.loads(row.output) == ["prompt_label", "vars"]  # no traceparent, no traceId


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_the_receiver_lives_for_the_run_only(tmp_path: Path) -> None:
    port = _free_port()
    run = run_suite(python_suite(tmp_path, ["search"], replace(TRACED, port=port)), RunOptions())
    assert run.results[0].trace is not None and len(run.results[0].trace.spans) == 3
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", port), timeout=2).close()


def test_a_port_in_use_stops_the_run_before_any_call(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        suite = python_suite(tmp_path, ["search"], replace(TRACED, port=taken.getsockname()[1]))
        with pytest.raises(ConfigError, match=r"tracing\.otlp\.http\.port"):
            run_suite(suite, RunOptions())


MALFORMED = """
import json, os, urllib.request, urllib.error

def post(body, kind):
    request = urllib.request.Request(os.environ["OTEL_EXPORTER_OTLP_ENDPOINT"] + "/v1/traces", data=body,
                                     headers={"Content-Type": kind})
    try:
        return urllib.request.urlopen(request).status
    except urllib.error.HTTPError as error:
        return error.code

def call_api(prompt, options, context):
    bad = post(b"{nope", "application/json")
    span = {"traceId": context["traceId"], "spanId": "00f067aa0ba902b7", "name": "step",
            "startTimeUnixNano": "1", "endTimeUnixNano": "2"}
    good = post(json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [span] * 3}]}]}).encode(),
                "application/json")
    return f"{bad} {good}"
"""


def test_malformed_otlp_gets_a_400_and_the_run_goes_on(tmp_path: Path) -> None:
    (tmp_path / "agent.py").write_text(MALFORMED)
    provider = ProviderSpec(id="file://agent.py", base_dir=str(tmp_path))
    tests = (TestCase(index=0, vars={}, asserts=(AssertionSpec(type="equals", value="400 200"),)),)
    suite = Suite(tests=tests, prompts=(Prompt(raw="hi", label="p"),), providers=(provider,), tracing=TRACED)
    (row,) = run_suite(suite, RunOptions()).results
    assert row.status is Status.PASS
    assert row.trace is not None and [span.name for span in row.trace.spans] == ["step"] * 3


def test_exec_providers_get_traceparent_and_the_endpoint_in_their_environment(tmp_path: Path) -> None:
    script = tmp_path / "show_env.py"
    script.write_text(
        "import os, json\n"
        "print(json.dumps([os.environ.get('TRACEPARENT'), os.environ.get('OTEL_EXPORTER_OTLP_ENDPOINT')]))\n"
    )
    provider = ProviderSpec(id=f"exec:{sys.executable} {script}", base_dir=str(tmp_path))
    tests = tuple(TestCase(index=i, vars={}) for i in range(2))
    suite = Suite(tests=tests, prompts=(Prompt(raw="hi", label="p"),), providers=(provider,), tracing=TRACED)
    run = run_suite(suite, RunOptions())
    for row in run.results:
        traceparent, endpoint = json.loads(row.output)
        assert row.trace is not None
        assert traceparent.startswith(f"00-{row.trace.trace_id}-") and traceparent.endswith("-01")
        assert endpoint.startswith("http://127.0.0.1:")
    assert "TRACEPARENT" not in __import__("os").environ


def chat_suite(loopback: LoopbackServer, tracing: TracingSettings) -> Suite:
    provider = ProviderSpec(
        id="openai:chat:tiny",
        config={"apiBaseUrl": loopback.url + "/v1", "apiKey": "sk-test", "temperature": 0},
    )
    tests = (TestCase(index=0, vars={"q": "alpha"}),)
    return Suite(
        tests=tests, prompts=(Prompt(raw="{{q}}", label="q"),), providers=(provider,), tracing=tracing
    )


def test_chat_providers_send_traceparent_and_get_evalhs_genai_span(loopback: LoopbackServer) -> None:
    loopback.route("POST", "/v1/chat/completions", chat_reply)
    (row,) = run_suite(chat_suite(loopback, TRACED), RunOptions()).results
    assert row.trace is not None
    (span,) = row.trace.spans
    assert loopback.requests[0].header("traceparent") == f"00-{row.trace.trace_id}-{span.span_id}-01"
    assert span.name == "chat tiny" and span.kind == "CLIENT" and span.status_code == "OK"
    assert span.attributes["gen_ai.system"] == "openai"
    assert span.attributes["gen_ai.request.model"] == "tiny"
    assert span.attributes["gen_ai.request.temperature"] == 0
    assert (span.attributes["gen_ai.usage.input_tokens"], span.attributes["gen_ai.usage.output_tokens"]) == (
        5,
        3,
    )
    assert span.attributes["gen_ai.response.finish_reasons"] == ["stop"]
    assert span.attributes["promptfoo.provider.id"] == "openai:chat:tiny"


def test_a_traced_run_does_not_read_answers_from_the_cache(loopback: LoopbackServer) -> None:
    loopback.route("POST", "/v1/chat/completions", chat_reply)
    run_suite(chat_suite(loopback, TracingSettings()), RunOptions())  # written to the cache
    untraced = run_suite(chat_suite(loopback, TracingSettings()), RunOptions())
    assert untraced.results[0].cached and len(loopback.requests) == 1
    traced = run_suite(chat_suite(loopback, TRACED), RunOptions())
    assert not traced.results[0].cached and len(loopback.requests) == 2
    assert loopback.requests[1].header("traceparent") is not None


def test_http_providers_send_traceparent(loopback: LoopbackServer) -> None:
    loopback.route("POST", "/chat", lambda request: Reply.json({"answer": "ok"}))
    provider = ProviderSpec(id="http", config={"url": loopback.url + "/chat", "responsePath": "answer"})
    tests = (TestCase(index=0, vars={}),)
    suite = Suite(tests=tests, prompts=(Prompt(raw="hi", label="p"),), providers=(provider,), tracing=TRACED)
    (row,) = run_suite(suite, RunOptions()).results
    assert row.output == "ok" and row.trace is not None
    header = loopback.requests[0].header("traceparent")
    assert header is not None and header.startswith(f"00-{row.trace.trace_id}-")


def test_recorded_outputs_have_no_trace() -> None:
    tests = (TestCase(index=0, output="x", has_output=True),)
    (row,) = run_suite(Suite(tests=tests, tracing=TRACED), RunOptions()).results
    assert row.trace is None


def test_the_config_block_is_read_as_promptfoo_writes_it(tmp_path: Path) -> None:
    from evalh.config.load import load_suite

    config = tmp_path / "c.yaml"
    config.write_text(
        textwrap.dedent(
            """
            tracing:
              enabled: true
              waitMs: 500
              otlp: {http: {enabled: true, port: 0, host: 127.0.0.1, acceptFormats: [json, protobuf]}}
            prompts: [hi]
            providers: [echo]
            """
        )
    )
    assert load_suite(config).tracing == TracingSettings(enabled=True, port=0, receive=True, wait_ms=500)


def test_assertions_read_the_rows_spans_through_ctx_trace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from evalh.assertions import registry
    from evalh.assertions.base import AssertionContext
    from evalh.model import Measurement

    seen: list[tuple[str, int]] = []

    async def count_spans(ctx: AssertionContext) -> Measurement:
        assert ctx.trace is not None
        spans = await ctx.trace.spans()
        seen.append((ctx.trace.trace_id, len(spans)))
        return Measurement(value=float(len(spans)), subject="spans")

    registry.all_assertions()  # the families registered first
    definition = registry.AssertionDef(name="x-span-count", fn=count_spans, family="test", description="")
    monkeypatch.setitem(registry._REGISTRY, "x-span-count", definition)
    suite = python_suite(tmp_path, ["search", "book"])
    suite = replace(
        suite, tests=tuple(replace(t, asserts=(AssertionSpec(type="x-span-count"),)) for t in suite.tests)
    )
    run = run_suite(suite, RunOptions())
    assert [row.status for row in run.results] == [Status.PASS, Status.PASS]
    assert sorted(seen) == sorted((row.trace.trace_id, 3) for row in run.results if row.trace)


def test_without_the_receiver_only_evalhs_own_spans_are_kept(
    loopback: LoopbackServer, tmp_path: Path
) -> None:
    loopback.route("POST", "/v1/chat/completions", chat_reply)
    no_receiver = replace(TRACED, port=_free_port(), receive=False)
    (row,) = run_suite(chat_suite(loopback, no_receiver), RunOptions()).results
    assert row.trace is not None and [span.name for span in row.trace.spans] == ["chat tiny"]
    script = tmp_path / "show_env.py"
    script.write_text("import os\nprint(os.environ.get('OTEL_EXPORTER_OTLP_ENDPOINT', 'none'))\n")
    provider = ProviderSpec(id=f"exec:{sys.executable} {script}", base_dir=str(tmp_path))
    suite = Suite(
        tests=(TestCase(index=0, vars={}),), prompts=(Prompt(raw="hi", label="p"),), providers=(provider,)
    )
    (row,) = run_suite(replace(suite, tracing=no_receiver), RunOptions()).results
    assert row.output == "none" and row.trace is not None and row.trace.spans == ()
