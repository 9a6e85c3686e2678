"""bedrock: (the Converse API) and bedrock:embeddings: against a loopback server that checks each
request's AWS Signature Version 4 the way AWS does, computed here independently of botocore (hashlib and
hmac, from AWS's published algorithm)."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import sys
from typing import Any
from urllib.parse import quote

import pytest

from evalh.errors import ConfigError
from evalh.model import ProviderSpec
from evalh.providers.registry import build_provider, missing_key
from tests.loopback import LoopbackServer, Reply, Request
from tests.providers.chat_helpers import FAST, complete_once

KEY_ID = "AKIDEXAMPLEGBED01"
SECRET_KEY = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYgbedSECRET"
SESSION = "FwoGZXIvYXdzEGbedSessionToken0123456789"
MODEL = "anthropic.claude-3-haiku-20240307-v1:0"
CONVERSE = f"/model/{quote(MODEL, safe='')}/converse"
_AWS_VARS = (
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_BEARER_TOKEN_BEDROCK",
    "AWS_BEDROCK_REGION",
    "AWS_BEDROCK_MAX_TOKENS",
    "AWS_BEDROCK_TEMPERATURE",
    "AWS_BEDROCK_TOP_P",
    "AWS_BEDROCK_STOP",
)


@pytest.fixture(autouse=True)
def _no_aws_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in _AWS_VARS:
        monkeypatch.delenv(name, raising=False)


def _hmac(key: bytes, text: str) -> bytes:
    return hmac.new(key, text.encode("utf-8"), hashlib.sha256).digest()


def signature_is_valid(request: Request, secret: str, region: str = "us-east-1") -> bool:
    """AWS SigV4 as the service checks it: rebuild the canonical request from what arrived, derive the
    signing key from the secret, and compare signatures."""
    authorization = request.header("Authorization") or ""
    if not authorization.startswith("AWS4-HMAC-SHA256 "):
        return False
    fields = dict(part.strip().split("=", 1) for part in authorization[len("AWS4-HMAC-SHA256 ") :].split(","))
    _, date, scope_region, service, _ = fields["Credential"].split("/")
    signed = fields["SignedHeaders"].split(";")
    amz_date = request.header("X-Amz-Date") or ""
    path, _, query = request.path.partition("?")
    canonical = "\n".join(
        [
            request.method,
            quote(path, safe="/~"),  # every service but S3 encodes the (already encoded) path again
            query,
            "".join(f"{name}:{' '.join((request.header(name) or '').split())}\n" for name in signed),
            ";".join(signed),
            hashlib.sha256(request.body).hexdigest(),
        ]
    )
    scope = f"{date}/{scope_region}/{service}/aws4_request"
    to_sign = f"AWS4-HMAC-SHA256\n{amz_date}\n{scope}\n{hashlib.sha256(canonical.encode()).hexdigest()}"
    key = _hmac(_hmac(_hmac(_hmac(f"AWS4{secret}".encode(), date), scope_region), service), "aws4_request")
    expected = hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
    return (
        scope_region == region
        and service == "bedrock"
        and {"host", "x-amz-date"} <= set(signed)
        and hmac.compare_digest(expected, fields["Signature"])
    )


def verified(answer: Reply, secret: str = SECRET_KEY) -> Any:
    """A handler that answers like AWS: 403 unless the signature holds."""

    def handle(request: Request) -> Reply:
        if not signature_is_valid(request, secret):
            return Reply.json({"message": "The request signature we calculated does not match"}, status=403)
        return answer

    return handle


def converse_reply(content: list[dict[str, Any]], stop: str = "end_turn") -> Reply:
    return Reply.json(
        {
            "output": {"message": {"role": "assistant", "content": content}},
            "stopReason": stop,
            "usage": {"inputTokens": 21, "outputTokens": 4, "totalTokens": 25},
            "metrics": {"latencyMs": 180},
        }
    )


def keys(loopback: LoopbackServer, **extra: Any) -> dict[str, Any]:
    return {"endpoint": loopback.url, "accessKeyId": KEY_ID, "secretAccessKey": SECRET_KEY, **extra}


def test_converse_request_is_signed_and_shaped_as_promptfoo(loopback: LoopbackServer) -> None:
    loopback.route("POST", CONVERSE, verified(converse_reply([{"text": "Bonjour"}])))
    messages = [{"role": "system", "content": "Answer in French."}, {"role": "user", "content": "Hello"}]
    config = keys(loopback, sessionToken=SESSION, max_tokens=50, temperature=0, top_p=0.9, stop=["END"])
    _, response = complete_once(f"bedrock:{MODEL}", config, json.dumps(messages))
    assert response.error is None, response.error
    assert response.output == "Bonjour"
    usage = response.usage
    assert (usage.prompt_tokens, usage.completion_tokens, usage.total_tokens) == (21, 4, 25)
    assert response.metadata["stopReason"] == "end_turn"
    request = loopback.requests[0]
    assert signature_is_valid(request, SECRET_KEY)
    assert request.header("X-Amz-Security-Token") == SESSION
    assert request.json == {
        "messages": [{"role": "user", "content": [{"text": "Hello"}]}],
        "system": [{"text": "Answer in French."}],
        "inferenceConfig": {"maxTokens": 50, "temperature": 0.0, "topP": 0.9, "stopSequences": ["END"]},
    }


def test_a_wrong_secret_is_refused_by_the_checking_server(loopback: LoopbackServer) -> None:
    loopback.route("POST", CONVERSE, verified(converse_reply([{"text": "x"}]), secret="another-secret"))
    _, response = complete_once(f"bedrock:converse:{MODEL}", keys(loopback))
    assert response.error is not None and "HTTP 403" in response.error
    assert SECRET_KEY not in response.error


def test_text_prompt_is_split_on_role_lines(
    loopback: LoopbackServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", KEY_ID)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET_KEY)
    loopback.route("POST", CONVERSE, verified(converse_reply([{"text": "ok"}])))
    prompt = "System: Be terse.\nUser: Hi\nthere\nAssistant: Yo\nUser: Again"
    _, response = complete_once(f"bedrock:converse:{MODEL}", {"endpoint": loopback.url}, prompt)
    assert response.output == "ok"
    body = loopback.requests[0].json
    assert body["system"] == [{"text": "Be terse."}]
    assert body["messages"] == [
        {"role": "user", "content": [{"text": "Hi\nthere"}]},
        {"role": "assistant", "content": [{"text": "Yo"}]},
        {"role": "user", "content": [{"text": "Again"}]},
    ]
    assert "inferenceConfig" not in body


def test_tool_use_reply_is_its_tool_use_blocks(loopback: LoopbackServer) -> None:
    use = {"toolUseId": "t1", "name": "get_weather", "input": {"city": "Paris"}}
    loopback.route(
        "POST", CONVERSE, verified(converse_reply([{"text": "Let me check."}, {"toolUse": use}], "tool_use"))
    )
    tool = {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}
    _, response = complete_once(f"bedrock:{MODEL}", keys(loopback, tools=[tool], tool_choice="required"))
    assert response.output == '{"type":"tool_use","id":"t1","name":"get_weather","input":{"city":"Paris"}}'
    assert loopback.requests[0].json["toolConfig"] == {
        "tools": [{"toolSpec": {"name": "get_weather", "inputSchema": {"json": {"type": "object"}}}}],
        "toolChoice": {"any": {}},
    }


def test_bedrock_api_key_is_a_bearer_token(loopback: LoopbackServer, monkeypatch: pytest.MonkeyPatch) -> None:
    token = "ABSKgbedBearerToken0123456789"
    monkeypatch.setenv("AWS_BEARER_TOKEN_BEDROCK", token)
    monkeypatch.setitem(sys.modules, "botocore.auth", None)  # a bearer token needs no signer
    loopback.route("POST", CONVERSE, lambda r: converse_reply([{"text": "hi"}]))
    _, response = complete_once(f"bedrock:{MODEL}", {"endpoint": loopback.url})
    assert response.output == "hi"
    assert loopback.requests[0].header("Authorization") == f"Bearer {token}"


def test_without_botocore_a_signed_id_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "botocore.auth", None)  # as if evalh[bedrock] were not installed
    spec = ProviderSpec(
        id=f"bedrock:{MODEL}",
        config={"accessKeyId": KEY_ID, "secretAccessKey": SECRET_KEY},
        path="providers[0]",
    )
    with pytest.raises(ConfigError) as caught:
        build_provider(spec)
    message = caught.value.render()
    assert "pip install 'evalh[bedrock]'" in message and "providers[0]" in message
    assert SECRET_KEY not in message


def test_missing_credentials_send_nothing_and_are_flagged(loopback: LoopbackServer) -> None:
    spec = ProviderSpec(id=f"bedrock:{MODEL}", config={"endpoint": loopback.url})
    flagged = missing_key(spec)
    assert flagged is not None and "AWS_ACCESS_KEY_ID" in flagged.message
    assert "AWS_BEARER_TOKEN_BEDROCK" in flagged.message
    _, response = complete_once(spec.id, spec.config)
    assert response.error is not None and "AWS_ACCESS_KEY_ID" in response.error
    assert loopback.requests == []


def test_server_error_echoing_the_secret_is_redacted(loopback: LoopbackServer) -> None:
    echo = {"message": f"ValidationException: bad {SECRET_KEY} {SESSION} for {KEY_ID}"}
    loopback.route("POST", CONVERSE, lambda r: Reply.json(echo, status=400))
    _, response = complete_once(f"bedrock:{MODEL}", keys(loopback, sessionToken=SESSION))
    assert response.error is not None and "ValidationException" in response.error
    assert SECRET_KEY not in response.error and SESSION not in response.error
    assert KEY_ID not in response.error


def test_region_picks_the_runtime_host(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_BEDROCK_REGION", "eu-west-3")
    provider = build_provider(ProviderSpec(id=f"bedrock:{MODEL}", config={"apiKey": "ABSKtoken"}))
    assert provider.http.url_for(provider.path) == (  # type: ignore[union-attr]
        "https://bedrock-runtime.eu-west-3.amazonaws.com/model/"
        "anthropic.claude-3-haiku-20240307-v1%3A0/converse"
    )


@pytest.mark.parametrize("kind", ["agents", "kb", "knowledge-base", "mantle", "responses", "video"])
def test_other_bedrock_apis_are_located_config_errors(kind: str) -> None:
    spec = ProviderSpec(id=f"bedrock:{kind}:some-id", config={"apiKey": "ABSKtoken"}, path="providers[2]")
    with pytest.raises(ConfigError) as caught:
        build_provider(spec)
    message = caught.value.render()
    assert "providers[2]" in message and "bedrock:converse:<modelId>" in message


def test_titan_embeddings_one_signed_request_per_text(loopback: LoopbackServer) -> None:
    model = "amazon.titan-embed-text-v2:0"

    def answer(request: Request) -> Reply:
        if not signature_is_valid(request, SECRET_KEY):
            return Reply.json({"message": "bad signature"}, status=403)
        text = request.json["inputText"]
        return Reply.json({"embedding": [float(len(text)), 0.5], "inputTextTokenCount": len(text)})

    loopback.route("POST", f"/model/{quote(model, safe='')}/invoke", answer)
    embedder = build_provider(
        ProviderSpec(id=f"bedrock:embeddings:{model}", config={**FAST, **keys(loopback)})
    )

    async def go() -> Any:
        try:
            return [await embedder.embed([text]) for text in ("ab", "abcd")]  # type: ignore[union-attr]
        finally:
            await embedder.aclose()  # type: ignore[union-attr]

    assert embedder.batch_size == 1  # type: ignore[union-attr]
    results = asyncio.run(go())
    assert [r.vectors.tolist() for r in results] == [[[2.0, 0.5]], [[4.0, 0.5]]]
    assert [r.usage.prompt_tokens for r in results] == [2, 4]
    assert [r.json for r in loopback.requests] == [{"inputText": "ab"}, {"inputText": "abcd"}]


@pytest.mark.parametrize(
    ("config", "words"),
    [
        ({"maxTokens": "many"}, "maxTokens, temperature"),
        ({"additionalModelRequestFields": ["x"]}, "additionalModelRequestFields must be a mapping"),
    ],
)
def test_bad_settings_are_config_errors_before_any_call(config: dict[str, Any], words: str) -> None:
    spec = ProviderSpec(id=f"bedrock:{MODEL}", config={"apiKey": "ABSKtoken", **config}, path="providers[1]")
    with pytest.raises(ConfigError) as caught:
        build_provider(spec)
    assert words in caught.value.render() and "providers[1].config" in caught.value.render()


def test_tools_of_no_known_shape_are_that_rows_error(loopback: LoopbackServer) -> None:
    _, response = complete_once(f"bedrock:{MODEL}", {"endpoint": loopback.url, "apiKey": "t", "tools": ["x"]})
    assert response.error is not None and "tools must be a list of tool definitions" in response.error
    assert loopback.requests == []
