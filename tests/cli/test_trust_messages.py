"""Issue 23, what a config author sees: a non-string apiKey refused where it is written, control
characters located, a calibration label located in its file, no traceback for a user error under
--verbose, and an http provider's header templates rendered with the test's vars (promptfoo's rule)
against a real loopback server, secrets still redacted."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from evalh.cli.app import app
from tests.loopback import LoopbackServer, Reply


def _write(path: Path, text: str) -> Path:
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def _invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.output


@pytest.mark.parametrize(
    ("provider", "line", "path"),
    [
        ("{id: openai:chat:gpt-4o-mini, config: {apiKey: [a, b]}}", 3, "providers[0].config.apiKey"),
        ("{anthropic:messages:claude-3-5-haiku-latest: {config: {apiKey: 5}}}", 3, "config.apiKey"),
        ("{id: azure:chat:dep, config: {apiHost: x.example.com, apiKey: {k: v}}}", 3, "config.apiKey"),
        ("{id: ollama:chat:llama3, config: {apiKey: true}}", 3, "providers[0].config.apiKey"),
        ("{id: http, config: {url: 'http://127.0.0.1:9/x', apiKey: 12}}", 3, "providers[0].config.apiKey"),
    ],
)
def test_a_non_string_api_key_is_refused_where_it_is_written(
    tmp_path: Path, provider: str, line: int, path: str
) -> None:
    config = _write(
        tmp_path / "c.yaml", f"prompts: [hi]\nproviders:\n  - {provider}\ntests: [{{vars: {{}}}}]\n"
    )
    code, output = _invoke("validate", str(config))
    assert code == 2
    assert f"c.yaml:{line}:" in output and path in output and "apiKey: must be a string" in output


def test_a_grader_api_key_is_checked_as_the_grader_is_written(tmp_path: Path) -> None:
    config = _write(
        tmp_path / "c.yaml",
        """\
        defaultTest:
          options:
            provider: {id: openai:chat:gpt-4o-mini, config: {apiKey: 7}}
        tests:
          - output: x
            assert: [{type: llm-rubric, value: ok}]
        """,
    )
    code, output = _invoke("validate", str(config))
    assert code == 2
    assert "c.yaml:3:" in output and "defaultTest.options.provider.config.apiKey: must be a string" in output
    assert "unknown key 'id'" not in output  # not read as an {embedding, text} map


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ('prompts: ["hi\x01 there"]\ntests: [{vars: {}}]\n', "c.yaml:1:14"),
        ('tests:\n  - output: "a\x07b"\n', "c.yaml:2:15"),
    ],
)
def test_a_control_character_is_located_by_line_and_column(tmp_path: Path, text: str, where: str) -> None:
    config = tmp_path / "c.yaml"
    config.write_text(text, encoding="utf-8")
    code, output = _invoke("validate", str(config))
    assert code == 2 and f"{where}: invalid YAML" in output and "must be escaped" in output


def test_a_control_character_in_a_tests_file_is_located_in_that_file(tmp_path: Path) -> None:
    (tmp_path / "t.yaml").write_text('- vars: {q: "ok"}\n- vars: {q: "a\x1b"}\n', encoding="utf-8")
    config = _write(tmp_path / "c.yaml", "prompts: ['{{q}}']\nproviders: [echo]\ntests: file://t.yaml\n")
    code, output = _invoke("validate", str(config))
    assert code == 2 and "t.yaml:2:15: invalid YAML" in output and "U+001B" in output


def test_verbose_shows_no_traceback_for_a_config_error(tmp_path: Path) -> None:
    config = _write(tmp_path / "c.yaml", "tests:\n  - output: x\n    assert: [{type: equal, value: x}]\n")
    code, output = _invoke("validate", "--verbose", str(config))
    assert code == 2 and "Did you mean 'equals'" in output
    assert "Traceback" not in output


CALIBRATE = """\
providers: [echo]
prompts: ["{{q}}"]
tests:
  - vars: {q: a}
    metadata: {label: pass}
    assert: [{type: similar, value: a, threshold: 0.5}]
  - vars: {q: b}
    metadata: {label: fail}
    assert: [{type: similar, value: a, threshold: 0.5}]
  - vars: {q: c}
    metadata:
      label: maybe
    assert: [{type: similar, value: a, threshold: 0.5}]
"""


def test_calibrate_locates_a_bad_label_in_its_file(tmp_path: Path) -> None:
    config = _write(tmp_path / "c.yaml", CALIBRATE)
    code, output = _invoke("calibrate", str(config))
    assert code == 2
    assert "c.yaml:12:7 tests[2].metadata.label: a calibration label is pass or fail (got 'maybe')" in output
    assert "[2][2]" not in output


def test_calibrate_locates_a_bad_default_label_in_default_test(tmp_path: Path) -> None:
    text = CALIBRATE.replace("tests:\n", "defaultTest:\n  metadata: {label: perhaps}\ntests:\n", 1)
    text = text.replace("label: maybe", "label: fail")
    text = text.replace("    metadata: {label: pass}\n", "", 1)
    config = _write(tmp_path / "c.yaml", text)
    code, output = _invoke("calibrate", str(config))
    assert code == 2 and "c.yaml:4:14 defaultTest.metadata.label" in output and "'perhaps'" in output


def test_calibrate_locates_a_bad_label_in_a_csv_row(tmp_path: Path) -> None:
    (tmp_path / "t.csv").write_text("q,__expected,__metadata:label\na,similar:a,pass\nb,similar:a,nope\n")
    config = _write(tmp_path / "c.yaml", "providers: [echo]\nprompts: ['{{q}}']\ntests: file://t.csv\n")
    code, output = _invoke("calibrate", str(config))
    assert code == 2 and "t.csv:3 tests[1].metadata.label" in output


TOKEN = "tok-7c1d-very-secret"


def test_http_header_templates_are_rendered_with_the_tests_vars(
    tmp_path: Path, loopback: LoopbackServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    loopback.route("POST", "/chat", lambda request: Reply.json({"answer": "ok"}))
    monkeypatch.setenv("APP_TOKEN", TOKEN)
    config = _write(
        tmp_path / "c.yaml",
        f"""\
        prompts: ["{{{{q}}}}"]
        providers:
          - id: http
            config:
              url: {loopback.url}/chat
              headers:
                X-User: "{{{{ user }}}}"
                X-Static: plain
                Authorization: "Bearer {{{{ env.APP_TOKEN }}}}"
              responsePath: answer
        tests:
          - vars: {{q: one, user: ada}}
          - vars: {{q: two, user: bob}}
        """,
    )
    report = tmp_path / "r.json"
    code, output = _invoke("run", str(config), "--no-write", "--no-table", "-o", str(report))
    assert code == 0, output
    received = sorted(
        (r.header("X-User"), r.header("X-Static"), r.header("Authorization")) for r in loopback.requests
    )
    assert received == [("ada", "plain", f"Bearer {TOKEN}"), ("bob", "plain", f"Bearer {TOKEN}")]
    assert TOKEN not in report.read_text(encoding="utf-8") and TOKEN not in output


def _one_header_app(tmp_path: Path, loopback: LoopbackServer, header: str, test_vars: str) -> Path:
    """A config whose http provider sends ``header`` (``X-Tag: "{{ x }}"``) to the loopback app."""
    loopback.route("POST", "/chat", lambda request: Reply.json({"answer": "ok"}))
    provider = f'{{id: http, config: {{url: "{loopback.url}/chat", headers: {{{header}}}}}}}'
    text = f"prompts: [hi]\nproviders:\n  - {provider}\ntests: [{{vars: {test_vars}}}]\n"
    return _write(tmp_path / "c.yaml", text)


def test_an_env_value_in_a_header_is_data_never_a_template(
    tmp_path: Path, loopback: LoopbackServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("APP_TAG", "{{ 7*7 }}")
    config = _one_header_app(tmp_path, loopback, 'X-Tag: "{{ env.APP_TAG }}"', "{}")
    code, output = _invoke("run", str(config), "--no-write", "--no-table")
    assert code == 0, output
    assert loopback.requests[0].header("X-Tag") == "{{ 7*7 }}"


def test_a_var_with_a_line_break_cannot_add_a_header(tmp_path: Path, loopback: LoopbackServer) -> None:
    config = _one_header_app(tmp_path, loopback, 'X-User: "{{ user }}"', '{user: "ada\\r\\nX-Admin: yes"}')
    report = tmp_path / "r.json"
    code, _output = _invoke("run", str(config), "--no-write", "--no-table", "-o", str(report))
    assert code == 1 and loopback.requests == []
    row = json.loads(report.read_text(encoding="utf-8"))["results"]["results"][0]
    assert "header X-User renders to a value with a line break" in row["error"]
