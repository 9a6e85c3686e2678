"""The cost of tracing: decoding OTLP bodies, the receiver end to end, a traced run against the same run
untraced, and the trace assertions per row.

    python benchmarks/bench_tracing.py [--rows 400] [--sections decode,receiver,run,assertions]
        [--profile] [--spans 20000]

- ``decode``: ``decode_export`` of protobuf bodies made by the real SDK's encoder (the bytes
  ``OTLPSpanExporter`` posts) and of the same requests as OTLP/JSON (hex ids): spans per second, CPU.
- ``receiver``: a separate Python process exports ``--spans`` spans with the real ``OTLPSpanExporter``
  (a ``BatchSpanProcessor``, as an instrumented agent usually runs) to evalh's receiver; CPU of evalh's
  process (the receiver's threads, decoding, the collector) per 1,000 spans.
- ``run``: ``--rows`` rows of a Python provider exporting 5 spans each (the real SDK,
  ``SimpleSpanProcessor``) run untraced, traced, traced with 4 trace assertions a row, and that with
  ``wait_ms: 0`` (no quiet wait: what the 150 ms wait per row costs), at concurrency 4 and 16: CPU of
  evalh's process and wall seconds, and the ratios; ``--profile`` adds cProfile's top
  entries of the traced run (the event loop's thread only: the receiver's threads are the ``receiver``
  section's figure).
- ``assertions``: seven trace assertions over a 100- and a 1,000-span trace, CPU per row.

CPU is ``time.process_time()`` (every thread of evalh's process, not the provider's worker processes).
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import functools
import io
import json
import pstats
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from evalh.model import (
    AssertionSpec,
    Prompt,
    ProviderSpec,
    RunOptions,
    Span,
    Suite,
    TestCase,
    TracingSettings,
)
from evalh.runner.execute import run_suite
from evalh.runtimes.python import shutdown_workers
from evalh.tracing.collector import SpanCollector
from evalh.tracing.otlp import decode_export
from evalh.tracing.receiver import OtlpReceiver

PROTOBUF = "application/x-protobuf"
TRACED = TracingSettings(enabled=True, port=0, wait_ms=3000)


def cpu_and_wall(work: Callable[[], Any]) -> tuple[float, float, Any]:
    cpu, wall = time.process_time(), time.perf_counter()
    result = work()
    return time.process_time() - cpu, time.perf_counter() - wall, result


# ------------------------------------------------------------------------------------------ decode


def sdk_requests(batches: int, spans_per_batch: int) -> list[Any]:
    """``ExportTraceServiceRequest`` messages as the SDK's exporter encodes them: agent-like spans (a tool
    name, JSON arguments, a few scalars) made by a real tracer."""
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("bench")
    requests = []
    for batch in range(batches):
        exporter.clear()
        for index in range(spans_per_batch):
            with tracer.start_as_current_span(f"execute_tool search_{index % 7}") as span:
                span.set_attribute("tool.name", f"search_{index % 7}")
                span.set_attribute("tool.arguments", json.dumps({"query": f"order {batch}-{index}", "n": 3}))
                span.set_attribute("gen_ai.usage.input_tokens", 120 + index)
                span.set_attribute("step", index)
        requests.append(encode_spans(exporter.get_finished_spans()))
    return requests


def as_otlp_json(request: Any) -> bytes:
    """The request in OTLP/JSON: the protobuf JSON mapping with ids as hex, as the OTLP spec writes them."""
    import base64

    from google.protobuf.json_format import MessageToDict

    document = MessageToDict(request)
    for resource in document.get("resourceSpans", []):
        for scope in resource.get("scopeSpans", []):
            for span in scope.get("spans", []):
                for key in ("traceId", "spanId", "parentSpanId"):
                    if key in span:
                        span[key] = base64.b64decode(span[key]).hex()
    return json.dumps(document).encode()


def decode_all(bodies: Sequence[bytes], content_type: str) -> None:
    for body in bodies:
        decode_export(body, content_type)


def bench_decode(repeats: int = 3) -> None:
    print("## decode_export (in process, best of 3)")
    for spans_per_body in (5, 100):
        batches = max(1, 10_000 // spans_per_body)
        requests = sdk_requests(batches, spans_per_body)
        for kind, bodies, content_type in (
            ("protobuf", [r.SerializeToString() for r in requests], PROTOBUF),
            ("json", [as_otlp_json(r) for r in requests], "application/json"),
        ):
            best = min(
                cpu_and_wall(functools.partial(decode_all, bodies, content_type))[0] for _ in range(repeats)
            )
            total = batches * spans_per_body
            size = sum(len(body) for body in bodies) / total
            print(
                f"{kind:8} {spans_per_body:3} spans a body: {total / best:9,.0f} spans/s, "
                f"{best:.3f} s CPU for {total:,} spans ({size:.0f} bytes a span)"
            )


# ----------------------------------------------------------------------------------------- receiver

EXPORTER_PROGRAM = """
import json, sys
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor

from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags, set_span_in_context

endpoint, count, trace_ids = sys.argv[1], int(sys.argv[2]), sys.argv[3].split(",")
batched = sys.argv[4] == "batch"

provider = TracerProvider()
exporter = OTLPSpanExporter(endpoint=endpoint + "/v1/traces")
processor = BatchSpanProcessor(exporter, max_queue_size=count) if batched else SimpleSpanProcessor(exporter)
provider.add_span_processor(processor)
tracer = provider.get_tracer("agent")
for index in range(count):
    parent = SpanContext(int(trace_ids[index % len(trace_ids)], 16), 1, False, TraceFlags(1))
    context = set_span_in_context(NonRecordingSpan(parent))
    with tracer.start_as_current_span(f"execute_tool t{index % 5}", context=context) as span:
        span.set_attribute("tool.name", f"t{index % 5}")
        span.set_attribute("tool.arguments", json.dumps({"q": index}))
provider.shutdown()
"""


def bench_receiver(count: int) -> None:
    print("## receiver: spans from the real OTLPSpanExporter in another process")
    for processor, spans in (("batch", count), ("simple", max(1, count // 10))):
        collector = SpanCollector(max_spans_per_trace=10**9)
        trace_ids = [collector.issue().trace_id for _ in range(100)]
        receiver = OtlpReceiver(collector, 0)
        receiver.start()
        try:
            command = [sys.executable, "-c", EXPORTER_PROGRAM, receiver.base_url, str(spans)]
            command += [",".join(trace_ids), processor]
            cpu, wall, _ = cpu_and_wall(functools.partial(subprocess.run, command, check=True))
        finally:
            receiver.stop()
        kept = sum(len(collector.row_trace(trace_id).spans) for trace_id in trace_ids)
        print(
            f"{processor:6} span processor: kept {kept:,} of {spans:,} spans in {wall:.2f} s wall; evalh's "
            f"process {cpu:.3f} s CPU, {cpu / max(1, kept) * 1000 * 1000:.1f} ms per 1,000 spans"
        )


# ---------------------------------------------------------------------------------------------- run

AGENT = """
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.propagate import extract
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

tracer = None

def _tracer():
    global tracer
    if tracer is None:
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter()))
        tracer = provider.get_tracer("agent")
    return tracer

def call_api(prompt, options, context):
    if "traceparent" not in context:
        return {"output": "answer to " + prompt}
    parent = extract({"traceparent": context["traceparent"]})
    with _tracer().start_as_current_span("agent.run", context=parent):
        for step, tool in enumerate(("search_orders", "get_order", "refund", "notify")):
            with _tracer().start_as_current_span("execute_tool " + tool) as span:
                span.set_attribute("tool.name", tool)
                span.set_attribute("tool.arguments", '{"order": "%s", "step": %d}' % (prompt, step))
    return {"output": "answer to " + prompt}
"""

TRACE_ASSERTIONS = (
    AssertionSpec(type="trajectory:tool-used", value=["search_orders", "refund"]),
    AssertionSpec(type="trajectory:tool-sequence", value={"steps": ["search_orders", "refund"]}),
    AssertionSpec(type="trajectory:tool-args-match", value={"name": "refund", "args": {"step": 2}}),
    AssertionSpec(type="trace-span-count", value={"pattern": "execute_tool *", "min": 4}),
)
PLAIN_ASSERTIONS = (AssertionSpec(type="icontains", value="answer"),)


def run_suite_of(
    folder: Path, rows: int, tracing: TracingSettings, asserts: tuple[AssertionSpec, ...]
) -> Suite:
    provider = ProviderSpec(id="file://agent.py", base_dir=str(folder))
    tests = tuple(TestCase(index=i, vars={"q": f"o{i}"}, asserts=asserts) for i in range(rows))
    return Suite(
        tests=tests, prompts=(Prompt(raw="{{q}}", label="q"),), providers=(provider,), tracing=tracing
    )


def bench_run(rows: int, profile: bool) -> None:
    print(f"## a run of {rows} rows, a Python provider exporting 5 spans a row (evalh's process)")
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "agent.py").write_text(textwrap.dedent(AGENT))
        variants = {
            "untraced": run_suite_of(Path(folder), rows, TracingSettings(), PLAIN_ASSERTIONS),
            "traced": run_suite_of(Path(folder), rows, TRACED, PLAIN_ASSERTIONS),
            "traced + 4 trace assertions": run_suite_of(
                Path(folder), rows, TRACED, PLAIN_ASSERTIONS + TRACE_ASSERTIONS
            ),
            "traced, trace assertions, wait 0": run_suite_of(
                Path(folder), rows, replace(TRACED, wait_ms=0), PLAIN_ASSERTIONS + TRACE_ASSERTIONS
            ),
        }
        run_suite(variants["traced"], RunOptions(cache=False, max_concurrency=4))  # warm the workers up
        for concurrency in (4, 16):
            options = RunOptions(cache=False, max_concurrency=concurrency)
            figures: dict[str, tuple[float, float]] = {}
            for name, suite in variants.items():
                cpu, wall, record = cpu_and_wall(functools.partial(run_suite, suite, options))
                statuses = {str(row.status) for row in record.results}
                figures[name] = (cpu, wall)
                base_cpu, base_wall = figures["untraced"]
                print(
                    f"concurrency {concurrency:2} {name:28} {cpu:6.2f} s CPU {wall:6.2f} s wall "
                    f"({cpu / base_cpu:.2f}x, {wall / base_wall:.2f}x untraced) "
                    f"{cpu / rows * 1000:.2f} ms CPU a row; rows {sorted(statuses)}"
                )
        if profile:
            profile_run(variants["traced + 4 trace assertions"])
    shutdown_workers()


def profile_run(suite: Suite, top: int = 18) -> None:
    profiler = cProfile.Profile()
    profiler.runcall(run_suite, suite, RunOptions(cache=False, max_concurrency=16))
    text = io.StringIO()
    pstats.Stats(profiler, stream=text).sort_stats("tottime").print_stats(top)
    print("cProfile of the traced run with trace assertions (concurrency 16), by own time:")
    print("\n".join(line for line in text.getvalue().splitlines() if line.strip())[-4000:])


# --------------------------------------------------------------------------------------- assertions

ROW_ASSERTIONS = (
    *TRACE_ASSERTIONS,
    AssertionSpec(type="trajectory:step-count", value={"type": "tool", "min": 1}),
    AssertionSpec(type="trace-span-duration", value={"max": 5000}),
    AssertionSpec(type="trace-error-spans", value={"max_count": 0}),
)


class _Settled:
    """A TraceSource whose spans are there already."""

    def __init__(self, spans: Sequence[Span]) -> None:
        self.trace_id = spans[0].trace_id
        self._spans = tuple(spans)

    async def spans(self) -> tuple[Span, ...]:
        return self._spans


def agent_spans(count: int) -> list[Span]:
    tools = ("search_orders", "get_order", "refund", "notify")
    return [
        Span(
            trace_id="4bf92f3577b34da6a3ce929d0e0e4736",
            span_id=f"{index + 1:016x}",
            name=f"execute_tool {tools[index % 4]}",
            start_ns=index * 1_000_000,
            end_ns=index * 1_000_000 + 500_000,
            attributes={
                "tool.name": tools[index % 4],
                "tool.arguments": json.dumps({"order": f"o{index}", "step": index % 4}),
                "gen_ai.usage.input_tokens": 100,
            },
        )
        for index in range(count)
    ]


def bench_assertions(rows: int = 200) -> None:
    from evalh.assertions.base import AssertionContext
    from evalh.runner.grading import grade_assertion
    from tests.assertions.helpers import StandInServices

    print(f"## the {len(ROW_ASSERTIONS)} trace assertions of one row (in process, best of 3)")
    for count in (100, 1000):
        spans = agent_spans(count)
        test = TestCase(index=0, vars={}, asserts=ROW_ASSERTIONS)

        async def grade_rows(spans: Sequence[Span] = spans, test: TestCase = test) -> None:
            for _ in range(rows):
                source = _Settled(spans)  # a row's own source, as the runner makes one per row
                for spec in ROW_ASSERTIONS:
                    ctx = AssertionContext(spec, "done", test, StandInServices(), trace=source)
                    await grade_assertion(spec, ctx)

        best = min(cpu_and_wall(lambda: asyncio.run(grade_rows()))[0] for _ in range(3))
        print(
            f"{count:5} spans: {best / rows * 1000:7.2f} ms CPU a row "
            f"({best / rows / len(ROW_ASSERTIONS) * 1000:.2f} ms an assertion)"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=400)
    parser.add_argument("--spans", type=int, default=20_000)
    parser.add_argument("--sections", default="decode,receiver,run,assertions")
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    sections = set(args.sections.split(","))
    if "decode" in sections:
        bench_decode()
    if "receiver" in sections:
        bench_receiver(args.spans)
    if "assertions" in sections:
        bench_assertions()
    if "run" in sections:
        bench_run(args.rows, args.profile)


if __name__ == "__main__":
    main()
