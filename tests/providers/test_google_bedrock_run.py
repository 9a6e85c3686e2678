"""A whole `evalh eval` with a Gemini provider under test and a Bedrock grader, both on loopback servers
speaking their protocols: the row passes, and neither credential reaches the report or the terminal."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from urllib.parse import quote

import pytest
from typer.testing import CliRunner

from evalh.cli.app import app
from tests.loopback import LoopbackServer, Reply, Request
from tests.providers.test_bedrock import KEY_ID, SECRET_KEY, signature_is_valid

GOOGLE_KEY = "AIzaGbedRunKey0123456789abcdef"
GRADER = "us.anthropic.claude-3-5-haiku-20241022-v1:0"


def _grade(request: Request) -> Reply:
    if not signature_is_valid(request, SECRET_KEY):
        return Reply.json({"message": "The request signature we calculated does not match"}, status=403)
    verdict = json.dumps({"reason": "names Paris", "pass": True, "score": 1})
    message = {"role": "assistant", "content": [{"text": verdict}]}
    usage = {"inputTokens": 40, "outputTokens": 12, "totalTokens": 52}
    return Reply.json({"output": {"message": message}, "stopReason": "end_turn", "usage": usage})


def test_gemini_under_test_graded_by_bedrock(
    tmp_path: Path, loopback: LoopbackServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("AWS_BEARER_TOKEN_BEDROCK", "AWS_SESSION_TOKEN", "GOOGLE_API_HOST", "AWS_BEDROCK_REGION"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("GOOGLE_API_KEY", GOOGLE_KEY)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", KEY_ID)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET_KEY)
    answer = {"candidates": [{"content": {"parts": [{"text": "The capital is Paris."}]}}]}
    loopback.route("POST", "/v1beta/models/gemini-2.5-flash:generateContent", lambda r: Reply.json(answer))
    loopback.route("POST", f"/model/{quote(GRADER, safe='')}/converse", _grade)
    config = tmp_path / "promptfooconfig.yaml"
    config.write_text(
        textwrap.dedent(
            f"""\
            prompts: ["What is the capital of {{{{country}}}}?"]
            providers:
              - id: google:gemini-2.5-flash
                config: {{apiBaseUrl: "{loopback.url}"}}
            defaultTest:
              options:
                provider:
                  id: bedrock:converse:{GRADER}
                  config: {{endpoint: "{loopback.url}"}}
            tests:
              - vars: {{country: France}}
                assert:
                  - type: icontains
                    value: paris
                  - type: llm-rubric
                    value: names the capital of France
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
    assert [c["pass"] for c in row["gradingResult"]["componentResults"]] == [True, True]
    for secret in (GOOGLE_KEY, SECRET_KEY):
        assert secret not in text and secret not in result.output
