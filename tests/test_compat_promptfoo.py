"""The agreement script (benchmarks/compat_promptfoo.py) and its agent corpus: promptfoo keeps the
spans of traced configs, and the corpus's traced agent really exports its spans, under the trace
context it is given, to the receiver it is pointed at (a real OTLP exporter to a real loopback server).
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from tests.loopback import LoopbackServer, Reply

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "benchmarks" / "compat"
TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT_ID = "00f067aa0ba902b7"
TRACEPARENT = f"00-{TRACE_ID}-{PARENT_ID}-01"


def load(path: Path, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def script() -> ModuleType:
    return load(ROOT / "benchmarks" / "compat_promptfoo.py", "compat_promptfoo")


@pytest.fixture(scope="module")
def agent() -> ModuleType:
    return load(CORPUS / "agent-trajectory" / "agent.py", "compat_traced_agent")


def test_promptfoo_writes_its_database_for_a_traced_config_only(script: ModuleType, tmp_path: Path) -> None:
    # promptfoo drops every span of a trace it could not record, and with --no-write it records none
    plain = tmp_path / "plain" / "promptfooconfig.yaml"
    traced = tmp_path / "traced" / "promptfooconfig.yaml"
    for config, extra in ((plain, ""), (traced, "tracing: {enabled: true, otlp: {http: {enabled: true}}}\n")):
        config.parent.mkdir()
        config.write_text(f"prompts: ['{{{{q}}}}']\nproviders: [echo]\n{extra}", encoding="utf-8")
    report = tmp_path / "out.json"
    assert "--no-write" in script.promptfoo_command(["promptfoo"], plain, report)
    assert "--no-write" not in script.promptfoo_command(["promptfoo"], traced, report)
    for name in ("agent-trajectory", "agent-trace-spans"):
        assert script.traces(CORPUS / name / "promptfooconfig.yaml"), name
    assert not script.traces(CORPUS / "agent-trace-off" / "promptfooconfig.yaml")


def test_neither_tool_inherits_a_span_destination(
    script: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector.example:4318")
    monkeypatch.setenv("PROMPTFOO_TRACING_ENABLED", "true")
    env = script.promptfoo_env(Path("/tmp/promptfoo-home"))
    assert "OTEL_EXPORTER_OTLP_ENDPOINT" not in env and "PROMPTFOO_TRACING_ENABLED" not in env
    assert "OTEL_EXPORTER_OTLP_ENDPOINT" not in script.hermetic_env()


def exported(server: LoopbackServer) -> list[Any]:
    spans = []
    for request in server.requests_to("/v1/traces"):
        assert request.header("Content-Type") == "application/x-protobuf"
        message = ExportTraceServiceRequest.FromString(request.body)
        spans += [s for rs in message.resource_spans for ss in rs.scope_spans for s in ss.spans]
    return spans


def call_agent(agent: ModuleType, server: LoopbackServer, case: str, traceparent: str | None) -> Any:
    context: dict[str, Any] = {"vars": {"case": case}}
    if traceparent:
        context["traceparent"] = traceparent
    return agent.call_api(case, {"config": {"collector": server.url}}, context)


def test_the_traced_agent_exports_its_trajectory_under_the_given_context(
    agent: ModuleType, loopback: LoopbackServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_ENDPOINT", raising=False)  # the config's collector is used
    loopback.route("POST", "/v1/traces", lambda request: Reply())
    assert call_agent(agent, loopback, "weather", TRACEPARENT) == {"output": "done: weather"}
    spans = {span.name: span for span in exported(loopback)}  # all sent before the answer
    assert sorted(spans) == [
        "agent.run",
        "http GET",
        "llm.answer",
        "llm.plan",
        "tool get_weather",
        "tool search",
    ]
    assert {span.trace_id.hex() for span in spans.values()} == {TRACE_ID}
    assert spans["agent.run"].parent_span_id.hex() == PARENT_ID
    assert spans["http GET"].parent_span_id == spans["tool get_weather"].span_id
    weather = {kv.key: kv.value.string_value for kv in spans["tool get_weather"].attributes}
    assert weather["gen_ai.tool.name"] == "get_weather"
    assert json.loads(weather["gen_ai.tool.call.arguments"]) == {"city": "Paris", "unit": "c"}
    duration_ns = (
        spans["tool get_weather"].end_time_unix_nano - spans["tool get_weather"].start_time_unix_nano
    )
    assert duration_ns == 120 * 1_000_000


def test_the_retrying_agent_reports_its_failed_call(
    agent: ModuleType, loopback: LoopbackServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", loopback.url)  # as evalh sets it for the agent
    loopback.route("POST", "/v1/traces", lambda request: Reply())
    call_agent(agent, loopback, "retry", TRACEPARENT)
    failed = [span for span in exported(loopback) if span.status.code == 2]  # STATUS_CODE_ERROR
    assert [(span.name, span.status.message) for span in failed] == [("tool get_weather", "upstream timeout")]


def test_the_agent_sends_nothing_without_a_trace_context_or_when_silent(
    agent: ModuleType, loopback: LoopbackServer
) -> None:
    loopback.route("POST", "/v1/traces", lambda request: Reply())
    call_agent(agent, loopback, "weather", None)
    call_agent(agent, loopback, "silent", TRACEPARENT)
    assert loopback.requests == []


def test_the_json_exporting_agent_sends_otlp_json(agent: ModuleType, loopback: LoopbackServer) -> None:
    loopback.route("POST", "/v1/traces", lambda request: Reply())
    call_agent(agent, loopback, "json-export", TRACEPARENT)
    (request,) = loopback.requests_to("/v1/traces")
    assert request.header("Content-Type") == "application/json"
    spans = request.json["resourceSpans"][0]["scopeSpans"][0]["spans"]
    assert [(s["traceId"], s["parentSpanId"], s["name"]) for s in spans] == [
        (TRACE_ID, PARENT_ID, "tool lookup_order"),
        (TRACE_ID, PARENT_ID, "tool refund"),
    ]
    assert spans[1]["status"] == {"code": 2, "message": "refund failed"}


def test_a_kept_promptfoo_report_goes_stale_when_a_sibling_folder_it_reads_changes(
    script: ModuleType, tmp_path: Path
) -> None:
    shared, user, work = tmp_path / "agent-shared", tmp_path / "agent-user", tmp_path / "work"
    for folder in (shared, user, work):
        folder.mkdir()
    (shared / "agent.py").write_text("def call_api(prompt, options, context):\n    return 'a'\n")
    config = user / "promptfooconfig.yaml"
    config.write_text("prompts: ['x']\nproviders: ['file://../agent-shared/agent.py']\n", encoding="utf-8")
    (work / "promptfoo.json").write_text('{"results": {"results": []}}', encoding="utf-8")
    (work / "promptfoo.seconds").write_text("1.0\n")
    assert script.input_folders(config) == [user, shared]
    assert script.reused_promptfoo(config, work) is not None
    later = (work / "promptfoo.json").stat().st_mtime + 10
    os.utime(shared / "agent.py", (later, later))
    assert script.reused_promptfoo(config, work) is None
