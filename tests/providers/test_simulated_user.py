"""promptfoo:simulated-user through whole runs: a loopback chat server plays the user model, another the
agent under test (and a third the judge), so each turn is a real HTTP request."""

from __future__ import annotations

import json
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from evalh.cli.app import app
from evalh.model import Prompt, ProviderSpec, Suite, TestCase
from evalh.runner.sharding import run_fingerprint
from tests.loopback import LoopbackServer, Reply, Request

USER = "/user/v1/chat/completions"
AGENT = "/agent/v1/chat/completions"
JUDGE = "/judge/v1/chat/completions"


def chat(content: str, tokens: tuple[int, int] = (0, 0)) -> Reply:
    prompt, completion = tokens
    return Reply.json(
        {
            "id": "c",
            "object": "chat.completion",
            "model": "m",
            "choices": [
                {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}
            ],
            "usage": {
                "prompt_tokens": prompt,
                "completion_tokens": completion,
                "total_tokens": prompt + completion,
            },
        }
    )


def scripted_user(lines: list[str]) -> Callable[[Request], Reply]:
    """The user model says ``lines[n]`` once the agent has answered n times."""

    def answer(request: Request) -> Reply:
        answered = sum(1 for m in request.json["messages"] if m["role"] == "user")  # flipped: the agent's
        return chat(lines[min(answered, len(lines) - 1)])

    return answer


def echo_agent(request: Request) -> Reply:
    return chat(f"agent: {request.json['messages'][-1]['content']}", tokens=(10, 4))


def requests_to(loopback: LoopbackServer, path: str) -> list[Any]:
    return [r.json for r in loopback.requests if r.path == path]


def provider(loopback: LoopbackServer, base: str) -> str:
    return json.dumps(
        {"id": "openai:chat:m", "config": {"apiBaseUrl": loopback.url + base, "apiKey": "sk-x"}}
    )


def run(tmp_path: Path, config: str, *flags: str) -> tuple[int, list[dict[str, Any]], str]:
    (tmp_path / "evalh.yaml").write_text(textwrap.dedent(config), encoding="utf-8")
    out = tmp_path / "out.json"
    flags = flags or ("--no-cache",)
    result = CliRunner().invoke(
        app, ["run", str(tmp_path / "evalh.yaml"), "-o", str(out), "--no-table", *flags]
    )
    rows = json.loads(out.read_text())["results"]["results"] if out.exists() else []
    return result.exit_code, rows, result.stderr


def config(loopback: LoopbackServer, simulated: str, tests: str, extra: str = "") -> str:
    return f"""
prompts: ["You are the travel agent of {{{{company}}}}."]
providers: [{provider(loopback, "/agent/v1")}]
defaultTest:
  provider: {simulated}
{extra}
tests:
{tests}
"""


def test_a_conversation_runs_turn_by_turn_until_the_user_stops(
    loopback: LoopbackServer, tmp_path: Path
) -> None:
    loopback.route("POST", USER, scripted_user(["I want to fly to Oslo", "On May 20", "Great ###STOP###"]))
    loopback.route("POST", AGENT, echo_agent)
    simulated = json.dumps(
        {
            "id": "promptfoo:simulated-user",
            "config": {
                "maxTurns": 5,
                "instructions": "You are {{name}}.",
                "userProvider": json.loads(provider(loopback, "/user/v1")),
            },
        }
    )
    tests = """
  - vars: {company: Fly, name: "Mia {{ '{{' }}not a template{{ '}}' }}"}
    assert: [{type: contains, value: "Assistant: agent: On May 20"}]
"""
    code, rows, stderr = run(tmp_path, config(loopback, simulated, tests))
    assert code == 0, stderr
    row = rows[0]
    assert row["response"]["output"] == (
        "User: I want to fly to Oslo\n---\nAssistant: agent: I want to fly to Oslo\n---\n"
        "User: On May 20\n---\nAssistant: agent: On May 20"
    )
    assert row["success"] is True
    # the agent's two turns add up; the user model's calls are not the agent's usage
    assert row["response"]["tokenUsage"]["total"] == 28 and row["response"]["tokenUsage"]["numRequests"] == 2
    agent_calls = requests_to(loopback, AGENT)
    assert [m["role"] for m in agent_calls[1]["messages"]] == ["system", "user", "assistant", "user"]
    assert agent_calls[1]["messages"][0]["content"] == "You are the travel agent of Fly."
    user_calls = requests_to(loopback, USER)
    assert len(user_calls) == 3  # the third says ###STOP###: it never reaches the agent
    system = user_calls[0]["messages"][0]
    assert system["role"] == "system" and "You are Mia {{not a template}}." in system["content"]
    # to the user model, the roles are flipped: its own messages are the assistant's
    assert [m["role"] for m in user_calls[1]["messages"][1:]] == ["assistant", "user"]
    assert user_calls[1]["messages"][2]["content"] == "agent: I want to fly to Oslo"


def test_max_turns_bounds_a_user_who_never_stops(loopback: LoopbackServer, tmp_path: Path) -> None:
    loopback.route("POST", USER, scripted_user(["more", "more", "more", "more", "more"]))
    loopback.route("POST", AGENT, echo_agent)
    simulated = json.dumps({"id": "promptfoo:simulated-user", "config": {"maxTurns": 3}})
    grader = f"  options: {{provider: {provider(loopback, '/user/v1')}}}"  # the grader plays the user
    tests = "  - vars: {company: Fly, instructions: keep asking}"
    code, rows, stderr = run(tmp_path, config(loopback, simulated, tests, grader))
    assert code == 0, stderr
    assert len(requests_to(loopback, AGENT)) == 3 and len(requests_to(loopback, USER)) == 3
    assert rows[0]["response"]["output"].count("User: more") == 3
    instructions = requests_to(loopback, USER)[0]["messages"][0]["content"]
    assert "keep asking" in instructions  # the default instructions are {{instructions}}


def test_initial_messages_are_templated_and_answered_first(loopback: LoopbackServer, tmp_path: Path) -> None:
    loopback.route("POST", USER, scripted_user(["###STOP###"]))
    loopback.route("POST", AGENT, echo_agent)
    simulated = json.dumps(
        {
            "id": "promptfoo:simulated-user",
            "config": {
                "maxTurns": 2,
                "userProvider": json.loads(provider(loopback, "/user/v1")),
                "initialMessages": [
                    {"role": "user", "content": "I picked a flight"},
                    {"role": "assistant", "content": "How will you pay?"},
                    {"role": "user", "content": "With {{payment}}"},
                ],
            },
        }
    )
    tests = """
  - vars: {company: Fly, payment: PayPal}
  - vars:
      company: Fly
      initialMessages: [{role: user, content: "Literal {{payment}}"}]
      payment: cash
"""
    code, rows, stderr = run(tmp_path, config(loopback, simulated, tests))
    assert code == 0, stderr
    outputs = sorted(row["response"]["output"] for row in rows)
    assert outputs == [
        "User: I picked a flight\n---\nAssistant: How will you pay?\n---\nUser: With PayPal\n---\n"
        "Assistant: agent: With PayPal",
        # vars.initialMessages wins over the config's, and is data: never rendered
        "User: Literal {{payment}}\n---\nAssistant: agent: Literal {{payment}}",
    ]


def test_an_agent_error_is_the_rows_error_with_its_turn(loopback: LoopbackServer, tmp_path: Path) -> None:
    loopback.route("POST", USER, scripted_user(["hello", "and then?", "bye"]))
    answers = iter([chat("first answer"), Reply.json({"error": {"message": "agent exploded"}}, status=400)])
    loopback.route("POST", AGENT, lambda request: next(answers))
    simulated = json.dumps(
        {
            "id": "promptfoo:simulated-user",
            "config": {"userProvider": json.loads(provider(loopback, "/user/v1"))},
        }
    )
    code, rows, stderr = run(tmp_path, config(loopback, simulated, "  - vars: {company: Fly}"))
    assert code == 1, stderr
    assert rows[0]["failureReason"] == 2  # ERROR
    assert "failed at turn 2 of the conversation" in rows[0]["error"] and "agent exploded" in rows[0]["error"]


def test_a_user_model_error_is_the_rows_error(loopback: LoopbackServer, tmp_path: Path) -> None:
    loopback.route(
        "POST", USER, lambda request: Reply.json({"error": {"message": "no user today"}}, status=400)
    )
    loopback.route("POST", AGENT, echo_agent)
    simulated = json.dumps(
        {
            "id": "promptfoo:simulated-user",
            "config": {"userProvider": json.loads(provider(loopback, "/user/v1"))},
        }
    )
    _, rows, _ = run(tmp_path, config(loopback, simulated, "  - vars: {company: Fly}"))
    assert rows[0]["failureReason"] == 2
    assert "the simulated user (openai:chat:m) failed at turn 1" in rows[0]["error"]
    assert requests_to(loopback, AGENT) == []


def test_a_judge_grades_the_whole_conversation(loopback: LoopbackServer, tmp_path: Path) -> None:
    loopback.route("POST", USER, scripted_user(["book it", "###STOP###"]))
    loopback.route("POST", AGENT, echo_agent)
    loopback.route("POST", JUDGE, lambda request: chat('{"pass": true, "score": 1, "reason": "booked"}'))
    simulated = json.dumps(
        {
            "id": "promptfoo:simulated-user",
            "config": {"userProvider": json.loads(provider(loopback, "/user/v1"))},
        }
    )
    tests = f"""
  - vars: {{company: Fly}}
    assert: [{{type: llm-rubric, value: the flight was booked, provider: {provider(loopback, "/judge/v1")}}}]
"""
    code, rows, stderr = run(tmp_path, config(loopback, simulated, tests))
    assert code == 0, stderr
    assert rows[0]["success"] is True
    judged = json.dumps(requests_to(loopback, JUDGE)[0])
    assert "User: book it\\n---\\nAssistant: agent: book it" in judged


@pytest.mark.parametrize(
    ("simulated", "message"),
    [
        ('"promptfoo:simulated-user"', "promptfoo:simulated-user needs a model to play the user"),
        ('"openai:chat:gpt-4o"', "evalh takes only promptfoo:simulated-user there"),
        ('{id: "promptfoo:simulated-user", config: {maxTurns: -1}}', "maxTurns must be a whole number"),
        (
            '{id: "promptfoo:simulated-user", config: '
            "{userProvider: echo, initialMessages: [{role: bot, content: x}]}}",
            "initialMessages[0]: a message must be",
        ),
        ('{id: "promptfoo:simulated-user", config: {userProvider: opneai:chat:m}}', "unknown provider id"),
        (
            '{id: "promptfoo:simulated-user", config: {userProvider: echo, instructions: "You are {{ name"}}',
            "config.instructions",
        ),
    ],
)
def test_config_mistakes_are_located_errors(
    loopback: LoopbackServer, tmp_path: Path, simulated: str, message: str
) -> None:
    code, rows, stderr = run(tmp_path, config(loopback, simulated, "  - vars: {company: Fly}"))
    assert code == 2 and rows == []
    assert "defaultTest.provider" in stderr and message in " ".join(stderr.split())
    assert "Traceback" not in stderr


def test_in_providers_it_is_a_row_error_saying_where_it_goes(tmp_path: Path) -> None:
    code, rows, _ = run(
        tmp_path, 'prompts: ["hi"]\nproviders: [promptfoo:simulated-user]\ntests: [{vars: {}}]\n'
    )
    assert code == 1 and rows[0]["failureReason"] == 2
    assert "runs only as a test's (or defaultTest's) provider" in rows[0]["error"]


def test_a_tests_own_provider_wins_over_the_default_tests(loopback: LoopbackServer, tmp_path: Path) -> None:
    loopback.route("POST", USER, scripted_user(["again"]))
    loopback.route("POST", AGENT, echo_agent)
    user = json.loads(provider(loopback, "/user/v1"))
    default = json.dumps({"id": "promptfoo:simulated-user", "config": {"maxTurns": 1, "userProvider": user}})
    own = json.dumps({"id": "promptfoo:simulated-user", "config": {"maxTurns": 2, "userProvider": user}})
    tests = f"  - vars: {{company: Fly}}\n  - vars: {{company: Own}}\n    provider: {own}"
    code, rows, stderr = run(tmp_path, config(loopback, default, tests))
    assert code == 0, stderr
    turns = {row["vars"]["company"]: row["response"]["output"].count("User: again") for row in rows}
    assert turns == {"Fly": 1, "Own": 2}
    bad = "  - vars: {company: Fly}\n  - vars: {company: Own}\n    provider: echo"
    code, _, stderr = run(tmp_path, config(loopback, default, bad))
    assert code == 2 and "tests[1].provider" in stderr and "got 'echo'" in stderr


@pytest.mark.parametrize(("session", "roles"), [(None, ["system", "user"]), ("s-1", ["user"])])
def test_stateful_sends_only_the_newest_message_once_there_is_a_session(
    loopback: LoopbackServer, tmp_path: Path, session: str | None, roles: list[str]
) -> None:
    loopback.route("POST", USER, scripted_user(["one", "two", "###STOP###"]))
    loopback.route("POST", AGENT, echo_agent)
    simulated = json.dumps(
        {
            "id": "promptfoo:simulated-user",
            "config": {"stateful": True, "userProvider": json.loads(provider(loopback, "/user/v1"))},
        }
    )
    variables = "{company: Fly}" if session is None else f"{{company: Fly, sessionId: {session}}}"
    code, _, stderr = run(tmp_path, config(loopback, simulated, f"  - vars: {variables}"))
    assert code == 0, stderr
    sent = requests_to(loopback, AGENT)
    assert [[m["role"] for m in request["messages"]] for request in sent] == [roles, roles]
    assert sent[1]["messages"][-1]["content"] == "two"


def test_a_user_model_without_its_key_errors_its_rows_and_strict_stops_before_any_call(
    loopback: LoopbackServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    loopback.route("POST", AGENT, echo_agent)
    simulated = '{id: "promptfoo:simulated-user", config: {userProvider: "openai:chat:gpt-4o-mini"}}'
    tests = "  - vars: {company: Fly}"
    code, rows, stderr = run(tmp_path, config(loopback, simulated, tests), "--no-cache", "--strict")
    assert code == 2 and rows == [] and loopback.requests == []
    said = "openai:chat:gpt-4o-mini (user model of defaultTest.provider) needs OPENAI_API_KEY"
    assert said in " ".join(stderr.split())
    code, rows, stderr = run(tmp_path, config(loopback, simulated, tests))
    assert code == 1 and said in " ".join(stderr.split())
    assert [row["failureReason"] for row in rows] == [2] and "OPENAI_API_KEY" in rows[0]["error"]


def test_initial_messages_from_a_file_and_a_conversation_replayed_from_the_cache(
    loopback: LoopbackServer, tmp_path: Path
) -> None:
    loopback.route("POST", USER, scripted_user(["x", "Thanks ###STOP###"]))
    loopback.route("POST", AGENT, echo_agent)
    (tmp_path / "history.yaml").write_text("- {role: user, content: 'Hi, I am {{name}}'}\n", encoding="utf-8")
    simulated = json.dumps(
        {
            "id": "promptfoo:simulated-user",
            "config": {
                "initialMessages": "file://history.yaml",
                "userProvider": json.loads(provider(loopback, "/user/v1")),
            },
        }
    )
    suite = config(loopback, simulated, "  - vars: {company: Fly, name: Ada}")
    code, rows, stderr = run(tmp_path, suite, "--no-progress-bar")
    assert code == 0, stderr
    expected = "User: Hi, I am Ada\n---\nAssistant: agent: Hi, I am Ada"
    assert rows[0]["response"]["output"] == expected
    calls = len(loopback.requests)
    assert calls == 2  # the agent answers the initial message, then the user stops
    code, rows, stderr = run(tmp_path, suite, "--no-progress-bar")
    assert code == 0, stderr
    assert rows[0]["response"]["output"] == expected and len(loopback.requests) == calls


def test_shards_of_one_run_share_the_simulated_users_config() -> None:
    def fingerprint(turns: int) -> str:
        user = ProviderSpec(id="openai:chat:m", config={"apiKey": "sk-user-secret-1234567890"})
        stand_in = ProviderSpec(
            id="promptfoo:simulated-user", config={"maxTurns": turns, "userProvider": user}
        )
        test = TestCase(index=0, vars={"company": "Fly"}, stand_in=stand_in)
        suite = Suite(
            tests=(test,), prompts=(Prompt(raw="hi", label="hi"),), providers=(ProviderSpec(id="echo"),)
        )
        return run_fingerprint(suite, 1)

    assert fingerprint(3) == fingerprint(3) != fingerprint(4)
