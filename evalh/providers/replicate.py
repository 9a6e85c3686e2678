"""Replicate: ``replicate:<owner>/<model>`` (its latest version) or ``replicate:<owner>/<model>:<version>``.

As promptfoo 0.123: a prediction is created with ``Prefer: wait=60`` (``POST /models/<owner>/<model>/
predictions``, or ``POST /predictions`` with ``version`` for a pinned version); a prediction still
``starting`` or ``processing`` is polled (``GET /predictions/<id>``) every second, at most 30 times
(``config.pollIntervalMs`` and ``config.maxPolls`` change that). Its output is the text, or a list of
text pieces joined; ``failed`` and ``canceled`` predictions and any other output are errors.

The input is promptfoo's mapping: the config's model settings (everything but evalh's own keys) and
``prompt``; a chat prompt's system message becomes ``system_prompt`` (else ``config.system_prompt``) and
its user message ``prompt``; ``config.prompt.prefix`` / ``suffix`` wrap a text prompt. Sampling settings
come from the config or promptfoo's ``REPLICATE_*`` variables (``REPLICATE_TEMPERATURE``, ...).

Base URL ``config.apiBaseUrl`` or ``https://api.replicate.com/v1``; token ``config.apiKey``,
``REPLICATE_API_TOKEN`` or ``REPLICATE_API_KEY``. Retries, rate limits and redaction are the HTTP
layer's (providers/http).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from evalh.common.environment import getenv
from evalh.errors import ConfigError, ProviderError
from evalh.model import ProviderResponse, ProviderSpec, Usage
from evalh.providers.base import CallContext
from evalh.providers.chat import REPLY_SHAPE_ERRORS, HttpModelProvider, to_messages
from evalh.providers.http import HttpClient, HttpReply
from evalh.providers.identity import caches_answers, hide_secrets, request_identity
from evalh.providers.keys import missing_replicate_key, replicate_api_key

__all__ = ["ReplicateProvider", "make_replicate", "prediction_input"]

DEFAULT_REPLICATE_URL = "https://api.replicate.com/v1"
DEFAULT_POLL_INTERVAL_MS = 1000
DEFAULT_MAX_POLLS = 30
_PENDING = ("starting", "processing")

_HTTP_SETTINGS = (  # read by the HTTP layer (providers/http/settings.py)
    "timeout",
    "timeoutMs",
    "totalTimeout",
    "totalTimeoutMs",
    "maxRetries",
    "maxTotalWaitS",
    "retryBaseDelayS",
    "retryMaxDelayS",
)
# Config keys that are evalh's (or promptfoo's) own, never a model input
_NOT_INPUT = frozenset(
    {
        "apiKey",
        "apiKeyEnvar",
        "apiBaseUrl",
        "headers",
        "cache",
        "maxConcurrency",
        "pollIntervalMs",
        "maxPolls",
        "prompt",
        "inputCost",
        "outputCost",
        "cost",
        *_HTTP_SETTINGS,
    }
)
# (input name, the variable promptfoo reads when the config leaves it out, how to read it)
_SETTINGS: tuple[tuple[str, str, Callable[[str], Any]], ...] = (
    ("max_length", "REPLICATE_MAX_LENGTH", int),
    ("max_new_tokens", "REPLICATE_MAX_NEW_TOKENS", int),
    ("temperature", "REPLICATE_TEMPERATURE", float),
    ("top_p", "REPLICATE_TOP_P", float),
    ("top_k", "REPLICATE_TOP_K", int),
    ("repetition_penalty", "REPLICATE_REPETITION_PENALTY", float),
    ("stop_sequences", "REPLICATE_STOP_SEQUENCES", str),
    ("seed", "REPLICATE_SEED", int),
)


def prediction_input(config: Mapping[str, Any], prompt: str | Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The prediction's ``input``: the config's model settings, sampling settings, ``system_prompt``
    and ``prompt``."""
    configured = config.get("prompt")
    wrap: Mapping[str, Any] = configured if isinstance(configured, Mapping) else {}
    if isinstance(prompt, str):
        prompt = f"{wrap.get('prefix') or ''}{prompt}{wrap.get('suffix') or ''}"
    messages = to_messages(prompt)
    system = next((m.get("content") for m in messages if m.get("role") == "system"), None)
    user = next((m.get("content") for m in messages if m.get("role") == "user"), None)
    found = {key: value for key, value in config.items() if key not in _NOT_INPUT}
    for name, envar, read in _SETTINGS:
        value = config.get(name)
        if value is None and getenv(envar):
            value = _read_env(envar, read)
        if value is not None:
            found[name] = value
    system = system or config.get("system_prompt") or getenv("REPLICATE_SYSTEM_PROMPT")
    if system:
        found["system_prompt"] = system
    found["prompt"] = user if user is not None else prompt
    return found


def _read_env(envar: str, read: Callable[[str], Any]) -> Any:
    try:
        return read(getenv(envar) or "")
    except ValueError:
        return None  # promptfoo's getEnvInt/getEnvFloat ignore a value that is not a number


class ReplicateProvider(HttpModelProvider):
    """One Replicate model: a prediction per call, polled until it finishes."""

    merges_prompt_config = True

    def __init__(self, spec: ProviderSpec, *, model: str, http: HttpClient) -> None:
        super().__init__(spec, model=model, http=http, missing_key=missing_replicate_key(spec))
        owner_model, _, version = model.partition(":")
        self.version = version or None
        self.path = "predictions" if version else f"models/{owner_model}/predictions"
        self.poll_interval_s = _positive(spec, "pollIntervalMs", DEFAULT_POLL_INTERVAL_MS) / 1000.0
        self.max_polls = int(_positive(spec, "maxPolls", DEFAULT_MAX_POLLS))

    @property
    def cacheable(self) -> bool:
        return caches_answers(self.config, by_default=True)

    def cache_identity(self) -> Mapping[str, Any]:
        settings = {k: v for k, v in self.config.items() if k not in _NOT_INPUT or k == "prompt"}
        return {
            "id": self.id,
            "model": self.model,
            **request_identity(self.http.url_for(self.path), self.http.headers),
            "input": hide_secrets(settings),
        }

    def body(self, prompt: str | Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        body: dict[str, Any] = {"input": prediction_input(self.config, prompt)}
        if self.version:
            body["version"] = self.version
        return body

    async def complete(
        self, prompt: str | Sequence[Mapping[str, Any]], context: CallContext | None = None
    ) -> ProviderResponse:
        if self.missing_key:
            return ProviderResponse(error=f"{self.id}: {self.missing_key}")
        try:
            created = await self.http.post_json(self.path, self.body(prompt), headers={"Prefer": "wait=60"})
            prediction, polls = await self._finished(created)
            output = prediction_output(prediction, self.id)
        except ProviderError as error:  # rendered and redacted by the HTTP layer, or ours below
            return ProviderResponse(error=str(error), metadata={"attempts": getattr(error, "attempts", 1)})
        except REPLY_SHAPE_ERRORS as error:
            return ProviderResponse(error=f"{self.id}: {self.malformed(created, error)}")
        usage = Usage(requests=1 + polls, latency_ms=created.latency_ms)
        metadata = {"model": self.model, "attempts": created.attempts, "prediction": prediction.get("id")}
        return ProviderResponse(output=output, usage=usage, latency_ms=created.latency_ms, metadata=metadata)

    async def _finished(self, created: HttpReply) -> tuple[Mapping[str, Any], int]:
        """The prediction once it is no longer pending, and how many polls that took."""
        prediction: Mapping[str, Any] = created.json
        polls = 0
        while prediction.get("status") in _PENDING:
            if polls >= self.max_polls:
                raise ProviderError(
                    f"prediction {prediction.get('id')} still {prediction.get('status')} after {polls} polls",
                    where=self.id,
                    hint="Raise config.maxPolls or config.pollIntervalMs for a slow model",
                )
            await asyncio.sleep(self.poll_interval_s)
            polls += 1
            prediction = (await self.http.get_json(f"predictions/{prediction['id']}")).json
        return prediction, polls


def prediction_output(prediction: Mapping[str, Any], where: str) -> str:
    """A finished prediction's text: a string, or a list of strings joined (a streamed model)."""
    status = prediction.get("status")
    if status in ("failed", "canceled"):
        raise ProviderError(
            f"prediction {status}: {prediction.get('error') or 'no reason given'}", where=where
        )
    output = prediction.get("output")
    if isinstance(output, list) and all(isinstance(item, str) for item in output):
        return "".join(output)
    if isinstance(output, str):
        return output
    raise ProviderError(f"unsupported output from Replicate: {json.dumps(output)[:300]}", where=where)


def _positive(spec: ProviderSpec, key: str, default: float) -> float:
    value = spec.config.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        raise ConfigError(
            f"config.{key} must be a positive number (got {value!r})",
            where=f"{spec.path}.config.{key}" if spec.path else spec.id,
        )
    return float(value)


def make_replicate(spec: ProviderSpec) -> ReplicateProvider:
    config = spec.config
    model = str(config.get("model") or spec.id.removeprefix("replicate:"))
    api_key = replicate_api_key(config)
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    http = HttpClient.for_spec(
        spec,
        base_url=str(config.get("apiBaseUrl") or DEFAULT_REPLICATE_URL),
        headers=headers,
        secrets=(api_key,) if api_key else (),
    )
    return ReplicateProvider(spec, model=model, http=http)
