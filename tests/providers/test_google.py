"""google: / vertex: (Gemini generateContent) and google:embedding: against a loopback server speaking
Google's protocol."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from evalh.errors import ConfigError
from evalh.model import ProviderSpec
from evalh.providers.base import CallContext
from evalh.providers.registry import build_provider, missing_key
from evalh.secrets import redact_text
from tests.loopback import LoopbackServer, Reply
from tests.providers.chat_helpers import FAST, SECRET, complete_once

PATH = "/v1beta/models/gemini-2.5-flash:generateContent"
_GOOGLE_VARS = ("GOOGLE_API_KEY", "GEMINI_API_KEY", "PALM_API_KEY", "VERTEX_API_KEY", "GOOGLE_API_HOST")


@pytest.fixture(autouse=True)
def _no_google_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (*_GOOGLE_VARS, "GOOGLE_API_BASE_URL", "PALM_API_HOST", "VERTEX_API_HOST", "VERTEX_REGION"):
        monkeypatch.delenv(name, raising=False)


def gemini_reply(parts: list[dict[str, Any]], **extra: Any) -> Reply:
    return Reply.json(
        {
            "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", **extra}],
            "usageMetadata": {"promptTokenCount": 12, "candidatesTokenCount": 5, "totalTokenCount": 17},
        }
    )


def test_chat_messages_become_contents_and_system_instruction(loopback: LoopbackServer) -> None:
    loopback.route("POST", PATH, lambda r: gemini_reply([{"text": "Bon"}, {"text": "jour"}]))
    messages = [
        {"role": "system", "content": "Answer in French."},
        {"role": "user", "content": "Hello"},
        {"role": "assistant", "content": "Salut"},
        {"role": "user", "content": "Again"},
    ]
    config = {
        "apiBaseUrl": loopback.url,
        "apiKey": SECRET,
        "temperature": 0,
        "maxOutputTokens": 64,
        "generationConfig": {"topK": 3},
        "systemInstruction": "Be brief.",
    }
    _, response = complete_once("google:gemini-2.5-flash", config, json.dumps(messages))
    assert response.error is None
    assert response.output == "Bonjour"
    usage = response.usage
    assert (usage.prompt_tokens, usage.completion_tokens, usage.total_tokens) == (12, 5, 17)
    request = loopback.requests[0]
    assert request.json == {
        "contents": [
            {"role": "user", "parts": [{"text": "Hello"}]},
            {"role": "model", "parts": [{"text": "Salut"}]},
            {"role": "user", "parts": [{"text": "Again"}]},
        ],
        "generationConfig": {"temperature": 0, "maxOutputTokens": 64, "topK": 3},
        "system_instruction": {"parts": [{"text": "Be brief."}, {"text": "Answer in French."}]},
    }
    assert request.header("x-goog-api-key") == SECRET
    assert "key=" not in request.path  # the key travels in a header, never in the URL


def test_text_prompt_is_one_user_turn_and_key_from_gemini_variable(
    loopback: LoopbackServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GEMINI_API_KEY", SECRET)
    loopback.route("POST", PATH, lambda r: gemini_reply([{"text": "ok"}]))
    _, response = complete_once("google:gemini-2.5-flash", {"apiBaseUrl": loopback.url}, "Say ok")
    assert response.output == "ok"
    assert loopback.requests[0].json["contents"] == [{"role": "user", "parts": [{"text": "Say ok"}]}]
    assert loopback.requests[0].header("x-goog-api-key") == SECRET


def test_function_call_is_the_parts_and_openai_tools_are_declarations(loopback: LoopbackServer) -> None:
    call = {"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}}
    loopback.route("POST", PATH, lambda r: gemini_reply([call]))
    tool = {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}
    config = {"apiBaseUrl": loopback.url, "apiKey": SECRET, "tools": [tool], "tool_choice": "required"}
    _, response = complete_once("google:gemini-2.5-flash", config)
    assert response.error is None
    assert response.output == [call]
    body = loopback.requests[0].json
    assert body["tools"] == [
        {"functionDeclarations": [{"name": "get_weather", "parameters": {"type": "object"}}]}
    ]
    assert body["toolConfig"] == {"functionCallingConfig": {"mode": "ANY"}}


def test_blocked_prompt_and_blocked_answer_are_errors_in_promptfoo_words(loopback: LoopbackServer) -> None:
    blocked_prompt = {
        "promptFeedback": {
            "blockReason": "SAFETY",
            "safetyRatings": [
                {"category": "HARM_CATEGORY_HARASSMENT", "probability": "HIGH"},
                {"category": "HARM_CATEGORY_HATE_SPEECH", "probability": "NEGLIGIBLE"},
            ],
        }
    }
    loopback.route("POST", PATH, lambda r: Reply.json(blocked_prompt))
    config = {"apiBaseUrl": loopback.url, "apiKey": SECRET}
    _, response = complete_once("google:gemini-2.5-flash", config)
    assert response.output is None
    assert response.error == (
        "google:gemini-2.5-flash: Response blocked: SAFETY (Safety ratings: HARM_CATEGORY_HARASSMENT: HIGH)"
    )
    ratings = [{"category": "HARM_CATEGORY_DANGEROUS_CONTENT", "probability": "MEDIUM", "blocked": True}]
    loopback.route(
        "POST",
        PATH,
        lambda r: Reply.json({"candidates": [{"finishReason": "SAFETY", "safetyRatings": ratings}]}),
    )
    _, response = complete_once("google:gemini-2.5-flash", config)
    assert response.error is not None
    assert "Response was blocked with finish reason: SAFETY" in response.error
    assert "HARM_CATEGORY_DANGEROUS_CONTENT: MEDIUM (BLOCKED)" in response.error


def test_flagged_answer_carries_guardrails_metadata(loopback: LoopbackServer) -> None:
    ratings = [{"category": "HARM_CATEGORY_HARASSMENT", "probability": "LOW"}]
    loopback.route("POST", PATH, lambda r: gemini_reply([{"text": "hm"}], safetyRatings=ratings))
    _, response = complete_once("google:gemini-2.5-flash", {"apiBaseUrl": loopback.url, "apiKey": SECRET})
    assert response.output == "hm"
    assert response.metadata["guardrails"] == {"flaggedInput": False, "flaggedOutput": True, "flagged": True}


def test_http_error_is_redacted_and_not_retried(loopback: LoopbackServer) -> None:
    bad = {"error": {"code": 400, "message": f"API key not valid: {SECRET}", "status": "INVALID_ARGUMENT"}}
    loopback.route("POST", PATH, lambda r: Reply.json(bad, status=400))
    _, response = complete_once("google:gemini-2.5-flash", {"apiBaseUrl": loopback.url, "apiKey": SECRET})
    assert response.error is not None and "HTTP 400" in response.error
    assert SECRET not in response.error and "API key not valid" in response.error
    assert len(loopback.requests) == 1


def test_missing_key_sends_nothing_and_is_flagged_before_the_run(loopback: LoopbackServer) -> None:
    spec = ProviderSpec(id="google:gemini-2.5-flash", config={"apiBaseUrl": loopback.url})
    flagged = missing_key(spec)
    assert flagged is not None and flagged.envars == ("GOOGLE_API_KEY", "GEMINI_API_KEY")
    _, response = complete_once(spec.id, spec.config)
    assert response.error is not None and "GOOGLE_API_KEY" in response.error
    assert loopback.requests == []


def test_vertex_express_mode_path_and_key(loopback: LoopbackServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VERTEX_API_KEY", SECRET)
    path = "/v1/publishers/google/models/gemini-2.5-pro:generateContent"
    loopback.route("POST", path, lambda r: gemini_reply([{"text": "vertex"}]))
    _, response = complete_once("vertex:gemini-2.5-pro", {"apiBaseUrl": loopback.url})
    assert response.output == "vertex"
    assert loopback.requests[0].header("x-goog-api-key") == SECRET
    # without a key: a config-time rule names the express-mode variables and says ADC is not used
    monkeypatch.delenv("VERTEX_API_KEY")
    flagged = missing_key(ProviderSpec(id="vertex:gemini-2.5-pro"))
    assert (
        flagged is not None
        and "VERTEX_API_KEY" in flagged.message
        and "default credentials" in flagged.message
    )


def test_vertex_region_host_as_promptfoo() -> None:
    provider = build_provider(
        ProviderSpec(id="vertex:gemini-2.5-pro", config={"apiKey": SECRET, "region": "eu"})
    )
    assert provider.http.url_for(provider.path) == (  # type: ignore[union-attr]
        "https://aiplatform.eu.rep.googleapis.com/v1/publishers/google/models/gemini-2.5-pro:generateContent"
    )
    default = build_provider(ProviderSpec(id="vertex:gemini-2.5-pro", config={"apiKey": SECRET}))
    assert default.http.base_url == "https://us-central1-aiplatform.googleapis.com"  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("provider_id", "words"),
    [
        ("vertex:claude-sonnet-4-5", "anthropic:messages"),
        ("vertex:embedding:text-embedding-005", "google:embedding"),
        ("google:image:imagen-3.0-generate-002", "this Google API is not served"),
    ],
)
def test_ids_evalh_cannot_serve_are_located_config_errors(provider_id: str, words: str) -> None:
    with pytest.raises(ConfigError) as caught:
        build_provider(ProviderSpec(id=provider_id, config={"apiKey": SECRET}, path="providers[0]"))
    message = caught.value.render()
    assert words in message and "providers[0]" in message
    assert "unknown provider id" not in message


def test_embeddings_in_batches_with_dimensions(loopback: LoopbackServer) -> None:
    path = "/v1beta/models/gemini-embedding-001:batchEmbedContents"

    def answer(request: Any) -> Reply:
        texts = [item["content"]["parts"][0]["text"] for item in request.json["requests"]]
        return Reply.json({"embeddings": [{"values": [float(len(t)), 1.0, 0.5]} for t in texts]})

    loopback.route("POST", path, answer)
    config = {
        **FAST,
        "apiBaseUrl": loopback.url,
        "apiKey": SECRET,
        "dimensions": 3,
        "taskType": "SEMANTIC_SIMILARITY",
    }
    embedder = build_provider(ProviderSpec(id="google:embedding:gemini-embedding-001", config=config))

    async def go() -> Any:
        try:
            return await embedder.embed(["a", "bbb"])  # type: ignore[union-attr]
        finally:
            await embedder.aclose()  # type: ignore[union-attr]

    embeddings = asyncio.run(go())
    assert embeddings.vectors.tolist() == [[1.0, 1.0, 0.5], [3.0, 1.0, 0.5]]
    request = loopback.requests[0]
    assert request.json["requests"][0] == {
        "model": "models/gemini-embedding-001",
        "content": {"parts": [{"text": "a"}]},
        "taskType": "SEMANTIC_SIMILARITY",
        "outputDimensionality": 3,
    }
    assert request.header("x-goog-api-key") == SECRET
    assert SECRET not in redact_text(f"key {SECRET}")


def test_settings_of_the_wrong_shape_are_located_config_errors() -> None:
    for config, words in (
        ({"generationConfig": "hot"}, "generationConfig must be a mapping"),
        ({"safetySettings": {"category": "x"}}, "safetySettings must be a list of mappings"),
        ({"systemInstruction": 5}, "systemInstruction must be text or {parts: [...]}"),
    ):
        spec = ProviderSpec(
            id="google:gemini-2.5-flash", config={"apiKey": SECRET, **config}, path="providers[0]"
        )
        with pytest.raises(ConfigError) as caught:
            build_provider(spec)
        assert words in caught.value.render() and "providers[0].config" in caught.value.render()


def test_system_instruction_is_rendered_with_the_tests_vars_and_keys_the_cache(
    loopback: LoopbackServer,
) -> None:
    loopback.route("POST", PATH, lambda r: gemini_reply([{"text": "ok"}]))
    config = {"apiBaseUrl": loopback.url, "apiKey": SECRET, "systemInstruction": "Answer in {{ language }}."}
    provider, response = complete_once(
        "google:gemini-2.5-flash", config, "Hi", CallContext(vars={"language": "French"})
    )
    assert response.error is None
    assert loopback.requests[0].json["system_instruction"] == {"parts": [{"text": "Answer in French."}]}
    french = provider.request_shape("Hi", {"language": "French"})  # type: ignore[union-attr]
    german = provider.request_shape("Hi", {"language": "German"})  # type: ignore[union-attr]
    assert french is not None and german is not None and french != german


def test_a_prompt_already_in_geminis_shape_is_sent_as_it_is(loopback: LoopbackServer) -> None:
    loopback.route("POST", PATH, lambda r: gemini_reply([{"text": "ok"}]))
    contents = [
        {
            "role": "user",
            "parts": [{"text": "Hi"}, {"inline_data": {"mime_type": "image/png", "data": "iVBO"}}],
        },
        {"role": "model", "parts": [{"text": "Hello"}]},
        {"role": "user", "parts": [{"text": "Describe it"}]},
    ]
    _, response = complete_once(
        "google:gemini-2.5-flash", {"apiBaseUrl": loopback.url, "apiKey": SECRET}, json.dumps(contents)
    )
    assert response.output == "ok"
    assert loopback.requests[0].json["contents"] == contents


def test_a_reply_without_text_is_promptfoos_no_output_error(loopback: LoopbackServer) -> None:
    config = {"apiBaseUrl": loopback.url, "apiKey": SECRET}
    for candidate in ({"finishReason": "MAX_TOKENS"}, {"content": {"parts": [{"text": ""}]}}):
        loopback.route("POST", PATH, lambda r, c=candidate: Reply.json({"candidates": [c]}))
        _, response = complete_once("google:gemini-2.5-flash", config)
        assert response.output is None
        assert response.error is not None and "No output found in response" in response.error
