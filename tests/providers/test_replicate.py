"""replicate:<owner>/<model>[:version] against a loopback server speaking Replicate's predictions API."""

from __future__ import annotations

from typing import Any

import pytest

from evalh.errors import ConfigError
from evalh.model import ProviderSpec
from evalh.providers.registry import build_provider, missing_key
from tests.loopback import LoopbackServer, Reply
from tests.providers.chat_helpers import SECRET, complete_once

MODEL_PATH = "/v1/models/meta/meta-llama-3-8b-instruct/predictions"
FAST_POLLS = {"pollIntervalMs": 1}


@pytest.fixture(autouse=True)
def _no_token(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (
        "REPLICATE_API_TOKEN",
        "REPLICATE_API_KEY",
        "REPLICATE_TEMPERATURE",
        "REPLICATE_SYSTEM_PROMPT",
    ):
        monkeypatch.delenv(name, raising=False)


def prediction(status: str, output: Any = None, **extra: Any) -> Reply:
    return Reply.json({"id": "p1", "status": status, "output": output, **extra}, status=201)


def test_a_prediction_that_finishes_within_the_wait(
    loopback: LoopbackServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REPLICATE_API_TOKEN", SECRET)
    monkeypatch.setenv("REPLICATE_TEMPERATURE", "0.2")  # promptfoo's variable, when the config has none
    loopback.route("POST", MODEL_PATH, lambda r: prediction("succeeded", ["Hel", "lo"]))
    config = {"apiBaseUrl": loopback.url + "/v1", "max_new_tokens": 20, "timeout": 30}
    _, response = complete_once("replicate:meta/meta-llama-3-8b-instruct", config, "Say hi")
    assert response.error is None and response.output == "Hello"  # a streamed list is joined
    request = loopback.requests[0]
    assert request.header("Authorization") == f"Bearer {SECRET}" and request.header("Prefer") == "wait=60"
    assert request.json == {"input": {"max_new_tokens": 20, "temperature": 0.2, "prompt": "Say hi"}}


def test_a_pinned_version_and_a_chat_prompt(loopback: LoopbackServer) -> None:
    loopback.route("POST", "/v1/predictions", lambda r: prediction("succeeded", "Bonjour"))
    messages = [{"role": "system", "content": "Answer in French."}, {"role": "user", "content": "Hello"}]
    config = {"apiBaseUrl": loopback.url + "/v1", "apiKey": SECRET, "prompt": {"prefix": "[INST]"}}
    _, response = complete_once("replicate:owner/model:5c7d5dc6dd8bf75c", config, messages)
    assert response.output == "Bonjour"
    assert loopback.requests[0].json == {
        "version": "5c7d5dc6dd8bf75c",
        "input": {"system_prompt": "Answer in French.", "prompt": "Hello"},
    }


def test_a_pending_prediction_is_polled_until_it_succeeds(loopback: LoopbackServer) -> None:
    loopback.route("POST", MODEL_PATH, lambda r: prediction("starting"))
    loopback.script(
        "GET", "/v1/predictions/p1", [prediction("processing"), prediction("succeeded", "done", error=None)]
    )
    config = {"apiBaseUrl": loopback.url + "/v1", "apiKey": SECRET, **FAST_POLLS}
    _, response = complete_once("replicate:meta/meta-llama-3-8b-instruct", config, "x")
    assert response.output == "done" and response.usage.requests == 3
    assert [r.method for r in loopback.requests] == ["POST", "GET", "GET"]
    assert all(r.header("Authorization") == f"Bearer {SECRET}" for r in loopback.requests)


def test_polling_is_bounded(loopback: LoopbackServer) -> None:
    loopback.route("POST", MODEL_PATH, lambda r: prediction("starting"))
    loopback.route("GET", "/v1/predictions/p1", lambda r: prediction("processing"))
    config = {"apiBaseUrl": loopback.url + "/v1", "apiKey": SECRET, "maxPolls": 3, **FAST_POLLS}
    _, response = complete_once("replicate:meta/meta-llama-3-8b-instruct", config, "x")
    assert response.error is not None and "still processing after 3 polls" in response.error
    assert len(loopback.requests_to("/v1/predictions/p1")) == 3


def test_failed_predictions_and_odd_outputs_are_errors(loopback: LoopbackServer) -> None:
    config = {"apiBaseUrl": loopback.url + "/v1", "apiKey": SECRET}
    loopback.route("POST", MODEL_PATH, lambda r: prediction("failed", error="CUDA out of memory"))
    _, failed = complete_once("replicate:meta/meta-llama-3-8b-instruct", config)
    assert failed.error is not None and "prediction failed: CUDA out of memory" in failed.error
    loopback.reset()
    loopback.route("POST", MODEL_PATH, lambda r: prediction("succeeded", {"image": "x.png"}))
    _, odd = complete_once("replicate:meta/meta-llama-3-8b-instruct", config)
    assert odd.error is not None and "unsupported output" in odd.error


def test_rate_limits_are_retried_and_errors_redacted(loopback: LoopbackServer) -> None:
    throttled = Reply.json({"detail": "throttled"}, status=429, headers={"Retry-After": "0"})
    loopback.script("POST", MODEL_PATH, [throttled, prediction("succeeded", "ok")])
    config = {"apiBaseUrl": loopback.url + "/v1", "apiKey": SECRET, "retryBaseDelayS": 0.01}
    _, response = complete_once("replicate:meta/meta-llama-3-8b-instruct", config)
    assert response.output == "ok" and response.metadata["attempts"] == 2
    loopback.reset()
    loopback.route("POST", MODEL_PATH, lambda r: Reply.json({"detail": f"bad token {SECRET}"}, status=401))
    _, refused = complete_once("replicate:meta/meta-llama-3-8b-instruct", config)
    assert refused.error is not None and "HTTP 401" in refused.error and SECRET not in refused.error


def test_a_missing_token_and_a_bad_poll_setting() -> None:
    found = missing_key(ProviderSpec(id="replicate:meta/m"))
    assert found is not None and found.envars == ("REPLICATE_API_TOKEN", "REPLICATE_API_KEY")
    with pytest.raises(ConfigError, match=r"providers\[0\]\.config\.maxPolls: config\.maxPolls must be"):
        build_provider(ProviderSpec(id="replicate:meta/m", config={"maxPolls": 0}, path="providers[0]"))
