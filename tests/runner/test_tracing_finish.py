"""promptfoo's remaining tracing keys in a real run (``otlp.http.redactAttributes``, ``commandToolNames``)
and the notice of spans that reached no row (late, or of a trace the run did not issue)."""

from __future__ import annotations

import json
import textwrap
from dataclasses import replace
from pathlib import Path

from evalh.common.notices import warnings_to
from evalh.model import RunOptions, Span, Status
from evalh.runner.execute import run_suite
from evalh.runner.traces import RunTracing
from evalh.secrets import MARKER
from evalh.tracing.collector import new_trace_context
from tests.cli.test_cli import evalh
from tests.runner.test_tracing_run import TRACED, python_suite

SECRET = "sk-live-9f8e7d6c5b4a"

# A Python agent instrumented as promptfoo's docs say (real SDK, SimpleSpanProcessor, protobuf), whose
# spans carry a secret in an attribute and a shell tool of its own, `Bash`.
SECRET_AGENT = f"""
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.propagate import extract
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter()))
tracer = provider.get_tracer("agent")

def call_api(prompt, options, context):
    parent = extract({{"traceparent": context["traceparent"]}})
    with tracer.start_as_current_span("agent.run", context=parent) as run:
        run.set_attribute("user.API_KEY", "{SECRET}")
        with tracer.start_as_current_span("{SECRET}") as call:
            call.set_attribute("tool.name", "lookup")
            call.set_attribute("auth.Token", "{SECRET}")  # the span's name echoes it: redacted too
            call.set_attribute("tool.arguments", '{{"query": "shoes"}}')
        with tracer.start_as_current_span("shell") as shell:
            shell.set_attribute("tool.name", "Bash")
            shell.set_attribute("tool.arguments", '{{"command": "git status"}}')
    return {{"output": "done"}}
"""

CONFIG = """
tracing:
  enabled: true
  commandToolNames: [bash]
  otlp: {http: {port: 0, redactAttributes: [api_key, Token]}}
prompts: ["{{q}}"]
providers: [file://agent.py]
tests:
  - vars: {q: find}
    assert:
      - type: trajectory:tool-args-match
        value: {name: lookup, args: {query: shoes}}
      - type: trajectory:step-count
        value: {type: command, pattern: git, min: 1, max: 1}
      - type: javascript
        value: "true"
"""


def test_named_attributes_never_reach_assertions_reports_or_the_console(tmp_path: Path) -> None:
    (tmp_path / "agent.py").write_text(SECRET_AGENT)
    (tmp_path / "evalh.yaml").write_text(textwrap.dedent(CONFIG))
    out = tmp_path / "out.json"
    done = evalh("run", "-c", "evalh.yaml", "-o", str(out), "--no-write", "-j", "1", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert SECRET not in done.stdout + done.stderr
    report = out.read_text()
    assert SECRET not in report
    (row,) = json.loads(report)["results"]["results"]
    assert row["success"], row["gradingResult"]
    spans = {span["name"]: span for span in row["trace"]["spans"]}
    assert spans["agent.run"]["attributes"]["user.API_KEY"] == MARKER
    call = spans[MARKER]  # the span named after the secret
    assert call["attributes"] == {**call["attributes"], "auth.Token": MARKER, "tool.name": "lookup"}


# One row ends a span 0.5 s after it answered (its row is written by then: waitMs is 100 ms); the next
# starts a span outside the call's trace context (a new trace id) and answers after that late span came.
LATE_AGENT = """
import threading, time
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.propagate import extract
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter()))
tracer = provider.get_tracer("agent")
late_done = threading.Event()

def call_api(prompt, options, context):
    if prompt == "late":
        span = tracer.start_span("slow.tool", context=extract({"traceparent": context["traceparent"]}))
        threading.Timer(0.5, lambda: (span.end(), late_done.set())).start()
    else:
        late_done.wait(30)
        with tracer.start_as_current_span("orphan"):
            pass
    return {"output": prompt}
"""


def test_spans_that_reach_no_row_are_said_once_at_the_end_even_under_strict(tmp_path: Path) -> None:
    suite = python_suite(tmp_path, ["late", "orphan"], replace(TRACED, wait_ms=100))
    (tmp_path / "agent.py").write_text(LATE_AGENT)
    shown: list[str] = []
    with warnings_to(shown.append, strict=True):  # a notice, never an error: the rows are kept
        run = run_suite(replace(suite, config_path="evalh.yaml"), RunOptions(max_concurrency=1, cache=False))
    assert [row.status for row in run.results] == [Status.PASS, Status.PASS]
    assert [span.name for span in run.results[0].trace.spans] == ["file://agent.py"]  # type: ignore[union-attr]
    (notice,) = shown
    assert notice.startswith("evalh.yaml tracing: 1 span arrived after its row was written and 1 span ")
    assert "carried a trace id this run did not issue" in notice
    assert (
        "SimpleSpanProcessor" in notice and "force_flush()" in notice and "tracing.waitMs (now 100)" in notice
    )


def test_a_run_whose_spans_all_found_their_row_says_nothing(tmp_path: Path) -> None:
    shown: list[str] = []
    with warnings_to(shown.append):
        run = run_suite(python_suite(tmp_path, ["search"]), RunOptions(cache=False))
    assert run.results[0].trace is not None and len(run.results[0].trace.spans) == 4
    assert shown == []


def test_the_notice_gives_only_the_advice_for_what_happened(tmp_path: Path) -> None:
    tracing = RunTracing(replace(TRACED, receive=False))
    orphan = new_trace_context()
    tracing.collector.add([Span(trace_id=orphan.trace_id, span_id=orphan.span_id, name="x", start_ns=1)])
    shown: list[str] = []
    with warnings_to(shown.append):
        tracing.lost_spans_notice("tracing")
    (notice,) = shown
    assert notice.startswith("tracing: 1 span carried a trace id this run did not issue")
    assert "context['traceparent']" in notice and "SimpleSpanProcessor" not in notice
