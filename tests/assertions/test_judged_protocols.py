"""The same grader scenarios on the OpenAI, Anthropic and Ollama protocols, end to end through the runner.

Each scenario checks the row's status, score and reason, how many times the grader was called, and
that the API key appears in neither the JSON/JUnit reports nor the log.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from evalh.model import AssertionSpec, ProviderChoice, ProviderSpec, RunOptions, Status, Suite, TestCase
from evalh.reports.writers import write_reports
from evalh.runner.execute import run_suite
from tests.loopback import LoopbackServer, Reply

SECRET = "sk-protocol-secret-0a9b8c7d"


def openai_reply(text: str) -> Reply:
    return Reply.json({"choices": [{"message": {"role": "assistant", "content": text}}], "usage": {}})


def anthropic_reply(text: str) -> Reply:
    return Reply.json({"content": [{"type": "text", "text": text}], "usage": {"input_tokens": 1}})


def ollama_reply(text: str) -> Reply:
    return Reply.json({"message": {"role": "assistant", "content": text}, "done": True})


@dataclass(frozen=True)
class Protocol:
    name: str
    path: str
    reply: Callable[[str], Reply]

    def grader(self, server: LoopbackServer) -> ProviderSpec:
        config = {"apiKey": SECRET, "retryBaseDelayS": 0.01, "maxRetries": 2, "timeout": 0.5}
        if self.name == "openai":
            return ProviderSpec(id="openai:chat:judge", config={**config, "apiBaseUrl": server.url + "/v1"})
        if self.name == "anthropic":
            return ProviderSpec(id="anthropic:messages:judge", config={**config, "apiBaseUrl": server.url})
        return ProviderSpec(id="ollama:chat:judge", config={**config, "apiBaseUrl": server.url})


PROTOCOLS = [
    Protocol("openai", "/v1/chat/completions", openai_reply),
    Protocol("anthropic", "/v1/messages", anthropic_reply),
    Protocol("ollama", "/api/chat", ollama_reply),
]
CLEAN = '{"reason": "Polite and on topic.", "pass": true, "score": 0.8}'
PROSE = 'My assessment follows.\n```json\n{"reason": "Too curt.", "pass": false, "score": 0.3}\n```\nThanks.'


@dataclass(frozen=True)
class Scenario:
    name: str
    replies: Callable[[Protocol], list[Reply]]
    status: Status
    score: float
    reason: str  # the row's reason starts with this
    calls: int


def limited(protocol: Protocol) -> list[Reply]:
    rate = Reply.json({"error": {"message": f"rate limited for {SECRET}"}}, 429, {"Retry-After": "0.1"})
    return [rate, protocol.reply(CLEAN)]


def failing(protocol: Protocol) -> list[Reply]:
    return [Reply.json({"error": {"message": f"server fault near {SECRET}"}}, status=500)]


def slow(protocol: Protocol, delay: float) -> list[Reply]:
    reply = protocol.reply(CLEAN)
    return [Reply(status=reply.status, body=reply.body, headers=reply.headers, delay_s=delay)]


SCENARIOS = [
    Scenario("clean", lambda p: [p.reply(CLEAN)], Status.PASS, 0.8, "All assertions passed", 1),
    Scenario("prose", lambda p: [p.reply(PROSE)], Status.FAIL, 0.3, "llm-rubric: Too curt.", 1),
    Scenario(
        "malformed",
        lambda p: [p.reply("{pass: maybe")],
        Status.ERROR,
        0.0,
        "llm-rubric: Could not extract JSON from llm-rubric response",
        1,
    ),
    Scenario("empty", lambda p: [p.reply("")], Status.ERROR, 0.0, "llm-rubric: the grader", 1),
    Scenario("429", limited, Status.PASS, 0.8, "All assertions passed", 2),
    Scenario("500", failing, Status.ERROR, 0.0, "llm-rubric: the grader", 3),
    Scenario("timeout", lambda p: slow(p, 1.0), Status.ERROR, 0.0, "llm-rubric: the grader", 3),
    Scenario("slow", lambda p: slow(p, 0.3), Status.PASS, 0.8, "All assertions passed", 1),
]


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])
@pytest.mark.parametrize("protocol", PROTOCOLS, ids=[p.name for p in PROTOCOLS])
def test_grader_scenario(
    protocol: Protocol,
    scenario: Scenario,
    loopback: LoopbackServer,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    loopback.script("POST", protocol.path, scenario.replies(protocol))
    spec = AssertionSpec(type="llm-rubric", value="is polite", path="tests[0].assert[0]")
    test = TestCase(index=0, asserts=(spec,), output="Thanks for asking!", has_output=True, path="tests[0]")
    suite = Suite(
        tests=(test,),
        default_provider=ProviderChoice(default=protocol.grader(loopback)),
        evaluate_options=RunOptions(cache=False),
    )
    result = run_suite(suite)
    row = result.results[0]
    assert (row.status, row.score) == (scenario.status, scenario.score), row.reason
    assert row.reason.startswith(scenario.reason), row.reason
    assert len(loopback.requests_to(protocol.path)) == scenario.calls
    details = row.assertions[0].details
    if scenario.status is not Status.ERROR or scenario.name in ("malformed", "empty"):
        assert details["grader_attempts"] == scenario.calls
    if scenario.name == "500":
        assert "HTTP 500" in row.reason and "server fault near [REDACTED]" in row.reason
    if scenario.name == "timeout":
        assert "timed out after 0.5 s" in row.reason
    paths = write_reports(result, [str(tmp_path / "out.json"), str(tmp_path / "out.xml")])
    written = "".join(path.read_text(encoding="utf-8") for path in paths)
    assert SECRET not in written
    assert SECRET not in caplog.text
    assert SECRET not in json.dumps(details, default=str)
