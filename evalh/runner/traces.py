"""A run's tracing: the receiver for the run's lifetime, a trace context per provider call, evalh's own
spans of each call (the target span, and a GenAI span for built-in chat providers), and each row's
trace (for its assertions and its result).

Started by :func:`run_tracing` when ``Suite.tracing.enabled``; stopped when the run ends, however it
ends. The receiver's URL reaches user code through the run's environment overlay
(``OTEL_EXPORTER_OTLP_ENDPOINT``, never ``os.environ``), so an OpenTelemetry exporter in a Python provider
or an ``exec:`` program finds it with no config.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from evalh.common.environment import overlaid
from evalh.common.notices import notice
from evalh.errors import EvalhError
from evalh.model import ProviderResponse, RowTrace, TraceContext, TracingSettings
from evalh.runner.plan import Job
from evalh.runner.services import ProviderPool
from evalh.tracing.collector import CollectedTrace, SpanCollector, new_trace_context
from evalh.tracing.genai import genai_span, target_span
from evalh.tracing.redact import AttributeRedactor

__all__ = ["ENDPOINT_ENV", "RunTracing", "run_tracing"]

ENDPOINT_ENV = "OTEL_EXPORTER_OTLP_ENDPOINT"


class RunTracing:
    """What a traced run holds: the span collector and, unless ``otlp.http.enabled`` is false, the
    receiver feeding it."""

    def __init__(self, settings: TracingSettings) -> None:
        from evalh.tracing.receiver import OtlpReceiver  # an HTTP server: for traced runs only

        self.settings = settings
        self.collector = SpanCollector(redactor=AttributeRedactor(settings.redact_attributes))
        self.receiver = OtlpReceiver(self.collector, settings.port) if settings.receive else None

    def environment(self) -> dict[str, str]:
        return {ENDPOINT_ENV: self.receiver.base_url} if self.receiver is not None else {}

    def issue(self) -> TraceContext:
        return self.collector.issue()

    def record_call(
        self,
        job: Job,
        pool: ProviderPool,
        trace: TraceContext,
        response: ProviderResponse,
        started_ns: int,
    ) -> None:
        """evalh's spans of a call that began at ``started_ns``: the target span, and a built-in chat
        provider's GenAI span below it (not for an answer read from the cache)."""
        ended_ns = time.time_ns()
        spans = [
            target_span(
                trace,
                name=job.provider.label or job.provider.id,
                provider_id=job.provider.id,
                response=response,
                started_ns=started_ns,
                ended_ns=ended_ns,
                test_index=job.test.index,
            )
        ]
        if not response.cached and self._is_chat(pool, job):
            config: dict[str, Any] = {**job.provider.config, **job.prompt.config}
            spans.append(
                genai_span(
                    trace,
                    span_id=new_trace_context().span_id,
                    provider_id=job.provider.id,
                    config=config,
                    response=response,
                    started_ns=ended_ns - int((response.latency_ms or 0.0) * 1e6),
                    ended_ns=ended_ns,
                    test_index=job.test.index,
                    prompt_label=job.prompt.label,
                )
            )
        self.collector.add(spans)

    @staticmethod
    def _is_chat(pool: ProviderPool, job: Job) -> bool:
        try:
            provider = pool.get(job.provider)
        except EvalhError:  # the call's error says why already
            return False
        from evalh.providers.chat import ChatProvider  # lazily: it brings httpx, which a run may not need

        return isinstance(provider, ChatProvider)

    def source(self, trace: TraceContext) -> CollectedTrace:
        """The row's trace for its assertions, waiting from now (the provider just answered)."""
        return CollectedTrace(
            self.collector,
            trace.trace_id,
            time.monotonic(),
            self.settings.wait_ms,
            self.settings.command_tool_names,
        )

    async def finish(self, source: CollectedTrace) -> RowTrace:
        """The row's trace once settled; the collector forgets it (later spans count as late)."""
        row_trace = await source.row_trace()
        self.collector.release(source.trace_id, taken=len(row_trace.spans) + row_trace.dropped)
        return row_trace

    def lost_spans_notice(self, where: str) -> None:
        """Once the receiver stopped: say how many spans reached no row (late, or of a trace this run
        did not issue), and what to do; nothing when every span found its row."""
        late, unknown = self.collector.late, self.collector.unknown
        if not late and not unknown:
            return
        parts, hints = [], []
        if late:
            parts.append(
                f"{_spans(late)} arrived after {'its row was' if late == 1 else 'their rows were'} written"
            )
            hints.append(
                "Export spans before the provider returns: use SimpleSpanProcessor, or call force_flush() "
                "on the tracer provider before returning (a BatchSpanProcessor exports seconds later); or "
                f"raise tracing.waitMs (now {self.settings.wait_ms})"
            )
        if unknown:
            parts.append(f"{_spans(unknown)} carried a trace id this run did not issue")
            hints.append(
                "Start the provider's spans under the call's context['traceparent'] (or the TRACEPARENT "
                "environment variable of an exec: provider); another program may export to the same port"
            )
        message = " and ".join(parts) + ": they are in no row's trace, and no trace assertion saw them"
        hint = ". ".join(hints)
        notice(EvalhError(message, where=where, hint=hint), where=where, subject="late spans")


def _spans(count: int) -> str:
    return f"{count} span{'s' if count != 1 else ''}"


@contextmanager
def run_tracing(settings: TracingSettings, where: str = "tracing") -> Iterator[RunTracing | None]:
    """The run's tracing within the block (None when the run does not trace); the receiver is stopped
    when the block ends, by an error or a stop signal too, and the spans that reached no row are said
    (``where``: the config's tracing block). ConfigError when its port is taken."""
    if not settings.enabled:
        yield None
        return
    tracing = RunTracing(settings)
    if tracing.receiver is not None:
        tracing.receiver.start()
    try:
        with overlaid(tracing.environment()):
            yield tracing
    finally:
        if tracing.receiver is not None:
            tracing.receiver.stop()
        tracing.lost_spans_notice(where)
