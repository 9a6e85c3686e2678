"""`javascript` and `python` assertions read a traced row's spans as promptfoo's do: `context.trace =
{traceId, spans}` with each span as promptfoo's trace store gives it (times in ms, statusCode 0/1/2), on a
real traced run (the real OpenTelemetry exporter in a Python provider); an untraced run has no `trace`."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from evalh.model import AssertionSpec, RunOptions, Status, TracingSettings
from evalh.runner.execute import run_suite
from tests.runner.test_tracing_run import python_suite

# promptfoo's tracing.md example, and the same question asked in Python
JAVASCRIPT = (
    "const tools = context.trace.spans.filter((s) => s.attributes['tool.name'] === 'search');\n"
    "const target = context.trace.spans.find((s) => s.attributes['promptfoo.span.role'] === 'target');\n"
    "return tools.length === 2 && context.trace.traceId === output && target.statusCode === 1 "
    "&& tools.every((s) => s.endTime >= s.startTime && s.startTime > 1e12 && s.parentSpanId);"
)
PYTHON = (
    "spans = context['trace']['spans']\n"
    "tools = [s for s in spans if s['attributes'].get('tool.name') == 'search']\n"
    "return len(tools) == 2 and context['trace']['traceId'] == output and "
    "all(s['statusCode'] in (0, 1) and s['statusMessage'] is None for s in spans)"
)


def _with_asserts(suite_path: Path) -> list[Status]:
    suite = python_suite(suite_path, ["search"])
    asserts = (AssertionSpec(type="javascript", value=JAVASCRIPT), AssertionSpec(type="python", value=PYTHON))
    suite = replace(suite, tests=tuple(replace(test, asserts=asserts) for test in suite.tests))
    return [row.status for row in run_suite(suite, RunOptions(cache=False)).results]


def test_scripts_read_the_rows_spans_from_context_trace(tmp_path: Path) -> None:
    assert _with_asserts(tmp_path) == [Status.PASS]


def test_an_untraced_run_gives_scripts_no_trace(tmp_path: Path) -> None:
    suite = python_suite(tmp_path, ["search"], TracingSettings())
    asserts = (
        AssertionSpec(type="python", value="'trace' not in context"),
        AssertionSpec(type="javascript", value="context.trace === undefined"),
    )
    suite = replace(suite, tests=tuple(replace(test, asserts=asserts) for test in suite.tests))
    assert [row.status for row in run_suite(suite, RunOptions(cache=False)).results] == [Status.PASS]
