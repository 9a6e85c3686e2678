"""promptfoo's OpenAI-compatible families (groq:, mistral:, togetherai:, localai:, ...) against a loopback
server speaking the chat-completions and embeddings protocol: base URL, key variable, sub-forms, errors."""

from __future__ import annotations

import asyncio
from urllib.parse import urlsplit

import pytest

from evalh.model import ProviderSpec
from evalh.providers.base import supports
from evalh.providers.families import FAMILIES, family_of
from evalh.providers.registry import build_provider, find_entry, missing_key, unserved
from tests.loopback import LoopbackServer, Reply
from tests.providers.chat_helpers import FAST, SECRET, complete_once

_CHAT = {
    "choices": [{"message": {"role": "assistant", "content": "Paris"}, "finish_reason": "stop"}],
    "usage": {"prompt_tokens": 11, "completion_tokens": 2, "total_tokens": 13},
}
_FAMILY_ENVARS = sorted(
    {name for f in FAMILIES for name in (*f.key_envars, *f.base_url_envars)}
    | {"OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_API_BASE_URL", "LITELLM_API_KEY", "MY_KEY"}
)


@pytest.fixture(autouse=True)
def _no_family_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in _FAMILY_ENVARS:
        monkeypatch.delenv(name, raising=False)


def test_groq_sends_its_own_key_to_its_server_never_the_openai_key(
    loopback: LoopbackServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GROQ_API_KEY", SECRET)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai-must-not-leave")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")  # moves OpenAI, not Groq
    loopback.route("POST", "/openai/v1/chat/completions", lambda r: Reply.json(_CHAT))
    config = {"apiBaseUrl": loopback.url + "/openai/v1", "temperature": 0}
    _, response = complete_once("groq:llama-3.1-8b-instant", config, "Capital of France?")
    assert response.error is None and response.output == "Paris"
    request = loopback.requests[0]
    assert request.header("Authorization") == f"Bearer {SECRET}"
    assert request.json == {
        "model": "llama-3.1-8b-instant",
        "messages": [{"role": "user", "content": "Capital of France?"}],
        "temperature": 0,
    }
    assert response.usage.total_tokens == 13 and response.cost == 0.0


def test_a_family_base_url_variable_moves_it(
    loopback: LoopbackServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MISTRAL_API_KEY", SECRET)
    monkeypatch.setenv("MISTRAL_API_BASE_URL", loopback.url + "/v1")
    loopback.route("POST", "/v1/chat/completions", lambda r: Reply.json(_CHAT))
    _, response = complete_once("mistral:chat:mistral-large-latest", {})
    assert response.output == "Paris"
    assert loopback.requests[0].json["model"] == "mistral-large-latest"


def test_each_family_defaults_to_promptfoos_base_url() -> None:
    # built, never called: the URL it would post to is promptfoo's default for the family
    expected = {
        "groq:m": "https://api.groq.com/openai/v1/chat/completions",
        "openrouter:openai/gpt-4o": "https://openrouter.ai/api/v1/chat/completions",
        "togetherai:chat:m": "https://api.together.xyz/v1/chat/completions",
        "deepseek:deepseek-chat": "https://api.deepseek.com/v1/chat/completions",
        "fireworks:accounts/fireworks/models/m": "https://api.fireworks.ai/inference/v1/chat/completions",
        "perplexity:sonar": "https://api.perplexity.ai/chat/completions",
        "xai:grok-3": "https://api.x.ai/v1/chat/completions",
        "cerebras:llama3.1-8b": "https://api.cerebras.ai/v1/chat/completions",
        "localai:chat:m": "http://localhost:8080/v1/chat/completions",
        "dashscope:qwen-max": "https://dashscope-intl.aliyuncs.com/compatible-mode/v1/chat/completions",
    }
    for provider_id, url in expected.items():
        provider = build_provider(ProviderSpec(id=provider_id))
        assert provider.http.url_for(provider.path) == url, provider_id  # type: ignore[union-attr]


def test_every_family_is_served_for_chat_and_its_embeddings() -> None:
    for family in FAMILIES:
        for prefix in family.prefixes:
            assert family_of(f"{prefix}:some-model") is family
            entry = find_entry(f"{prefix}:some-model")
            assert entry is not None and entry.capabilities == ("text",), prefix
            embedding = find_entry(f"{prefix}:embedding:m")
            assert (embedding is not None and embedding.capabilities == ("embedding",)) is family.embeddings
            assert urlsplit(family.base_url).scheme in ("http", "https")


def test_the_embedding_form_posts_to_the_family_embeddings(
    loopback: LoopbackServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MISTRAL_API_KEY", SECRET)
    loopback.route(
        "POST",
        "/v1/embeddings",
        lambda r: Reply.json(
            {
                "data": [{"index": 0, "embedding": [0.6, 0.8]}],
                "usage": {"prompt_tokens": 3, "total_tokens": 3},
            }
        ),
    )
    config = {"apiBaseUrl": loopback.url + "/v1", **FAST}
    provider = build_provider(ProviderSpec(id="mistral:embeddings:mistral-embed", config=config))
    assert supports(provider, "embedding")

    async def go() -> list[float]:
        try:
            found = await provider.embed(["hello"])  # type: ignore[union-attr]
            return [float(x) for x in found.vectors[0]]
        finally:
            await provider.aclose()  # type: ignore[union-attr]

    assert asyncio.run(go()) == pytest.approx([0.6, 0.8])
    assert loopback.requests[0].json["model"] == "mistral-embed"
    # promptfoo's mistral:embedding (no model) is its default model
    plain = build_provider(ProviderSpec(id="mistral:embedding", config=config))
    assert plain.model == "mistral-embed"  # type: ignore[union-attr]
    assert loopback.requests[0].header("Authorization") == f"Bearer {SECRET}"


def test_a_missing_family_key_names_its_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    def envars(provider_id: str, **config: object) -> tuple[str, ...] | None:
        found = missing_key(ProviderSpec(id=provider_id, config=config))
        return None if found is None else found.envars

    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai")  # never stands in for another family's key
    assert envars("groq:llama-3.1-8b-instant") == ("GROQ_API_KEY",)
    # promptfoo's rule: a hosted family needs its key whatever the base URL
    assert envars("openrouter:openai/gpt-4o", apiBaseUrl="http://127.0.0.1:9/v1") == ("OPENROUTER_API_KEY",)
    assert envars("nscale:m") == ("NSCALE_SERVICE_TOKEN", "NSCALE_API_KEY")
    assert envars("mistral:embedding:mistral-embed") == ("MISTRAL_API_KEY",)
    assert envars("togetherai:m", apiKeyEnvar="MY_KEY") == ("MY_KEY",)
    assert envars("groq:m", apiKey="k") is None
    monkeypatch.setenv("GROQ_API_KEY", "k")
    assert envars("groq:m") is None
    # servers you run need none, unless apiKeyEnvar names the variable
    assert envars("localai:chat:m") is None and envars("litellm:m") is None
    assert envars("localai:m", apiKeyEnvar="MY_KEY") == ("MY_KEY",)


def test_a_family_call_without_its_key_errors_without_calling(loopback: LoopbackServer) -> None:
    loopback.route("POST", "/v1/chat/completions", lambda r: Reply.json(_CHAT))
    _, response = complete_once("deepseek:deepseek-chat", {"apiBaseUrl": loopback.url + "/v1"})
    assert response.error is not None and "DEEPSEEK_API_KEY" in response.error
    assert loopback.requests == []


def test_a_family_rate_limit_is_retried_and_a_4xx_is_redacted(loopback: LoopbackServer) -> None:
    loopback.script(
        "POST",
        "/v1/chat/completions",
        [Reply.json({"error": "slow down"}, status=429, headers={"Retry-After": "0"}), Reply.json(_CHAT)],
    )
    config = {"apiBaseUrl": loopback.url + "/v1", "apiKey": SECRET}
    _, response = complete_once("togetherai:chat:meta-llama/Llama-3-8b", config)
    assert response.output == "Paris" and response.metadata["attempts"] == 2
    assert loopback.requests[0].json["model"] == "meta-llama/Llama-3-8b"
    loopback.reset()
    loopback.route(
        "POST", "/v1/chat/completions", lambda r: Reply.json({"error": f"bad key {SECRET}"}, status=401)
    )
    _, refused = complete_once("xai:grok-3", config)
    assert refused.error is not None and "HTTP 401" in refused.error and SECRET not in refused.error


def test_a_local_family_needs_no_key(loopback: LoopbackServer) -> None:
    loopback.route("POST", "/v1/chat/completions", lambda r: Reply.json(_CHAT))
    _, response = complete_once("localai:chat:llama3", {"apiBaseUrl": loopback.url + "/v1"})
    assert response.output == "Paris"
    assert loopback.requests[0].header("Authorization") is None


def test_promptfoos_other_spellings_of_anthropic_and_azure(loopback: LoopbackServer) -> None:
    reply = {
        "content": [{"type": "text", "text": "hi"}],
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 1, "output_tokens": 1},
    }
    loopback.route("POST", "/v1/messages", lambda r: Reply.json(reply))
    config = {"apiBaseUrl": loopback.url, "apiKey": SECRET}
    _, response = complete_once("anthropic:claude-3-5-haiku-20241022", config)
    assert response.output == "hi" and loopback.requests[0].json["model"] == "claude-3-5-haiku-20241022"
    loopback.route("POST", "/openai/deployments/my-gpt/chat/completions", lambda r: Reply.json(_CHAT))
    _, azure = complete_once("azure:chat:my-gpt", {"apiBaseUrl": loopback.url, "apiKey": SECRET})
    assert azure.output == "Paris" and loopback.requests[-1].header("api-key") == SECRET


@pytest.mark.parametrize(
    "provider_id",
    [
        "groq:responses:openai/gpt-oss-20b",
        "anthropic:completion:claude-2",
        "togetherai:completion:m",
        "ollama:llama3",
    ],
)
def test_a_refused_sub_form_is_not_taken_for_a_model_of_its_family(provider_id: str) -> None:
    assert find_entry(provider_id) is None


# Every id form promptfoo 0.123.1's provider registry (src/providers/registry.ts, providerMap) accepts, as
# "<form>x" (a few are exact ids). Each must be served, or refused with what to use instead: never unknown.
PROMPTFOO_0_123_FORMS = (
    "a2a:", "a2a", "exec:", "golang:", "python:", "ruby:", "abliteration:", "ai21:", "alibaba:",
    "alicloud:", "aliyun:", "dashscope:", "opencode:", "opencode", "openinterpreter", "openclaw",
    "anthropic:claude-agent-sdk", "anthropic:claude-code", "anthropic:messages:", "anthropic:completion:",
    "anthropic:", "atlascloud:", "azure:chat:", "azure:assistant:", "azure:image:", "azure:realtime:",
    "azureopenai:chat:", "bam:", "cerebras:", "novita:", "cloudera:", "cloudflare-ai:",
    "cloudflare-gateway:", "cohere:", "cohere:embedding:", "databricks:", "mlflow-gateway:", "deepseek:",
    "echo", "elevenlabs:", "envoy:", "f5:", "fal:", "fireworks:", "github:", "groq:", "groq:responses:",
    "helicone:", "hyperbolic:", "hyperbolic:image:", "litellm:", "localai:", "localai:completion:", "meta:",
    "minimax:", "mistral:", "mistral:embedding:", "moonshot:", "nscale:", "nvidia:", "ollama:",
    "ollama:chat:", "ollama:completion:", "ollama:embeddings:", "openai:codex-security", "openai:",
    "openai:chat:", "openai:responses:", "openai:assistant:", "openai:realtime:", "openai:tts:",
    "openai:codex", "openai:agents", "openrouter:", "orcarouter:", "package:", "perplexity:", "portkey:",
    "quiverai:", "replicate:", "replicate:image:", "modelslab:", "togetherai:", "truefoundry:", "llamaapi:",
    "aimlapi:", "cometapi:", "docker:", "vercel:", "voyage:", "watsonx:", "n8n", "webhook:", "xai:",
    "xai:image:", "browser", "http", "https://", "jfrog:", "qwak:", "llama", "mcp",
    "promptfoo:manual-input", "promptfoo:simulated-user", "promptfoo:model:", "sequence", "ws:", "wss:",
    "websocket", "huggingface:feature-extraction:", "huggingface:text-generation:", "hf:chat:",
    "transformers:", "slack", "snowflake:", "promptfoo:redteam:", "bedrock:", "bedrock-agent:",
    "sagemaker:", "vertex:", "google:", "palm:",
)  # fmt: skip


@pytest.mark.parametrize("form", PROMPTFOO_0_123_FORMS)
def test_every_id_promptfoo_accepts_is_served_or_refused_with_what_instead(form: str) -> None:
    provider_id = form + "some-model" if form.endswith((":", "/")) else form
    refused = unserved(provider_id)
    assert find_entry(provider_id) is not None or (refused is not None and refused.instead), provider_id
