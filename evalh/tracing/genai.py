"""evalh's own span for a call to a built-in chat provider, with the GenAI semantic conventions' attributes
(``gen_ai.system``, ``gen_ai.request.model``, ``gen_ai.usage.*``, ``gen_ai.response.finish_reasons``) and
promptfoo's (``promptfoo.provider.id``, ``promptfoo.test.index``, ``promptfoo.prompt.label``).

The span is the call's own span of its trace context (its span id is the ``traceparent``'s), so spans a
server exports under that ``traceparent`` hang below it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from evalh.model import ProviderResponse, Span, TraceContext

__all__ = ["genai_span"]

_REQUEST_SETTINGS = {
    "max_tokens": "gen_ai.request.max_tokens",
    "temperature": "gen_ai.request.temperature",
    "top_p": "gen_ai.request.top_p",
    "stop": "gen_ai.request.stop_sequences",
}


def _system(provider_id: str) -> str:
    """``openai:chat:gpt-4o`` -> ``openai`` (promptfoo's values: openai, anthropic, azure, ollama, ...)."""
    return provider_id.split(":", 1)[0] or provider_id


def _finish_reasons(metadata: Mapping[str, Any]) -> list[str]:
    reason = metadata.get("finishReason") or metadata.get("finish_reason")
    return [str(reason)] if reason else []


def genai_span(
    trace: TraceContext,
    *,
    provider_id: str,
    config: Mapping[str, Any],
    response: ProviderResponse,
    started_ns: int,
    ended_ns: int,
    test_index: int | None = None,
    prompt_label: str = "",
) -> Span:
    """The span of one chat call that took from ``started_ns`` to ``ended_ns`` (Unix nanoseconds)."""
    metadata = response.metadata or {}
    model = str(metadata.get("model") or config.get("model") or provider_id.rsplit(":", 1)[-1])
    attributes: dict[str, Any] = {
        "gen_ai.system": _system(provider_id),
        "gen_ai.operation.name": "chat",
        "gen_ai.request.model": model,
        **{name: config[key] for key, name in _REQUEST_SETTINGS.items() if config.get(key) is not None},
        "gen_ai.usage.input_tokens": response.usage.prompt_tokens,
        "gen_ai.usage.output_tokens": response.usage.completion_tokens,
        "gen_ai.usage.total_tokens": response.usage.total_tokens,
        "promptfoo.provider.id": provider_id,
        "promptfoo.cache_hit": response.cached,
    }
    if reasons := _finish_reasons(metadata):
        attributes["gen_ai.response.finish_reasons"] = reasons
    if test_index is not None:
        attributes["promptfoo.test.index"] = test_index
    if prompt_label:
        attributes["promptfoo.prompt.label"] = prompt_label
    return Span(
        trace_id=trace.trace_id,
        span_id=trace.span_id,
        name=f"chat {model}",
        start_ns=started_ns,
        end_ns=ended_ns,
        kind="CLIENT",
        attributes=attributes,
        status_code="ERROR" if response.error is not None else "OK",
        status_message=response.error or "",
        service="evalh",
    )
