"""AWS Bedrock: ``bedrock:<modelId>`` / ``bedrock:converse:<modelId>`` (the Converse API) and
``bedrock:embeddings:<modelId>`` (InvokeModel, Titan and Cohere bodies).

POSTs ``https://bedrock-runtime.{region}.amazonaws.com/model/{modelId}/converse`` (``config.endpoint``
replaces the host; region: ``config.region``, ``AWS_BEDROCK_REGION``, else ``us-east-1``, as promptfoo).
Requests are signed with AWS Signature Version 4 by botocore's own signer (``SigV4Auth``), an optional
extra (``pip install 'evalh[bedrock]'``: 32 MB installed, ~0.25 s to import), imported only when a
Bedrock provider is built with an access key pair; a Bedrock API key (``config.apiKey`` /
``AWS_BEARER_TOKEN_BEDROCK``) is a bearer token and needs no signer. Credentials follow promptfoo's order
(:mod:`evalh.providers.keys`).

The body and the output follow promptfoo's ``src/providers/bedrock/converse.ts``: a JSON chat prompt's
system messages become ``system`` and the rest ``messages`` of content blocks; a text prompt is split on
lines that start with ``system:`` / ``user:`` / ``assistant:``; ``maxTokens`` / ``max_tokens``,
``temperature``, ``topP`` / ``top_p``, ``stopSequences`` / ``stop`` make ``inferenceConfig``. The output
joins the reply's text blocks (thinking as ``<thinking>`` text) by blank lines; a reply that calls tools
is its ``tool_use`` blocks as JSON.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import quote

import numpy as np

from evalh.common.environment import getenv
from evalh.errors import ConfigError
from evalh.model import ProviderSpec, Usage
from evalh.providers.bedrock_signing import RequestSigner, bedrock_region, signer_for
from evalh.providers.chat import ChatProvider, ChatReply, Pricing, ReplyRefused, require_config_shapes
from evalh.providers.converse import converse_messages, converse_output, converse_tools, pick
from evalh.providers.embedhttp import HttpEmbedder, vectors_from_rows
from evalh.providers.http import HttpClient, HttpReply
from evalh.providers.keys import missing_aws_credentials

__all__ = [
    "BedrockConverse",
    "BedrockEmbedder",
    "make_converse",
    "make_embedding",
]

# bedrock:<type>:<model> types promptfoo serves with other Bedrock APIs, which evalh does not speak
_OTHER_APIS = (
    "agents",
    "kb",
    "knowledge-base",
    "nova-sonic",
    "video",
    "mantle",
    "responses",
    "luma.ray",
    "amazon.nova-reel",
)
_MALFORMED = {
    "malformed_model_output": "Model produced invalid output. The response could not be parsed correctly.",
    "malformed_tool_use": "Model produced a malformed tool use request. Check tool configuration and "
    "input schema.",
}


def _inference_config(config: Mapping[str, Any]) -> dict[str, Any]:
    """promptfoo's ``buildInferenceConfig``: config first, then the ``AWS_BEDROCK_*`` variables."""
    settings: dict[str, Any] = {}
    max_tokens = _first(config.get("maxTokens"), config.get("max_tokens"), getenv("AWS_BEDROCK_MAX_TOKENS"))
    temperature = _first(config.get("temperature"), getenv("AWS_BEDROCK_TEMPERATURE"))
    top_p = _first(config.get("topP"), config.get("top_p"), getenv("AWS_BEDROCK_TOP_P"))
    if max_tokens is not None:
        settings["maxTokens"] = int(max_tokens)
    if temperature is not None:
        settings["temperature"] = float(temperature)
    if top_p is not None:
        settings["topP"] = float(top_p)
    stop = config.get("stopSequences") or config.get("stop") or _json_list(getenv("AWS_BEDROCK_STOP"))
    if stop:
        settings["stopSequences"] = [stop] if isinstance(stop, str) else list(stop)
    return settings


def _first(*values: Any) -> Any:
    return next((value for value in values if value not in (None, "")), None)


def _json_list(text: str | None) -> list[Any] | None:
    if not text:
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, list) else None


class BedrockConverse(ChatProvider):
    """The Converse API, one signed POST per prompt."""

    def __init__(self, spec: ProviderSpec, *, signer: RequestSigner, **kwargs: Any) -> None:
        require_config_shapes(
            spec, mappings=("additionalModelRequestFields", "thinking", "performanceConfig", "serviceTier")
        )
        super().__init__(spec, **kwargs)
        self.signer = signer
        self.path = f"model/{quote(self.model, safe='')}/converse"
        try:
            self.inference = _inference_config(self.config)
        except (TypeError, ValueError) as error:
            where = f"{spec.path}.config" if spec.path else spec.id
            raise ConfigError(
                f"maxTokens, temperature, topP and stopSequences must be numbers (and a list of texts): "
                f"{error}",
                where=where,
                hint="Also check the AWS_BEDROCK_MAX_TOKENS / _TEMPERATURE / _TOP_P / _STOP variables",
            ) from None

    def sampling(self) -> dict[str, Any]:
        return dict(self.inference)

    def extra_identity(self) -> Mapping[str, Any]:
        keys = ("guardrailIdentifier", "guardrailVersion", "additionalModelRequestFields", "thinking")
        return {"signer": self.signer.identity(), **pick(self.config, *keys)}

    def messages_of(self, prompt: str | Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
        messages, system = converse_messages(prompt)
        return [{"role": "system", "content": system}, *messages] if system else messages

    def build_body(self, messages: list[dict[str, Any]], tools: Mapping[str, Any]) -> dict[str, Any]:
        system = [m["content"] for m in messages if m["role"] == "system"]
        body: dict[str, Any] = {"messages": [m for m in messages if m["role"] != "system"]}
        if system:
            body["system"] = system[0]
        if self.inference:
            body["inferenceConfig"] = self.sampling()
        choice = tools.get("tool_choice", self.config.get("toolChoice"))
        tool_config = converse_tools(tools.get("tools"), choice)
        if tool_config:
            body["toolConfig"] = tool_config
        body.update(self._extra_fields())
        return body

    def _extra_fields(self) -> dict[str, Any]:
        config, fields = self.config, {}
        if config.get("guardrailIdentifier"):
            guardrail = {
                "guardrailIdentifier": str(config["guardrailIdentifier"]),
                "guardrailVersion": str(config.get("guardrailVersion") or "DRAFT"),
            }
            fields["guardrailConfig"] = {**guardrail, **pick(config, "trace")}
        additional = dict(config.get("additionalModelRequestFields") or {})
        additional.update(pick(config, "thinking", "reasoningConfig"))
        if additional:
            fields["additionalModelRequestFields"] = additional
        fields.update(pick(config, "additionalModelResponseFieldPaths"))
        if config.get("performanceConfig"):
            fields["performanceConfig"] = {"latency": config["performanceConfig"].get("latency")}
        if config.get("serviceTier"):
            fields["serviceTier"] = {"type": config["serviceTier"].get("type")}
        return fields

    async def send(
        self, body: dict[str, Any], *, timeout_s: float | None, headers: Mapping[str, str] | None
    ) -> HttpReply:
        return await _signed_post(self.http, self.signer, self.path, body, timeout_s, headers)

    def parse_reply(self, reply: HttpReply) -> ChatReply:
        payload = reply.json
        stop_reason = payload.get("stopReason")
        if stop_reason in _MALFORMED:
            raise ReplyRefused(_MALFORMED[stop_reason])
        content = ((payload.get("output") or {}).get("message") or {}).get("content") or []
        usage = payload.get("usage") or {}
        metadata: dict[str, Any] = pick(payload, "stopReason", "additionalModelResponseFields", "trace")
        if stop_reason == "guardrail_intervened":
            metadata["guardrails"] = {"flagged": True, "reason": "guardrail_intervened"}
        return ChatReply(
            output=converse_output(content, show_thinking=self.config.get("showThinking") is not False),
            usage=Usage(
                prompt_tokens=int(usage.get("inputTokens") or 0),
                completion_tokens=int(usage.get("outputTokens") or 0),
                total_tokens=int(usage.get("totalTokens") or 0),
            ),
            metadata=metadata,
        )


async def _signed_post(
    http: HttpClient,
    signer: RequestSigner,
    path: str,
    body: Any,
    timeout_s: float | None,
    headers: Mapping[str, str] | None,
) -> HttpReply:
    """POST the JSON bytes the signer signed (a signature covers the exact body)."""
    content = json.dumps(body, ensure_ascii=False).encode("utf-8")
    url = http.url_for(path)
    signed = signer.headers_for("POST", url, content, {**http.headers, "Content-Type": "application/json"})
    return await http.request(
        "POST", url, content=content, headers={**signed, **(headers or {})}, timeout_s=timeout_s
    )


class BedrockEmbedder(HttpEmbedder):
    """InvokeModel with Titan's ``{inputText}`` (one text a call) or Cohere's ``{texts, input_type}``."""

    family = "bedrock"

    def __init__(self, spec: ProviderSpec, *, signer: RequestSigner, **kwargs: Any) -> None:
        super().__init__(spec, **kwargs)
        self.signer = signer
        self.path = f"model/{quote(self.model, safe='')}/invoke"
        self.cohere = "cohere.embed" in self.model
        if not self.cohere:  # Titan embeds one text per request
            self.batch_size = 1

    def extra_identity(self) -> Mapping[str, Any]:
        return {"signer": self.signer.identity(), **pick(self.config, "input_type")}

    def build_body(self, texts: list[str]) -> dict[str, Any]:
        if self.cohere:
            return {"texts": texts, "input_type": self.config.get("input_type") or "search_document"}
        body: dict[str, Any] = {"inputText": texts[0]}
        if self.dimensions:
            body["dimensions"] = self.dimensions
        return body

    async def send(self, body: dict[str, Any]) -> HttpReply:
        return await _signed_post(self.http, self.signer, self.path, body, None, None)

    def parse_reply(self, payload: Any, count: int) -> tuple[np.ndarray[Any, np.dtype[np.float32]], int]:
        embeddings = payload.get("embeddings")
        if isinstance(embeddings, Mapping):
            embeddings = embeddings.get("float")
        rows = embeddings if self.cohere else [payload["embedding"]]
        return vectors_from_rows(rows, count, self.id), int(payload.get("inputTextTokenCount") or 0)


def _client(spec: ProviderSpec, signer: RequestSigner) -> HttpClient:
    base_url = str(
        spec.config.get("endpoint") or f"https://bedrock-runtime.{bedrock_region(spec.config)}.amazonaws.com"
    )
    return HttpClient.for_spec(spec, base_url=base_url, secrets=signer.secrets())


def make_converse(spec: ProviderSpec) -> BedrockConverse:
    rest = spec.id.split(":", 1)[1]
    kind, _, model = rest.partition(":")
    if kind in ("converse", "completion", "messages") and model:
        rest = model
    elif any(kind.startswith(other) for other in _OTHER_APIS):
        raise ConfigError(
            f"{spec.id!r}: promptfoo serves bedrock:{kind} with another Bedrock API, which evalh does "
            "not speak",
            where=spec.path or spec.id,
            hint="Use bedrock:converse:<modelId> for a model's text, or a python: provider calling that API",
        )
    model = str(spec.config.get("model") or rest)
    signer = signer_for(spec)
    return BedrockConverse(
        spec,
        signer=signer,
        model=model,
        http=_client(spec, signer),
        pricing=Pricing.resolve(spec.config, {}, model),
        missing_key=missing_aws_credentials(spec),
    )


def make_embedding(spec: ProviderSpec) -> BedrockEmbedder:
    model = str(spec.config.get("model") or spec.id.split(":", 2)[2])
    signer = signer_for(spec)
    return BedrockEmbedder(
        spec,
        signer=signer,
        model=model,
        http=_client(spec, signer),
        missing_key=missing_aws_credentials(spec),
    )
