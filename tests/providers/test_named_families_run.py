"""A whole `evalh eval` with a Cohere provider under test, graded by a Groq judge and a Replicate judge and
compared by a Mistral embedder, all on one loopback server speaking each protocol: the row passes, each
request carries its own family's key, and no key reaches the report or the terminal."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from evalh.cli.app import app
from tests.loopback import LoopbackServer, Reply, Request

KEYS = {
    "COHERE_API_KEY": "co-run-key-0123456789",
    "GROQ_API_KEY": "gsk_run_key_0123456789",
    "REPLICATE_API_TOKEN": "r8_run_key_0123456789",
    "MISTRAL_API_KEY": "mistral-run-key-0123456789",
}
VERDICT = json.dumps({"reason": "names Paris", "pass": True, "score": 1})


def _same_vector_for_each_text(request: Request) -> Reply:
    texts = request.json["input"]
    return Reply.json({"data": [{"index": i, "embedding": [1.0, 0.0]} for i in range(len(texts))]})


def test_family_providers_under_test_and_as_graders(
    tmp_path: Path, loopback: LoopbackServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in KEYS.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-never-sent-0123456789")
    loopback.route("POST", "/cohere/v1/chat", lambda r: Reply.json({"text": "The capital is Paris."}))
    groq = {"choices": [{"message": {"role": "assistant", "content": VERDICT}, "finish_reason": "stop"}]}
    loopback.route("POST", "/groq/v1/chat/completions", lambda r: Reply.json(groq))
    loopback.route(
        "POST",
        "/replicate/v1/models/meta/meta-llama-3-8b-instruct/predictions",
        lambda r: Reply.json({"id": "p1", "status": "succeeded", "output": [VERDICT]}, status=201),
    )
    loopback.route("POST", "/mistral/v1/embeddings", _same_vector_for_each_text)
    url = loopback.url
    config = tmp_path / "promptfooconfig.yaml"
    config.write_text(
        textwrap.dedent(
            f"""\
            prompts: ["What is the capital of {{{{country}}}}?"]
            providers:
              - id: cohere:command-r-plus
                config: {{apiBaseUrl: "{url}/cohere/v1", temperature: 0}}
            defaultTest:
              options:
                provider:
                  id: groq:llama-3.1-8b-instant
                  config: {{apiBaseUrl: "{url}/groq/v1"}}
            tests:
              - vars: {{country: France}}
                assert:
                  - type: llm-rubric
                    value: names the capital of France
                  - type: llm-rubric
                    value: names the capital of France
                    provider:
                      id: replicate:meta/meta-llama-3-8b-instruct
                      config: {{apiBaseUrl: "{url}/replicate/v1"}}
                  - type: similar
                    value: Paris
                    threshold: 0.9
                    provider:
                      id: mistral:embedding:mistral-embed
                      config: {{apiBaseUrl: "{url}/mistral/v1"}}
            """
        ),
        encoding="utf-8",
    )
    report = tmp_path / "out.json"
    result = CliRunner().invoke(
        app, ["eval", "-c", str(config), "-o", str(report), "--no-cache", "--no-table"]
    )
    assert result.exit_code == 0, result.output
    text = report.read_text(encoding="utf-8")
    row = json.loads(text)["results"]["results"][0]
    assert row["success"] is True and row["response"]["output"] == "The capital is Paris."
    assert [c["pass"] for c in row["gradingResult"]["componentResults"]] == [True, True, True]
    sent = {request.path.split("/")[1]: request.header("Authorization") for request in loopback.requests}
    assert sent == {
        "cohere": f"Bearer {KEYS['COHERE_API_KEY']}",
        "groq": f"Bearer {KEYS['GROQ_API_KEY']}",
        "replicate": f"Bearer {KEYS['REPLICATE_API_TOKEN']}",
        "mistral": f"Bearer {KEYS['MISTRAL_API_KEY']}",
    }
    for secret in KEYS.values():
        assert secret not in text and secret not in result.output
