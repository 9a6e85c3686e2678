"""Missing API keys are found before the first provider call: `evalh run` warns once, naming every
provider in use and its variable, and the rows that need one are ERRORs without a call while the others
run (as in promptfoo); `--strict` stops the run (exit 2) before any call; `evalh validate` only warns. A
provider that needs no key is never flagged, and a key from the config, apiKeyEnvar, .env or --env-file
counts. With --no-table, the reasons rows errored are printed (redacted, escaped)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

import evalh
from evalh.cli.app import app
from tests.loopback import LoopbackServer, Reply

SECRET = "sk-preflight-secret-0123456789"
_KEY_VARS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "AZURE_API_KEY", "AZURE_OPENAI_API_KEY", "HF_TOKEN")


@pytest.fixture(autouse=True)
def _no_keys(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No key of the developer's environment, no ./.env, no base URL override."""
    for name in (*_KEY_VARS, "HF_API_TOKEN", "PREFLIGHT_KEY", "OPENAI_BASE_URL", "OPENAI_API_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("OPENAI_API_HOST", raising=False)
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)
    monkeypatch.chdir(tmp_path)


def _config(tmp_path: Path, config: dict[str, Any], name: str = "evalh.yaml") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(config), encoding="utf-8")
    return path


def _evalh(*args: str | Path) -> Result:
    return CliRunner().invoke(app, [str(arg) for arg in args])


def _answering(loopback: LoopbackServer) -> None:
    """The loopback answers as an OpenAI chat server, an Anthropic one and a plain HTTP endpoint."""
    chat = {"choices": [{"message": {"content": "hello"}, "finish_reason": "stop"}], "usage": {}}
    loopback.route("POST", "/v1/chat/completions", lambda r: Reply.json(chat))
    loopback.route("POST", "/plain", lambda r: Reply.json({"output": "hello"}))


def _keyed_suite(loopback: LoopbackServer) -> dict[str, Any]:
    """Providers under test, a grader and an embedder that each need a key, and one that needs none."""
    return {
        "description": "keys",
        "prompts": ["Say {{ x }}"],
        "providers": [
            {
                "id": "openai:chat:gpt-4o-mini",
                "config": {"apiBaseUrl": loopback.url + "/v1", "apiKeyEnvar": "PREFLIGHT_KEY"},
            },
            {"id": f"{loopback.url}/plain", "config": {"responsePath": "output"}},
        ],
        "tests": [
            {
                "vars": {"x": "hi"},
                "assert": [
                    {
                        "type": "llm-rubric",
                        "value": "is friendly",
                        "provider": {
                            "id": "anthropic:messages:claude-x",
                            "config": {"apiBaseUrl": loopback.url},
                        },
                    },
                    {
                        "type": "similar",
                        "value": "hello",
                        "threshold": 0.5,
                        "provider": "openai:embedding:text-embedding-3-small",
                    },
                ],
            }
        ],
    }


def _keyless_message(message: str) -> None:
    assert "Traceback" not in message
    assert "3 providers in use have no API key" in message
    assert "openai:chat:gpt-4o-mini (providers[0]) needs PREFLIGHT_KEY" in message
    assert (
        "anthropic:messages:claude-x (grader at tests[0].assert[0].provider) needs ANTHROPIC_API_KEY"
        in message
    )
    assert (
        "openai:embedding:text-embedding-3-small (embedder at tests[0].assert[1].provider) needs " in message
    )
    assert "OPENAI_API_KEY" in message and "--env-file" in message
    assert "/plain" not in message  # the http provider needs no key


def test_strict_run_stops_before_any_call_naming_every_missing_key(
    tmp_path: Path, loopback: LoopbackServer
) -> None:
    _answering(loopback)
    config = _config(tmp_path, _keyed_suite(loopback))
    result = _evalh("run", config, "--strict", "--no-table", "--no-progress-bar", "-o", tmp_path / "out.json")
    assert result.exit_code == 2, result.output
    assert loopback.requests == []  # not even the provider that needs no key was called
    assert result.stderr.count("evalh: error:") == 1
    _keyless_message(result.stderr)
    assert not (tmp_path / "out.json").exists()
    assert "No runs" in _evalh("runs", "list").stdout  # nothing recorded either


def test_a_run_warns_once_and_errors_only_the_rows_that_need_a_key(
    tmp_path: Path, loopback: LoopbackServer
) -> None:
    _answering(loopback)
    config = _config(tmp_path, _keyed_suite(loopback))
    result = _evalh("run", config, "--no-table", "--no-progress-bar", "-o", tmp_path / "out.json")
    assert result.exit_code == 1, result.output
    assert result.stderr.count("no API key, so every call") == 1
    _keyless_message(result.stderr)
    # the keyless chat model was never called; the http provider that needs no key was
    assert [request.path for request in loopback.requests] == ["/plain"]
    rows = json.loads((tmp_path / "out.json").read_text())["results"]["results"]
    assert len(rows) == 2 and all(row["failureReason"] == 2 for row in rows)
    keyless_row = next(row for row in rows if row["provider"]["id"] == "openai:chat:gpt-4o-mini")
    assert "PREFLIGHT_KEY" in keyless_row["error"]
    graded_row = next(row for row in rows if row is not keyless_row)  # its grader and embedder lack keys
    assert "ANTHROPIC_API_KEY" in graded_row["error"]


def test_openai_itself_without_a_key_errors_its_rows(tmp_path: Path) -> None:
    config = _config(tmp_path, {"prompts": ["hi"], "providers": ["openai:gpt-4o-mini"], "tests": [{}]})
    result = _evalh("run", config, "--no-table", "--no-progress-bar", "--no-write")
    assert result.exit_code == 1, result.output
    assert "openai:gpt-4o-mini (providers[0]) needs OPENAI_API_KEY" in result.stderr
    assert "point config.apiBaseUrl at an OpenAI-compatible server" in result.stderr
    strict = _evalh("run", config, "--strict", "--no-table", "--no-progress-bar", "--no-write")
    assert strict.exit_code == 2, strict.output


def test_the_python_api_raises_before_any_call_when_strict(loopback: LoopbackServer) -> None:
    _answering(loopback)
    with pytest.raises(evalh.ConfigError, match="needs PREFLIGHT_KEY") as raised:
        evalh.evaluate({**_keyed_suite(loopback), "evaluateOptions": {"strict": True}})
    assert "ANTHROPIC_API_KEY" in str(raised.value) and loopback.requests == []


def test_a_suite_default_grader_is_named_once(tmp_path: Path) -> None:
    tests = [{"vars": {"n": str(i)}, "assert": [{"type": "llm-rubric", "value": "ok"}]} for i in range(30)]
    config = _config(tmp_path, {"prompts": ["{{ n }}"], "providers": ["echo"], "tests": tests})
    result = _evalh("run", config, "--grader", "anthropic:messages:claude-x", "--no-table", "--no-write")
    assert result.exit_code == 1, result.output
    assert result.stderr.count("1 provider in use has no API key") == 1
    assert "anthropic:messages:claude-x (grader at --grader) needs ANTHROPIC_API_KEY" in result.stderr


def test_a_negated_judge_needs_its_grader_key_too(tmp_path: Path) -> None:
    # `not-similar` is looked up by its base type: the type as written named no registry entry
    embedder = "openai:embedding:text-embedding-3-small"
    asserts = [{"type": "not-similar", "value": "rude", "provider": embedder}]
    config = _config(tmp_path, {"prompts": ["hi"], "providers": ["echo"], "tests": [{"assert": asserts}]})
    result = _evalh("run", config, "--strict", "--no-table", "--no-write")
    assert result.exit_code == 2, result.output
    assert f"{embedder} (embedder at tests[0].assert[0].provider)" in result.stderr


def test_a_judge_inside_an_assert_set_needs_its_grader_key_in_the_order_written(tmp_path: Path) -> None:
    # the children of an assert-set are asked after their set and before the set's next sibling; a type's
    # needs are looked up once per type, so a second judge of the same type is still named
    grader = "anthropic:messages:claude-x"
    embedder = "openai:embedding:text-embedding-3-small"
    children = [
        {"type": "contains", "value": "hi"},
        {"type": "llm-rubric", "value": "ok", "provider": grader},
    ]
    asserts = [
        {"type": "assert-set", "assert": children},
        {"type": "similar", "value": "hi", "provider": embedder},
        {"type": "llm-rubric", "value": "ok", "provider": grader},
    ]
    config = _config(tmp_path, {"prompts": ["hi"], "providers": ["echo"], "tests": [{"assert": asserts}]})
    result = _evalh("run", config, "--strict", "--no-table", "--no-write")
    assert result.exit_code == 2, result.output
    named = (
        f"{grader} (grader at tests[0].assert[0].assert[1].provider, grader at tests[0].assert[2].provider)"
    )
    assert named in result.stderr and result.stderr.index(named) < result.stderr.index(embedder)


def test_validate_only_warns_even_strict(tmp_path: Path, loopback: LoopbackServer) -> None:
    config = _config(tmp_path, _keyed_suite(loopback))
    for strict in ((), ("--strict",)):
        result = _evalh("validate", config, *strict)
        assert result.exit_code == 0, result.output
        assert "valid (1 tests" in result.stdout
        assert "evalh: warning:" in result.stderr and "needs PREFLIGHT_KEY" in result.stderr
        assert "with --strict it stops, exit 2, before any call" in result.stderr
    assert loopback.requests == []


def test_providers_that_need_no_key_are_not_flagged(tmp_path: Path, loopback: LoopbackServer) -> None:
    _answering(loopback)
    loopback.route("POST", "/api/chat", lambda r: Reply.json({"message": {"content": "hello"}, "done": True}))
    suite = {
        "prompts": ["Say {{ x }}"],
        "providers": [
            "echo",
            {"id": "openai:chat:local-model", "config": {"apiBaseUrl": loopback.url + "/v1"}},
            {"id": "ollama:chat:llama3.2", "config": {"apiBaseUrl": loopback.url}},
            {"id": f"{loopback.url}/plain", "config": {"responsePath": "output"}},
            "exec:echo hello",
        ],
        "tests": [{"vars": {"x": "hi"}, "assert": [{"type": "similar", "value": "hello", "threshold": 0.1}]}],
    }
    config = _config(tmp_path, suite)
    validated = _evalh("validate", config)
    assert validated.exit_code == 0 and "API key" not in validated.stderr
    result = _evalh("run", config, "--no-table", "--no-progress-bar", "--no-write")
    assert "API key" not in result.stderr, result.stderr
    assert result.exit_code in (0, 1) and len(loopback.requests) == 3


@pytest.mark.parametrize("source", ["config", "env-file", "dotenv", "config env"])
def test_a_key_from_any_source_counts(tmp_path: Path, loopback: LoopbackServer, source: str) -> None:
    _answering(loopback)
    suite = _keyed_suite(loopback)
    suite["tests"][0]["assert"] = []  # the provider under test only
    provider_config = suite["providers"][0]["config"]
    args: list[str | Path] = []
    if source == "config":
        provider_config["apiKey"] = SECRET
    elif source == "env-file":
        (tmp_path / "ci.env").write_text(f"PREFLIGHT_KEY={SECRET}\n")
        args = ["--env-file", tmp_path / "ci.env"]
    elif source == "dotenv":
        (tmp_path / ".env").write_text(f"PREFLIGHT_KEY={SECRET}\n")
    else:
        suite["env"] = {"PREFLIGHT_KEY": SECRET}
    config = _config(tmp_path, suite)
    result = _evalh("run", config, "--no-table", "--no-progress-bar", "--no-write", *args)
    assert result.exit_code == 0, result.output
    sent = loopback.requests_to("/v1/chat/completions")
    assert len(sent) == 1 and sent[0].header("Authorization") == f"Bearer {SECRET}"


def test_no_table_prints_why_rows_errored(tmp_path: Path, loopback: LoopbackServer) -> None:
    loopback.route(
        "POST", "/plain", lambda r: Reply.json({"error": f"token {SECRET} expired \x1b[31m"}, status=401)
    )
    loopback.route("POST", "/down", lambda r: Reply.json({"error": "overloaded"}, status=400))
    suite = {
        "prompts": ["Say {{ x }}"],
        "providers": [
            {
                "id": f"{loopback.url}/plain",
                "config": {"headers": {"Authorization": f"Bearer {SECRET}"}, "maxRetries": 0},
            },
            {"id": f"{loopback.url}/down", "config": {"maxRetries": 0}},
        ],
        "tests": [{"vars": {"x": str(i)}} for i in range(3)],
    }
    config = _config(tmp_path, suite)
    result = _evalh("run", config, "--no-table", "--no-progress-bar", "--no-write")
    assert result.exit_code == 1, result.output
    lines = [line for line in result.stdout.splitlines() if "rows errored" in line]
    assert len(lines) == 1, result.stdout
    line = lines[0]
    assert line.startswith("6 rows errored: '") and line.count("' x3") == 2
    assert "HTTP 401" in line and "HTTP 400" in line
    assert SECRET not in result.stdout and "\x1b" not in result.stdout and "\\x1b" in line
    shown = _evalh("run", config, "--no-progress-bar", "--no-write")  # the table shows them instead
    assert "rows errored" not in shown.stdout


def test_many_distinct_reasons_are_counted(tmp_path: Path, loopback: LoopbackServer) -> None:
    loopback.route("POST", "/plain", lambda r: Reply.json({"error": r.json["n"]}, status=400))
    suite = {
        "prompts": ["{{ n }}"],
        "providers": [{"id": f"{loopback.url}/plain", "config": {"maxRetries": 0, "body": {"n": "{{ n }}"}}}],
        "tests": [{"vars": {"n": f"reason {i}"}} for i in range(5)],
    }
    result = _evalh("run", _config(tmp_path, suite), "--no-table", "--no-progress-bar", "--no-write")
    line = next(line for line in result.stdout.splitlines() if "rows errored" in line)
    assert line.startswith("5 rows errored: ") and line.endswith("; and 2 other reasons x2")


def test_a_judge_without_any_grader_uses_promptfoos_default_and_only_its_row_errors(tmp_path: Path) -> None:
    """promptfoo's configs often leave the grader to promptfoo's default: the config runs, the judged row
    is an ERROR naming the default grader's key, the other row passes, and the report is written."""
    tests = [
        {"vars": {"n": "Ada"}, "assert": [{"type": "llm-rubric", "value": "greets"}]},
        {"vars": {"n": "Bob"}, "assert": [{"type": "contains", "value": "Bob"}]},
    ]
    config = _config(tmp_path, {"prompts": ["Hi {{ n }}"], "providers": ["echo"], "tests": tests})
    result = _evalh("run", config, "--no-table", "--no-progress-bar", "-o", tmp_path / "out.json")
    assert result.exit_code == 1, result.output
    assert "promptfoo's default grader, openai:chat:gpt-5.6-sol" in result.stderr
    rows = json.loads((tmp_path / "out.json").read_text())["results"]["results"]
    judged, plain = sorted(rows, key=lambda row: row["vars"]["n"])
    assert judged["failureReason"] == 2 and "OPENAI_API_KEY" in judged["error"]
    assert plain["success"] is True
