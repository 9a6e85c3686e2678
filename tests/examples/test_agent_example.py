"""The agent example's loopback agent exports its tool spans both ways: through the OpenTelemetry SDK when
installed, and as plain OTLP JSON over urllib (the base install), each joined to the run's trace."""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest
import yaml

from evalh.config.load import load_suite_data
from evalh.model import RunOptions
from evalh.runner.execute import run_suite
from evalh.tracing.collector import SpanCollector
from evalh.tracing.receiver import OtlpReceiver

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "configs" / "agent.yaml"


def _agent() -> ModuleType:
    spec = importlib.util.spec_from_file_location("example_agent", EXAMPLE.parent / "agent" / "agent.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def receiver(monkeypatch: pytest.MonkeyPatch) -> Iterator[OtlpReceiver]:
    started = OtlpReceiver(SpanCollector(), 0)
    started.start()
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", started.base_url)  # the agent runs in this process here
    yield started
    started.stop()


TOOLS = ["tool search_orders", "tool get_shipping_status", "tool compose_reply"]


@pytest.mark.parametrize("exporter", ["sdk", "json"])
def test_the_agent_exports_one_span_per_tool_step(receiver: OtlpReceiver, exporter: str) -> None:
    agent = _agent()
    context = receiver.collector.issue()
    message = "Where is order 1001?"
    if exporter == "json":
        steps = agent.plan(message)
        spans = [
            {"name": f"tool {name}", "attributes": {"tool.name": name}, "ok": True, "message": ""}
            for name, _ in steps
        ]
        agent._export_as_json(spans, context.traceparent)
    else:
        output = agent.call_api(message, {}, {"traceparent": context.traceparent})["output"]
        assert [call["function"]["name"] for call in output] == [name.split()[1] for name in TOOLS]
    trace = receiver.collector.row_trace(context.trace_id)
    names = [span.name for span in trace.spans]
    assert names[0] == "agent.run" and sorted(names[1:]) == sorted(TOOLS)
    assert trace.spans[0].parent_span_id == context.span_id
    assert {span.service for span in trace.spans} == {"order-agent"}
    tool_names = [span.attributes["tool.name"] for span in trace.spans[1:]]
    assert sorted(tool_names) == sorted(name.split()[1] for name in TOOLS)


def test_the_example_run_joins_each_rows_tool_spans() -> None:
    # the example's provider and tracing as written; its assertions are graded by the examples' test
    data = yaml.safe_load(EXAMPLE.read_text(encoding="utf-8"))
    data["tests"] = [{key: v for key, v in test.items() if key != "assert"} for test in data["tests"]]
    suite = load_suite_data(data, base_dir=EXAMPLE.parent)
    run = run_suite(suite, RunOptions(cache=False))
    traces = [row.trace for row in run.results]
    assert all(trace is not None for trace in traces)
    tools = [
        sorted(s.attributes.get("tool.name", "") for s in t.spans if s.name != "agent.run")
        for t in traces
        if t
    ]
    assert tools == [
        ["compose_reply", "get_shipping_status", "search_orders"],
        ["compose_reply", "search_faq"],
        ["cancel_order", "compose_reply", "search_orders"],
    ]
    errors = [[s.name for s in t.spans if s.status_code == "ERROR"] for t in traces if t]
    assert errors == [[], [], ["tool search_orders", "tool cancel_order"]]
