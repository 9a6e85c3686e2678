"""A run's tracing: the receiver for the run's lifetime, a trace context per provider call, evalh's own
span for built-in chat providers, and each row's trace (for its assertions and its result).

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
from evalh.errors import EvalhError
from evalh.model import ProviderResponse, RowTrace, TraceContext, TracingSettings
from evalh.runner.plan import Job
from evalh.runner.services import ProviderPool
from evalh.tracing.collector import CollectedTrace, SpanCollector
from evalh.tracing.genai import genai_span
from evalh.tracing.receiver import OtlpReceiver

__all__ = ["ENDPOINT_ENV", "RunTracing", "run_tracing"]

ENDPOINT_ENV = "OTEL_EXPORTER_OTLP_ENDPOINT"


class RunTracing:
    """What a traced run holds: the span collector and, unless ``otlp.http.enabled`` is false, the
    receiver feeding it."""

    def __init__(self, settings: TracingSettings) -> None:
        self.settings = settings
        self.collector = SpanCollector()
        self.receiver = OtlpReceiver(self.collector, settings.port) if settings.receive else None

    def environment(self) -> dict[str, str]:
        return {ENDPOINT_ENV: self.receiver.base_url} if self.receiver is not None else {}

    def issue(self) -> TraceContext:
        return self.collector.issue()

    def record_call(
        self, job: Job, pool: ProviderPool, trace: TraceContext, response: ProviderResponse
    ) -> None:
        """evalh's span of a built-in chat provider's call (not of an answer read from the cache)."""
        if response.cached:
            return
        try:
            provider = pool.get(job.provider)
        except EvalhError:  # the call's error says why already
            return
        from evalh.providers.chat import ChatProvider  # lazily: it brings httpx, which a run may not need

        if not isinstance(provider, ChatProvider):
            return
        ended_ns = time.time_ns()
        config: dict[str, Any] = {**job.provider.config, **job.prompt.config}
        span = genai_span(
            trace,
            provider_id=job.provider.id,
            config=config,
            response=response,
            started_ns=ended_ns - int((response.latency_ms or 0.0) * 1e6),
            ended_ns=ended_ns,
            test_index=job.test.index,
            prompt_label=job.prompt.label,
        )
        self.collector.add([span])

    def source(self, trace: TraceContext) -> CollectedTrace:
        """The row's trace for its assertions, waiting from now (the provider just answered)."""
        return CollectedTrace(self.collector, trace.trace_id, time.monotonic(), self.settings.wait_ms)

    async def finish(self, source: CollectedTrace) -> RowTrace:
        """The row's trace once settled; the collector forgets it (later spans count as unknown)."""
        row_trace = await source.row_trace()
        self.collector.release(source.trace_id)
        return row_trace


@contextmanager
def run_tracing(settings: TracingSettings) -> Iterator[RunTracing | None]:
    """The run's tracing within the block (None when the run does not trace); the receiver is stopped
    when the block ends, by an error or a stop signal too. ConfigError when its port is taken."""
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
