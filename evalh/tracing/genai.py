"""evalh's own spans of a traced provider call, as promptfoo records them.

* The *target span* of every call (:func:`target_span`): named by the provider's label, else its id, kind
  CLIENT, status ERROR with the message when the call failed. It is the call's own span of its trace
  context (its span id is the ``traceparent``'s), so the spans a provider exports under that
  ``traceparent`` hang below it, and trace assertions see it, as promptfoo's see its target span.
* A built-in chat provider's GenAI span below it (:func:`genai_span`), with the GenAI semantic
  conventions' attributes (``gen_ai.system``, ``gen_ai.request.model``, ``gen_ai.usage.*``,
  ``gen_ai.response.finish_reasons``) and promptfoo's (``promptfoo.provider.id``, ``promptfoo.test.index``,
  ``promptfoo.prompt.label``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from evalh.model import ProviderResponse, Span, TraceContext

__all__ = ["genai_span", "target_span"]

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


def target_span(
    trace: TraceContext,
    *,
    name: str,
    provider_id: str,
    response: ProviderResponse,
    started_ns: int,
    ended_ns: int,
    test_index: int | None = None,
) -> Span:
    """The span of one provider call, from ``started_ns`` to ``ended_ns`` (Unix nanoseconds)."""
    attributes: dict[str, Any] = {
        "promptfoo.provider.id": provider_id,
        "promptfoo.span.role": "target",
        "promptfoo.cache_hit": response.cached,
    }
    if test_index is not None:
        attributes["promptfoo.test.index"] = test_index
    return _call_span(trace, trace.span_id, None, name, (started_ns, ended_ns), attributes, response)


def genai_span(
    trace: TraceContext,
    *,
    span_id: str,
    provider_id: str,
    config: Mapping[str, Any],
    response: ProviderResponse,
    started_ns: int,
    ended_ns: int,
    test_index: int | None = None,
    prompt_label: str = "",
) -> Span:
    """The GenAI span ``span_id`` of one chat call that took from ``started_ns`` to ``ended_ns`` (Unix
    nanoseconds), a child of the call's target span."""
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
    times = (started_ns, ended_ns)
    return _call_span(trace, span_id, trace.span_id, f"chat {model}", times, attributes, response)


def _call_span(
    trace: TraceContext,
    span_id: str,
    parent_span_id: str | None,
    name: str,
    times: tuple[int, int],
    attributes: dict[str, Any],
    response: ProviderResponse,
) -> Span:
    """One of evalh's own CLIENT spans of a provider call: ERROR with the call's error when it failed."""
    return Span(
        trace_id=trace.trace_id,
        span_id=span_id,
        parent_span_id=parent_span_id,
        name=name,
        start_ns=times[0],
        end_ns=times[1],
        kind="CLIENT",
        attributes=attributes,
        status_code="ERROR" if response.error is not None else "OK",
        status_message=response.error or "",
        service="evalh",
    )
