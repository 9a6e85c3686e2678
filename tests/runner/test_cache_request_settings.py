"""The completion cache keys on every setting that shapes a request (issue: four providers differing only
in a header, the organization, the base URL or the API version got one cached answer)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

from typer.testing import CliRunner

from evalh.cli.app import app
from tests.loopback import LoopbackServer, Reply, Request


def answer(request: Request) -> Reply:
    """An answer that tells which request settings reached the server."""
    who = f"{request.path} tenant={request.header('X-Tenant')} org={request.header('OpenAI-Organization')}"
    return Reply.json({"choices": [{"message": {"content": who}, "finish_reason": "stop"}]})


def config(loopback: LoopbackServer) -> str:
    url = loopback.url
    openai = "id: openai:chat:m, config: {apiKey: sk-cache-test-1, maxRetries: 0"
    return textwrap.dedent(
        f"""
        prompts: ["{{{{q}}}}"]
        providers:
          - {{label: tenant-a, {openai}, apiBaseUrl: "{url}/v1", headers: {{X-Tenant: a}}}}}}
          - {{label: tenant-b, {openai}, apiBaseUrl: "{url}/v1", headers: {{X-Tenant: b}}}}}}
          - {{label: org, {openai}, apiBaseUrl: "{url}/v1", headers: {{X-Tenant: a}}, organization: org-2}}}}
          - {{label: base-url, {openai}, apiBaseUrl: "{url}/v2", headers: {{X-Tenant: a}}}}}}
          - {{label: v1, id: "azureopenai:chat:d", config: {{apiBaseUrl: "{url}", apiKey: az-key-123,
              apiVersion: "2024-01-01", maxRetries: 0}}}}
          - {{label: v2, id: "azureopenai:chat:d", config: {{apiBaseUrl: "{url}", apiKey: az-key-123,
              apiVersion: "2024-06-01", maxRetries: 0}}}}
        tests:
          - vars: {{q: hello}}
        """
    )


def outputs(report: Path) -> dict[str, tuple[str, bool]]:
    rows = json.loads(report.read_text(encoding="utf-8"))["results"]["results"]
    return {row["provider"]["label"]: (row["response"]["output"], row["response"]["cached"]) for row in rows}


def test_providers_differing_only_in_request_settings_get_their_own_cached_answers(
    loopback: LoopbackServer, tmp_path: Path
) -> None:
    for path in ("/v1/chat/completions", "/v2/chat/completions", "/openai/deployments/d/chat/completions"):
        loopback.route("POST", path, answer)
    (tmp_path / "evalh.yaml").write_text(config(loopback), encoding="utf-8")
    runs = []
    for name in ("first.json", "second.json"):
        args = [
            "run",
            str(tmp_path / "evalh.yaml"),
            "-o",
            str(tmp_path / name),
            "--no-progress-bar",
            "-j",
            "1",
        ]
        result = CliRunner().invoke(app, args)
        assert result.exit_code == 0, result.output
        runs.append(outputs(tmp_path / name))
    first, second = runs
    assert len(loopback.requests) == 6  # the second run sent nothing
    assert all(cached for _, cached in second.values()) and not any(cached for _, cached in first.values())
    assert {label: text for label, (text, _) in second.items()} == {
        label: text for label, (text, _) in first.items()
    }
    assert second["tenant-a"][0] == "/v1/chat/completions tenant=a org=None"
    assert second["tenant-b"][0] == "/v1/chat/completions tenant=b org=None"
    assert second["org"][0] == "/v1/chat/completions tenant=a org=org-2"
    assert second["base-url"][0] == "/v2/chat/completions tenant=a org=None"
    assert second["v1"][0].endswith("api-version=2024-01-01 tenant=None org=None")
    assert second["v2"][0].endswith("api-version=2024-06-01 tenant=None org=None")
