"""A provider reply over the cap (EVALH_MAX_REPLY_MB) is an ERROR row with a clear reason, read no further
than the cap; the other rows go on. Real loopback server, real programs."""

from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from evalh.cli.app import app
from evalh.common.limits import MAX_REPLY_ENV
from tests.cli.test_cli_habits import rows_of, write
from tests.loopback import LoopbackServer, Reply, Request
from tests.providers.chat_helpers import complete_once

CAP = 10_000  # bytes: EVALH_MAX_REPLY_MB below
TOO_LARGE = "larger than 10000 bytes, the cap on one provider reply"


@pytest.fixture(autouse=True)
def _small_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(MAX_REPLY_ENV, str(CAP / (1024 * 1024)))


def _chat(text: str) -> dict[str, object]:
    return {"choices": [{"message": {"role": "assistant", "content": text}}]}


def _evalh(*args: str) -> Result:
    return CliRunner().invoke(app, list(args))


def test_an_http_reply_over_the_cap_is_an_error(loopback: LoopbackServer) -> None:
    loopback.route("POST", "/v1/chat/completions", lambda _r: Reply.json(_chat("x" * CAP)))
    _, response = complete_once("openai:chat:m", {"apiBaseUrl": loopback.url + "/v1", "apiKey": "k"})
    assert response.output is None and response.error is not None
    assert "the reply to POST http://127.0.0.1" in response.error and TOO_LARGE in response.error
    assert "EVALH_MAX_REPLY_MB" in response.error


def test_a_reply_under_the_cap_is_read(loopback: LoopbackServer) -> None:
    loopback.route("POST", "/v1/chat/completions", lambda _r: Reply.json(_chat("x" * (CAP - 200))))
    _, response = complete_once("openai:chat:m", {"apiBaseUrl": loopback.url + "/v1", "apiKey": "k"})
    assert response.error is None and response.output == "x" * (CAP - 200)


def test_a_compressed_reply_is_capped_by_its_decoded_size(loopback: LoopbackServer) -> None:
    bomb = gzip.compress(json.dumps(_chat("x" * 50 * CAP)).encode())
    assert len(bomb) < CAP  # small on the wire, 50 times the cap once decoded
    headers = {"Content-Type": "application/json", "Content-Encoding": "gzip"}
    loopback.route("POST", "/v1/chat/completions", lambda _r: Reply(body=bomb, headers=headers))
    _, response = complete_once("openai:chat:m", {"apiBaseUrl": loopback.url + "/v1", "apiKey": "k"})
    assert response.error is not None and TOO_LARGE in response.error
    small = gzip.compress(json.dumps(_chat("fine")).encode())
    loopback.route("POST", "/v1/chat/completions", lambda _r: Reply(body=small, headers=headers))
    assert (
        complete_once("openai:chat:m", {"apiBaseUrl": loopback.url + "/v1", "apiKey": "k"})[1].output
        == "fine"
    )


def test_in_a_run_the_row_over_the_cap_is_an_error_and_the_others_go_on(
    loopback: LoopbackServer, tmp_path: Path
) -> None:
    def answer(request: Request) -> Reply:
        prompt = request.json["messages"][-1]["content"]
        return Reply.json(_chat("y" * 3 * CAP if prompt == "big" else prompt.upper()))

    loopback.route("POST", "/v1/chat/completions", answer)
    config = write(
        tmp_path / "evalh.yaml",
        f"""
        prompts: ["{{{{q}}}}"]
        providers: [{{id: "openai:chat:m", config: {{apiBaseUrl: "{loopback.url}/v1", apiKey: k}}}}]
        tests:
          - vars: {{q: hello}}
            assert: [{{type: equals, value: HELLO}}]
          - vars: {{q: big}}
          - vars: {{q: bye}}
            assert: [{{type: equals, value: BYE}}]
        """,
    )
    report = tmp_path / "r.json"
    result = _evalh("run", str(config), "-o", str(report), "--no-cache")
    assert result.exit_code == 1, result.output
    rows = rows_of(report)
    assert [row["failureReason"] for row in rows] == [0, 2, 0]
    assert TOO_LARGE in str(rows[1]["error"])
    assert "y" * 100 not in report.read_text(encoding="utf-8")  # the reply is not in the report


def test_an_exec_program_printing_past_the_cap_is_an_error_row(tmp_path: Path) -> None:
    script = write(
        tmp_path / "app.py",
        f"""
        import sys, time
        prompt = sys.argv[1]
        if prompt == "big":
            sys.stdout.write("z" * {3 * CAP})
            sys.stdout.flush()
            time.sleep(600)  # evalh stops it at the cap, without waiting for its end
        print(prompt.upper())
        """,
    )
    config = write(
        tmp_path / "evalh.yaml",
        f"""
        prompts: ["{{{{q}}}}"]
        providers: [{{id: "exec:{sys.executable} {script.name}", config: {{timeout: 60}}}}]
        tests:
          - vars: {{q: hello}}
            assert: [{{type: equals, value: HELLO}}]
          - vars: {{q: big}}
        """,
    )
    report = tmp_path / "r.json"
    result = _evalh("run", str(config), "-o", str(report))
    assert result.exit_code == 1, result.output
    rows = rows_of(report)
    assert [row["failureReason"] for row in rows] == [0, 2]
    assert f"exec: {sys.executable} wrote more than 10000 bytes, the cap on one provider reply" in str(
        rows[1]["error"]
    )


def test_a_python_provider_returning_past_the_cap_is_an_error_row(tmp_path: Path) -> None:
    write(
        tmp_path / "model.py",
        f"""
        def call_api(prompt, options, context):
            return "w" * {3 * CAP} if prompt == "big" else {{"output": prompt.upper()}}
        """,
    )
    config = write(
        tmp_path / "evalh.yaml",
        """
        prompts: ["{{q}}"]
        providers: ["python:model.py"]
        tests:
          - vars: {q: big}
          - vars: {q: hello}
            assert: [{type: equals, value: HELLO}]
        """,
    )
    report = tmp_path / "r.json"
    result = _evalh("run", str(config), "-o", str(report))
    assert result.exit_code == 1, result.output
    rows = rows_of(report)
    assert [row["failureReason"] for row in rows] == [2, 0]
    assert "model.py returned more than 10000 bytes, the cap on one provider reply" in str(rows[0]["error"])


def test_a_bad_cap_is_a_config_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(MAX_REPLY_ENV, "lots")
    config = write(
        tmp_path / "evalh.yaml", 'prompts: ["{{q}}"]\nproviders: ["exec:true"]\ntests: [{vars: {q: a}}]\n'
    )
    result = _evalh("run", str(config))
    assert result.exit_code == 2, result.output
    assert "EVALH_MAX_REPLY_MB='lots' is not a size in MiB" in result.stderr
    assert "Traceback" not in result.stderr
