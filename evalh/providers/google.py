"""Gemini through Google's generateContent API: ``google:<model>``, ``vertex:<model>``, embeddings.

``google:<model>`` POSTs ``{base}/{apiVersion}/models/{model}:generateContent`` (Google AI Studio; base
``https://generativelanguage.googleapis.com``, or ``https://{apiHost}``, or ``apiBaseUrl``; version
``v1beta``) with the key in ``x-goog-api-key``. ``vertex:<model>`` is the same protocol on Vertex AI's
express mode (``https://{region}-aiplatform.googleapis.com/v1/publishers/google/models/{model}:generateContent``
with an API key); evalh does not sign in to Google Cloud (ADC / OAuth). ``google:embedding:<model>`` posts
batches to ``:batchEmbedContents``.

The request follows promptfoo's ``src/providers/google/ai.studio.ts``: a chat prompt's messages become
``contents`` (``assistant`` -> ``model``, text in ``parts``; a prompt already in Gemini's shape is sent as
it is), system messages and ``config.systemInstruction`` become ``system_instruction``, and
``temperature`` / ``topP`` / ``topK`` / ``stopSequences`` / ``maxOutputTokens`` with
``config.generationConfig`` over them make ``generationConfig``. The output is the text of the first
candidate's parts, or the parts themselves when one is not text (a ``functionCall``); a blocked prompt or
candidate is an error worded as promptfoo's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import quote

import numpy as np

from evalh.errors import ConfigError, TemplateError
from evalh.model import ProviderSpec, Usage
from evalh.providers.chat import (
    ChatProvider,
    ChatReply,
    Pricing,
    json_list,
    require_config_shapes,
    to_messages,
)
from evalh.providers.embedhttp import HttpEmbedder, vectors_from_rows
from evalh.providers.gemini_format import (
    candidate_output,
    gemini_contents,
    gemini_tool_config,
    gemini_tools,
    instruction_parts,
    reply_metadata,
)
from evalh.providers.http import HttpClient, HttpReply
from evalh.providers.keys import (
    config_or_env,
    google_api_key,
    missing_google_key,
    missing_vertex_key,
    vertex_api_key,
)
from evalh.templating import render_deep

__all__ = [
    "DEFAULT_GOOGLE_BASE_URL",
    "GeminiChat",
    "GeminiEmbedder",
    "make_chat",
    "make_embedding",
    "make_vertex",
]

DEFAULT_GOOGLE_BASE_URL = "https://generativelanguage.googleapis.com"
DEFAULT_VERTEX_HOST = "aiplatform.googleapis.com"
_GENERATION_KEYS = ("temperature", "topP", "topK", "stopSequences", "maxOutputTokens")
# google:<service>:<model> services promptfoo serves with other APIs (Live, Imagen, Veo)
_OTHER_SERVICES = ("live", "image", "video")


class GeminiChat(ChatProvider):
    """generateContent on AI Studio or Vertex AI (express mode): the same body and reply."""

    def __init__(self, spec: ProviderSpec, *, path: str, **kwargs: Any) -> None:
        require_config_shapes(
            spec,
            mappings=("generationConfig", "toolConfig", "passthrough", "responseSchema"),
            lists_of_mappings=("safetySettings",),
        )
        super().__init__(spec, **kwargs)
        self.path = path
        try:
            instruction_parts(self.config.get("systemInstruction"))
        except ValueError as error:
            where = f"{spec.path}.config.systemInstruction" if spec.path else spec.id
            raise ConfigError(str(error), where=where) from None

    def sampling(self) -> dict[str, Any]:
        """``generationConfig``: promptfoo's typed keys, then ``config.generationConfig`` over them."""
        settings = {key: self.config[key] for key in _GENERATION_KEYS if self.config.get(key) is not None}
        settings.update(dict(self.config.get("generationConfig") or {}))
        return settings

    def extra_identity(self) -> Mapping[str, Any]:
        keys = ("systemInstruction", "safetySettings", "toolConfig", "responseSchema", "passthrough")
        return {key: self.config[key] for key in keys if self.config.get(key) is not None}

    def tool_settings(self, variables: Mapping[str, Any]) -> dict[str, Any]:
        """The tools, and ``systemInstruction`` rendered with this call's vars (as promptfoo renders it)."""
        settings = super().tool_settings(variables)
        instruction = self.config.get("systemInstruction")
        if instruction:
            where = f"{self.spec.path or 'config'}.config.systemInstruction"
            settings["systemInstruction"] = render_deep(instruction, variables, where=where)
        return settings

    def request_shape(
        self, prompt: str | Sequence[Mapping[str, Any]], variables: Mapping[str, Any]
    ) -> Mapping[str, Any] | None:
        """As the base, with the rendered ``systemInstruction`` in the cache key: two tests whose vars
        give two instructions never share an answer."""
        if not self.config.get("systemInstruction"):
            return super().request_shape(prompt, variables)
        try:
            return {"tools": self.tool_settings(variables)}
        except TemplateError:
            return None

    def messages_of(self, prompt: str | Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
        if isinstance(prompt, str):  # a Gemini-shaped JSON prompt ([{role, parts}]) is kept as it is
            parsed = json_list(prompt) or []
            if parsed and all(isinstance(m, dict) and "parts" in m for m in parsed):
                return [dict(m) for m in parsed]
        return to_messages(prompt)

    def build_body(self, messages: list[dict[str, Any]], tools: Mapping[str, Any]) -> dict[str, Any]:
        contents, system = gemini_contents(messages, tools.get("systemInstruction"))
        body: dict[str, Any] = {"contents": contents, "generationConfig": self.sampling()}
        if self.config.get("responseSchema") is not None:
            body["generationConfig"]["response_schema"] = self.config["responseSchema"]
            body["generationConfig"]["response_mime_type"] = "application/json"
        safety = self.config.get("safetySettings")
        if safety:  # promptfoo accepts `probability` for `threshold`
            body["safetySettings"] = [
                {"category": s.get("category"), "threshold": s.get("threshold") or s.get("probability") or ""}
                for s in safety
            ]
        tool_config = self.config.get("toolConfig") or gemini_tool_config(tools.get("tool_choice"))
        if tool_config is not None:
            body["toolConfig"] = tool_config
        if tools.get("tools"):
            body["tools"] = gemini_tools(tools["tools"])
        if system is not None:
            body["system_instruction"] = system
        body.update(dict(self.config.get("passthrough") or {}))
        return body

    def parse_reply(self, reply: HttpReply) -> ChatReply:
        payload = reply.json
        output = candidate_output(payload)
        usage = payload.get("usageMetadata") or {}
        prompt_tokens = int(usage.get("promptTokenCount") or 0) + int(
            usage.get("toolUsePromptTokenCount") or 0
        )
        return ChatReply(
            output=output,
            usage=Usage(
                prompt_tokens=prompt_tokens,
                completion_tokens=int(usage.get("candidatesTokenCount") or 0),
                total_tokens=int(usage.get("totalTokenCount") or 0),
            ),
            metadata=reply_metadata(payload),
        )


class GeminiEmbedder(HttpEmbedder):
    """``:batchEmbedContents``: one request per batch, one ``values`` vector per text."""

    family = "google"

    def __init__(self, spec: ProviderSpec, **kwargs: Any) -> None:
        super().__init__(spec, **kwargs)
        version = _api_version(self.config, "v1beta")
        self.path = f"{version}/models/{quote(self.model, safe='')}:batchEmbedContents"

    def extra_identity(self) -> Mapping[str, Any]:
        return {key: self.config[key] for key in ("taskType", "title") if self.config.get(key) is not None}

    def build_body(self, texts: list[str]) -> dict[str, Any]:
        dims = self.dimensions or self.config.get("outputDimensionality")
        extra = {key: self.config[key] for key in ("taskType", "title") if self.config.get(key) is not None}
        if dims:
            extra["outputDimensionality"] = dims
        model = f"models/{self.model}"
        return {"requests": [{"model": model, "content": {"parts": [{"text": t}]}, **extra} for t in texts]}

    def parse_reply(self, payload: Any, count: int) -> tuple[np.ndarray[Any, np.dtype[np.float32]], int]:
        rows = [item["values"] for item in payload["embeddings"]]
        return vectors_from_rows(rows, count, self.id), 0


def _api_version(config: Mapping[str, Any], default: str) -> str:
    return str(config.get("apiVersion") or default)


def _google_base_url(config: Mapping[str, Any]) -> str:
    """promptfoo's order: ``apiHost`` / ``GOOGLE_API_HOST`` (https), then ``apiBaseUrl`` /
    ``GOOGLE_API_BASE_URL``, then AI Studio."""
    host = config_or_env(config, "apiHost", "GOOGLE_API_HOST", "PALM_API_HOST")
    if host:
        return host if "://" in host else f"https://{host}"
    return config_or_env(config, "apiBaseUrl", "GOOGLE_API_BASE_URL") or DEFAULT_GOOGLE_BASE_URL


def _client(spec: ProviderSpec, base_url: str, api_key: str | None) -> HttpClient:
    headers = {"x-goog-api-key": api_key} if api_key else {}
    return HttpClient.for_spec(
        spec, base_url=base_url, headers=headers, secrets=(api_key,) if api_key else ()
    )


def _model_after(spec: ProviderSpec, prefixes: Sequence[str]) -> str:
    rest = spec.id
    for prefix in prefixes:
        if rest.startswith(prefix):
            rest = rest[len(prefix) :]
            break
    return str(spec.config.get("model") or rest)


def make_chat(spec: ProviderSpec) -> GeminiChat:
    service, _, model = spec.id.split(":", 1)[1].partition(":")
    if model and service in _OTHER_SERVICES:
        raise ConfigError(
            f"{spec.id!r}: promptfoo's google:{service}: provider uses another Google API, which evalh does "
            "not serve",
            where=spec.path or spec.id,
            hint="Use google:<model> (generateContent) for text, or a python: / http provider for that API",
        )
    model = _model_after(spec, ("google:", "palm:"))
    api_key = google_api_key(spec.config)
    return GeminiChat(
        spec,
        path=f"{_api_version(spec.config, 'v1beta')}/models/{quote(model, safe='')}:generateContent",
        model=model,
        http=_client(spec, _google_base_url(spec.config), api_key),
        pricing=Pricing.resolve(spec.config, {}, model),
        missing_key=missing_google_key(spec),
    )


def make_vertex(spec: ProviderSpec) -> GeminiChat:
    """Vertex AI's express mode: an API key, no project, Google's publisher models (Gemini)."""
    model = _model_after(spec, ("vertex:chat:", "vertex:"))
    if ":" in model or not model.startswith(("gemini", "gemma")):
        raise ConfigError(
            f"{spec.id!r}: evalh serves vertex: for Gemini models through Vertex AI's express mode only",
            where=spec.path or spec.id,
            hint="For Claude use anthropic:messages:<model>; for embeddings google:embedding:<model> with an "
            "AI Studio key; for other models an OpenAI-compatible endpoint (openai:chat:<model> with "
            "apiBaseUrl)",
        )
    config = spec.config
    api_key = vertex_api_key(config)
    version = config_or_env(config, "apiVersion", "VERTEX_API_VERSION") or "v1"
    publisher = config_or_env(config, "publisher", "VERTEX_PUBLISHER") or "google"
    return GeminiChat(
        spec,
        path=f"{version}/publishers/{publisher}/models/{quote(model, safe='')}:generateContent",
        model=model,
        http=_client(spec, _vertex_base_url(config), api_key),
        pricing=Pricing.resolve(config, {}, model),
        missing_key=missing_vertex_key(spec),
    )


def _vertex_base_url(config: Mapping[str, Any]) -> str:
    """``apiHost`` / ``VERTEX_API_HOST``, else the region's host (promptfoo's ``getVertexApiHostForRegion``;
    region: ``config.region`` / ``VERTEX_REGION`` / ``GOOGLE_CLOUD_LOCATION``, ``us-central1`` with a key);
    ``apiBaseUrl`` (evalh's) names a whole base URL, such as a proxy's."""
    if config.get("apiBaseUrl"):
        return str(config["apiBaseUrl"])
    host = config_or_env(config, "apiHost", "VERTEX_API_HOST")
    if not host:
        region = config_or_env(config, "region", "VERTEX_REGION", "GOOGLE_CLOUD_LOCATION") or "us-central1"
        if region == "global":
            host = DEFAULT_VERTEX_HOST
        elif region in ("us", "eu"):
            host = f"aiplatform.{region}.rep.googleapis.com"
        else:
            host = f"{region}-{DEFAULT_VERTEX_HOST}"
    return host if "://" in host else f"https://{host}"


def make_embedding(spec: ProviderSpec) -> GeminiEmbedder:
    model = _model_after(spec, ("google:embedding:", "google:embeddings:"))
    api_key = google_api_key(spec.config)
    return GeminiEmbedder(
        spec,
        model=model,
        http=_client(spec, _google_base_url(spec.config), api_key),
        missing_key=missing_google_key(spec),
    )
