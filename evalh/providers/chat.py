"""What every HTTP chat provider shares: messages, sampling settings, the call, usage and cost, caching.

A subclass says how to build its request body (:meth:`ChatProvider.build_body`) and how to read the
reply (:meth:`ChatProvider.parse_reply`); :meth:`ChatProvider.complete` does the rest and turns every
failure into ``ProviderResponse(error=...)`` with API keys redacted, so the run goes on.

:class:`HttpModelProvider` is what the chat providers and the HTTP embedders (``embedhttp.py``) share:
the spec, the model, the client, a missing key, and how a reply of the wrong shape is reported.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

from evalh.errors import ConfigError, ProviderError, TemplateError
from evalh.model import ProviderResponse, ProviderSpec, Usage
from evalh.providers.base import CallContext
from evalh.providers.http import HttpClient, HttpReply
from evalh.providers.identity import caches_answers, hide_secrets, request_identity
from evalh.providers.keys import MissingKey
from evalh.providers.tools import TOOL_KEYS, normalize_finish_reason, render_tools

__all__ = [
    "REPLY_SHAPE_ERRORS",
    "ChatProvider",
    "ChatReply",
    "HttpModelProvider",
    "Pricing",
    "ReplyRefused",
    "RequestShapeError",
    "json_list",
    "price_by_prefix",
    "require_config_shapes",
    "to_messages",
]

# What a protocol's reply parser raises when the JSON has another shape than the protocol's.
REPLY_SHAPE_ERRORS = (AttributeError, KeyError, IndexError, TypeError, ValueError)

_Price = TypeVar("_Price")


class RequestShapeError(ValueError):
    """A setting rendered for one call (the tools) that the protocol cannot express: that row's error."""


class ReplyRefused(Exception):
    """A well-formed reply that carries no answer (a safety block, a guardrail): its message is the
    row's error as the protocol's provider in promptfoo words it."""


# Settings that change what a model answers: sent in the body and part of the cache identity. The
# tool settings (providers/tools.py TOOL_KEYS) are rendered with each call's vars: see request_shape.
SAMPLING_KEYS: tuple[str, ...] = (
    "temperature",
    "max_tokens",
    "max_completion_tokens",
    "top_p",
    "top_k",
    "seed",
    "stop",
    "presence_penalty",
    "frequency_penalty",
    "response_format",
    "reasoning_effort",
)


def to_messages(prompt: str | Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """A rendered prompt as chat messages: a string that is a JSON list of ``{role, ...}`` messages is
    those messages (promptfoo's ``parseChatPrompt``: a .json / .yaml chat prompt reaches a provider as
    JSON text); any other string becomes one user message."""
    if isinstance(prompt, str):
        return _json_messages(prompt) or [{"role": "user", "content": prompt}]
    return [dict(message) for message in prompt]


def _json_messages(text: str) -> list[dict[str, Any]] | None:
    value = json_list(text)
    if value is not None and all(isinstance(m, dict) and "role" in m for m in value):
        return value
    return None


def json_list(text: str) -> list[Any] | None:
    """``text`` as a non-empty JSON list (a chat prompt's messages), else None."""
    if not text.lstrip().startswith("["):
        return None
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, list) and value else None


def require_config_shapes(
    spec: ProviderSpec, *, mappings: Sequence[str] = (), lists_of_mappings: Sequence[str] = ()
) -> None:
    """A ConfigError at ``<provider>.config.<key>`` for a protocol setting of the wrong shape, before any
    call (a protocol's body copies these settings in as they are)."""
    for key in (*mappings, *lists_of_mappings):
        value = spec.config.get(key)
        if value is None:
            continue
        if key in mappings and isinstance(value, Mapping):
            continue
        if (
            key in lists_of_mappings
            and isinstance(value, list)
            and all(isinstance(v, Mapping) for v in value)
        ):
            continue
        wanted = "a mapping" if key in mappings else "a list of mappings"
        where = f"{spec.path}.config.{key}" if spec.path else f"{spec.id} config.{key}"
        raise ConfigError(f"{key} must be {wanted} (got {type(value).__name__})", where=where)


def price_by_prefix(table: Mapping[str, _Price], model: str) -> _Price | None:
    """The table's price for the longest model-name prefix of ``model``, or None."""
    for prefix in sorted(table, key=len, reverse=True):
        if model.startswith(prefix):
            return table[prefix]
    return None


@dataclass(frozen=True)
class Pricing:
    """Dollars per token for input (prompt) and output (completion) tokens."""

    input: float = 0.0
    output: float = 0.0

    @classmethod
    def resolve(
        cls, config: Mapping[str, Any], table: Mapping[str, tuple[float, float]], model: str
    ) -> Pricing:
        """``config.inputCost`` / ``outputCost`` (or ``cost`` for both, per token) > the built-in table
        (dollars per million tokens, matched by model-name prefix, longest first) > free."""
        both = config.get("cost")
        if config.get("inputCost") is not None or config.get("outputCost") is not None or both is not None:
            default = float(both) if both is not None else 0.0
            return cls(
                input=float(config.get("inputCost", default)), output=float(config.get("outputCost", default))
            )
        per_million = price_by_prefix(table, model)
        return cls(per_million[0] / 1e6, per_million[1] / 1e6) if per_million else cls()

    def cost(self, usage: Usage) -> float:
        return usage.prompt_tokens * self.input + usage.completion_tokens * self.output


@dataclass(frozen=True)
class ChatReply:
    """What a protocol's reply parser found."""

    output: Any
    usage: Usage = field(default_factory=Usage)
    metadata: Mapping[str, Any] = field(default_factory=dict)


class HttpModelProvider:
    """Base of the HTTP chat providers and the HTTP embedders: one model behind one client."""

    path: str = ""  # where to POST, relative to the client's base URL (or absolute)

    def __init__(
        self, spec: ProviderSpec, *, model: str, http: HttpClient, missing_key: MissingKey | None = None
    ) -> None:
        self.id = spec.id
        self.spec = spec
        self.model = model
        self.config: Mapping[str, Any] = spec.config
        self.http = http
        # the error every call answers when a required key is absent (run stops before, see preflight)
        self.missing_key = missing_key.message if missing_key else None

    def malformed(self, reply: HttpReply, error: Exception) -> str:
        """What is wrong with a reply the protocol's parser could not read, with its start (redacted)."""
        what = "not JSON" if reply.json is None else f"{type(error).__name__}: {error}"
        return f"unexpected reply ({what}): {self.http.excerpt(reply.text)}"

    async def aclose(self) -> None:
        await self.http.aclose()


class ChatProvider(HttpModelProvider):
    """Base of the HTTP chat providers (OpenAI-compatible, Azure, Anthropic, Ollama)."""

    merges_prompt_config = True  # a prompt's config is merged over the provider's (PromptConfigured)

    def __init__(
        self,
        spec: ProviderSpec,
        *,
        model: str,
        http: HttpClient,
        pricing: Pricing | None = None,
        missing_key: MissingKey | None = None,
    ) -> None:
        super().__init__(spec, model=model, http=http, missing_key=missing_key)
        self.pricing = pricing or Pricing()
        self._timeout_in_config = any(self.config.get(k) is not None for k in ("timeout", "timeoutMs"))

    def sampling(self) -> dict[str, Any]:
        """The sampling settings the config sets, by their OpenAI names."""
        return {key: self.config[key] for key in SAMPLING_KEYS if self.config.get(key) is not None}

    @property
    def cacheable(self) -> bool:
        """Whether the runner may cache completions: not when sampling with temperature > 0, unless
        ``config.cache`` is true; never when ``config.cache`` is false."""
        return caches_answers(self.config, by_default=True)

    def cache_identity(self) -> Mapping[str, Any]:
        """What fixes the answer: id, model, the full URL and every header (organization, API version,
        deployment; secrets as :class:`~evalh.providers.identity.Secret`), sampling settings and
        passthrough (the body template)."""
        passthrough = self.config.get("passthrough")
        return {
            "id": self.id,
            "model": self.model,
            **request_identity(self.http.url_for(self.path), self.http.headers),
            **self.sampling(),
            **({"passthrough": hide_secrets(passthrough)} if passthrough else {}),
            **self.extra_identity(),
        }

    def extra_identity(self) -> Mapping[str, Any]:
        return {}

    def tool_settings(self, variables: Mapping[str, Any]) -> dict[str, Any]:
        """The config's tools, tool_choice, functions and function_call rendered with this call's
        vars (OpenAI's shapes; TemplateError when one does not render)."""
        return render_tools(
            self.config, variables, f"{self.spec.path}.config" if self.spec.path else "config"
        )

    def request_shape(
        self, prompt: str | Sequence[Mapping[str, Any]], variables: Mapping[str, Any]
    ) -> Mapping[str, Any] | None:
        """The tools as this call renders them, for its cache key (empty without tools, so the key of
        a call without tools is the provider's identity and the prompt alone); None when they do not
        render (the call then fails with that error, and nothing is cached)."""
        if not any(self.config.get(key) is not None for key in TOOL_KEYS):
            return {}
        try:
            return {"tools": self.tool_settings(variables)}
        except TemplateError:
            return None

    def build_body(self, messages: list[dict[str, Any]], tools: Mapping[str, Any]) -> dict[str, Any]:
        """The request body; ``tools``: the rendered tool settings by OpenAI's names (often empty)."""
        raise NotImplementedError

    def parse_reply(self, reply: HttpReply) -> ChatReply:
        raise NotImplementedError

    def messages_of(self, prompt: str | Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
        """The rendered prompt as the chat messages :meth:`build_body` takes."""
        return to_messages(prompt)

    async def send(
        self, body: dict[str, Any], *, timeout_s: float | None, headers: Mapping[str, str] | None
    ) -> HttpReply:
        """POST the body; a protocol that signs its requests (AWS SigV4) sends the bytes it signed."""
        return await self.http.post_json(self.path, body, timeout_s=timeout_s, headers=headers)

    async def complete(
        self, prompt: str | Sequence[Mapping[str, Any]], context: CallContext | None = None
    ) -> ProviderResponse:
        if self.missing_key:
            return ProviderResponse(error=f"{self.id}: {self.missing_key}")
        timeout = None if self._timeout_in_config or context is None else context.timeout_s
        trace = context.trace if context is not None else None
        try:
            tools = self.tool_settings(context.vars if context else {})
        except TemplateError as error:
            return ProviderResponse(error=f"{self.id}: could not render the tools: {error.render()}")
        try:
            body = self.build_body(self.messages_of(prompt), tools)
        except RequestShapeError as error:  # tools of another shape than the protocol's, as rendered
            return ProviderResponse(error=f"{self.id}: {error}")
        try:
            reply = await self.send(
                body,
                timeout_s=timeout,
                headers={"traceparent": trace.traceparent} if trace is not None else None,
            )
        except ProviderError as error:
            attempts = getattr(error, "attempts", 1)
            # str() is the rendered message, already redacted by the HTTP layer (evalh.providers.http)
            return ProviderResponse(error=str(error), metadata={"attempts": attempts})
        try:
            parsed = self.parse_reply(reply)
        except ReplyRefused as refused:
            return ProviderResponse(
                error=f"{self.id}: {refused}",
                latency_ms=reply.latency_ms,
                metadata={"attempts": reply.attempts},
            )
        except REPLY_SHAPE_ERRORS as error:
            return ProviderResponse(
                error=f"{self.id}: {self.malformed(reply, error)}",
                latency_ms=reply.latency_ms,
                metadata={"attempts": reply.attempts},
            )
        usage = Usage(
            prompt_tokens=parsed.usage.prompt_tokens,
            completion_tokens=parsed.usage.completion_tokens,
            total_tokens=parsed.usage.total_tokens
            or parsed.usage.prompt_tokens + parsed.usage.completion_tokens,
            requests=1,
            latency_ms=reply.latency_ms,
        )
        cost = self.pricing.cost(usage)
        metadata = {"model": self.model, "attempts": reply.attempts, **parsed.metadata}
        finish_reason = normalize_finish_reason(parsed.metadata.get("finish_reason"))
        if finish_reason is not None:  # promptfoo's name and values, for the finish-reason assertion
            metadata["finishReason"] = finish_reason
        return ProviderResponse(
            output=parsed.output,
            usage=replace(usage, cost=cost),
            latency_ms=reply.latency_ms,
            cost=cost,
            metadata=metadata,
        )
