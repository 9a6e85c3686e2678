"""A distinct secret planted in every place a config can hold one never leaves evalh: not in any report
format, not on stdout or stderr with --verbose, not in the cache nor the run store, in no form (plain,
base64, Basic).

The loopback server echoes every header and body it receives into its answers and errors, as a careless
server would, so each secret reaches evalh's outputs through the model's reply as well."""

from __future__ import annotations

import base64
import json
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from evalh.cli.app import app
from evalh.reports.markdown import escape_inline
from tests.loopback import LoopbackServer, Reply, Request

SECRETS = {
    "api_key": "sk-planted-apikey-1111",
    "envar_key": "sk-planted-envar-2222",
    "url_password": "planted-urlpass-3333",
    "url_query": "planted-query-4444",
    "query_param": "planted-qparam-5555",
    "env_auth": "planted-envauth-6666",
    "x_api_key": "planted-xapikey-7777",
    "cookie": "planted-cookie-8888",
    "body_field": "planted-body-9999",
    "session_token": "planted-session-0000",
    "judge_key": "sk-planted-judge-1212",
    "process_env": "planted-procenv-1313",  # a secret-named variable of the process, read by a template
}
USER = "planted-user"
REPORTS = ("out.json", "out.jsonl", "out.yaml", "out.txt", "out.xml", "out.csv", "out.html", "out.md")


def echo(request: Request) -> Reply:
    """The request's headers, path and body as the model's answer."""
    seen = {"path": request.path, "headers": request.headers, "body": request.body.decode()}
    content = json.dumps(seen)
    return Reply.json({"choices": [{"message": {"content": content}, "finish_reason": "stop"}], **seen})


def refuse(request: Request) -> Reply:
    return Reply.json({"error": {"message": f"denied: {json.dumps(request.headers)}"}}, status=401)


def config(url: str) -> str:
    host = url.removeprefix("http://")
    web = f"http://{USER}:{SECRETS['url_password']}@{host}/echo?token={SECRETS['url_query']}&lang=en"
    return textwrap.dedent(
        f"""
        description: planted secrets
        env:
          SERVICE_PASSWORD: {SECRETS["env_auth"]}
          CUSTOM_KEY_VAR: {SECRETS["envar_key"]}
        prompts: ["Answer {{{{q}}}}"]
        providers:
          - id: openai:chat:m
            label: keyed
            config: {{apiBaseUrl: "{url}/v1", apiKey: {SECRETS["api_key"]}, maxRetries: 0}}
          - id: openai:chat:m
            label: envar
            config: {{apiBaseUrl: "{url}/v1", apiKeyEnvar: CUSTOM_KEY_VAR, maxRetries: 0,
                      headers: {{X-Env-Auth: "{{{{ env.SERVICE_PASSWORD }}}}"}}}}
          - id: "{web}"
            label: web
            config:
              cache: true
              maxRetries: 0
              headers: {{X-Api-Key: {SECRETS["x_api_key"]}, Cookie: "session={SECRETS["cookie"]}"}}
              queryParams: {{api_key: {SECRETS["query_param"]}}}
              body: {{prompt: "{{{{prompt}}}}", client_secret: {SECRETS["body_field"]},
                     ctx: "{{{{ env.APP_ACCESS_TOKEN }}}}"}}
          - id: openai:chat:m
            label: refused
            config: {{apiBaseUrl: "{url}/refuse", apiKey: {SECRETS["api_key"]}, maxRetries: 0}}
        defaultTest:
          options:
            sessionToken: {SECRETS["session_token"]}
        tests:
          - vars: {{q: plainly, note: "key {SECRETS["api_key"]} via {web}"}}
            assert:
              - {{type: contains, value: plainly}}
              - {{type: not-contains, value: "{SECRETS["judge_key"]}"}}
              - type: llm-rubric
                value: is fine
                provider:
                  id: openai:chat:judge
                  config: {{apiBaseUrl: "{url}/v1", apiKey: {SECRETS["judge_key"]}, maxRetries: 0}}
        """
    )


def forms(secret: str) -> list[str]:
    """The secret as it could leak: plain, base64 (padded or not), URL-safe base64."""
    raw = secret.encode()
    encoded = [base64.b64encode(raw).decode(), base64.urlsafe_b64encode(raw).decode()]
    return [secret, *encoded, *(e.rstrip("=") for e in encoded)]


def leaks(data: bytes) -> list[str]:
    basic = base64.b64encode(f"{USER}:{SECRETS['url_password']}".encode()).decode()
    plain = [*(form for s in SECRETS.values() for form in forms(s)), basic, basic.rstrip("=")]
    candidates = [*plain, *(escape_inline(form) for form in plain)]  # Markdown's escaped form too
    return [candidate for candidate in candidates if candidate.encode() in data]


@pytest.mark.parametrize("run", ["first", "cached"])
def test_no_planted_secret_reaches_any_output(
    loopback: LoopbackServer, tmp_path: Path, run: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("APP_ACCESS_TOKEN", SECRETS["process_env"])
    for path in ("/v1/chat/completions", "/echo"):
        loopback.route("POST", path, echo)
    loopback.route("POST", "/refuse/chat/completions", refuse)
    (tmp_path / "evalh.yaml").write_text(config(loopback.url), encoding="utf-8")
    args = ["run", str(tmp_path / "evalh.yaml"), "--verbose", "--no-progress-bar"]
    for name in REPORTS:
        args += ["-o", str(tmp_path / name)]
    runner = CliRunner()
    result = runner.invoke(app, args)
    if run == "cached":
        result = runner.invoke(app, args)
    assert result.exit_code == 1, result.output  # the refused provider errors
    # The secrets really went out: the server saw each of them (and the Basic header of the URL's user).
    sent = json.dumps([(r.path, r.headers, r.body.decode()) for r in loopback.requests])
    assert all(
        secret in sent for key, secret in SECRETS.items() if key not in ("session_token", "url_password")
    )
    assert "Basic " + base64.b64encode(f"{USER}:{SECRETS['url_password']}".encode()).decode() in sent
    report = json.loads((tmp_path / "out.json").read_text(encoding="utf-8"))
    assert "[REDACTED]" in report["results"]["results"][0]["response"]["output"]
    assert report["results"]["results"][0]["testCase"]["options"]["sessionToken"] == "[REDACTED]"
    # a secret in a test's vars and in an assertion's value, in each of the test's rows (one per provider)
    for row in report["results"]["results"]:
        assert row["vars"]["note"].startswith("key [REDACTED] via http://")
        assert row["testCase"]["assert"][1]["value"] == "[REDACTED]"
    outputs = {
        "stdout": result.stdout.encode(),
        "stderr": result.stderr.encode(),
        **{name: (tmp_path / name).read_bytes() for name in REPORTS},
        **{f"cache/{p.name}": p.read_bytes() for p in (tmp_path / "evalh-cache").rglob("*") if p.is_file()},
        **{f"store/{p.name}": p.read_bytes() for p in (tmp_path / "evalh-home").rglob("*") if p.is_file()},
    }
    assert "cache/cache.sqlite3" in outputs and "refused" in result.stdout
    assert b"[REDACTED]" in outputs["store/runs.sqlite3"]  # the run was recorded, its secrets redacted
    assert {name: leaks(data) for name, data in outputs.items() if leaks(data)} == {}


def refuse_web(request: Request) -> Reply:
    """A 401 quoting the request line and every header: the URL's query key, X-Api-Key and the Basic
    header of the URL's user and password all come back in the error body."""
    denied = f"denied {request.path}: {json.dumps(request.headers)}"
    return Reply.json({"error": {"message": denied}}, status=401)


def failing_provider_config(url: str) -> str:
    host = url.removeprefix("http://")
    web = f"http://{USER}:{SECRETS['url_password']}@{host}/refuse-web?token={SECRETS['url_query']}&lang=en"
    script = f"exec:{sys.executable} fails.py"
    return textwrap.dedent(
        f"""
        prompts: ["Answer {{{{q}}}}"]
        providers:
          - id: "{web}"
            label: web-refused
            config:
              maxRetries: 0
              headers: {{X-Api-Key: {SECRETS["x_api_key"]}}}
              queryParams: {{api_key: {SECRETS["query_param"]}}}
              body: {{prompt: "{{{{prompt}}}}"}}
          - id: "{script}"
            label: exec-refused
            config: {{apiKey: {SECRETS["api_key"]}}}
        tests:
          - vars: {{q: plainly}}
        """
    )


def test_no_planted_secret_in_a_provider_error_reaches_any_output(
    loopback: LoopbackServer, tmp_path: Path
) -> None:
    """Errors are redacted where they are made (the HTTP layer) and where they are written (reports,
    console, error output, the run store), not in between: an error no HTTP layer saw (a script's stderr
    quoting its options) is caught at the writers."""
    loopback.route("POST", "/refuse-web", refuse_web)
    (tmp_path / "fails.py").write_text(
        "import sys\nsys.stderr.write('rejected options ' + sys.argv[2])\nsys.exit(3)\n", encoding="utf-8"
    )
    (tmp_path / "evalh.yaml").write_text(failing_provider_config(loopback.url), encoding="utf-8")
    args = ["run", str(tmp_path / "evalh.yaml"), "--verbose", "--no-progress-bar", "--no-cache"]
    result = CliRunner().invoke(app, [*args, "-o", str(tmp_path / "out.json")])
    assert result.exit_code == 1, result.output
    sent = json.dumps([(r.path, r.headers) for r in loopback.requests])
    basic = base64.b64encode(f"{USER}:{SECRETS['url_password']}".encode()).decode()
    assert all(SECRETS[key] in sent for key in ("url_query", "query_param", "x_api_key")) and basic in sent
    rows = json.loads((tmp_path / "out.json").read_text(encoding="utf-8"))["results"]["results"]
    errors = {row["provider"]["label"]: row["error"] for row in rows}
    assert "HTTP 401" in errors["web-refused"] and "[REDACTED]" in errors["web-refused"]
    assert "exited with code 3" in errors["exec-refused"] and "[REDACTED]" in errors["exec-refused"]
    outputs = {
        "stdout": result.stdout.encode(),
        "stderr": result.stderr.encode(),
        "out.json": (tmp_path / "out.json").read_bytes(),
        **{f"store/{p.name}": p.read_bytes() for p in (tmp_path / "evalh-home").rglob("*") if p.is_file()},
    }
    assert b"[REDACTED]" in outputs["store/runs.sqlite3"]  # the errors were recorded, redacted
    assert {name: leaks(data) for name, data in outputs.items() if leaks(data)} == {}


def run_with_every_report(tmp_path: Path) -> tuple[Result, dict[str, Any]]:
    """``evalh run`` of tmp_path's evalh.yaml writing every report format (exit 0), and its first row."""
    args = ["run", str(tmp_path / "evalh.yaml"), "--no-progress-bar"]
    for report in REPORTS:
        args += ["-o", str(tmp_path / report)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    return result, json.loads((tmp_path / "out.json").read_text(encoding="utf-8"))["results"]["results"][0]


def planted_in(tmp_path: Path, stdout: str) -> list[str]:
    """The console, reports, cache and store files holding "PLANTED"."""
    written = [p for folder in ("evalh-cache", "evalh-home") for p in (tmp_path / folder).rglob("*")]
    files = [p.name for p in written if p.is_file() and b"PLANTED" in p.read_bytes()]
    reports = [r for r in REPORTS if "PLANTED" in (tmp_path / r).read_text(encoding="utf-8")]
    return [*files, *reports, *(["stdout"] if "PLANTED" in stdout else [])]


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("tests.yaml", "- vars: {q: one, password: PLANTED-yaml}\n  assert: [{type: equals, value: one}]\n"),
        ("tests.jsonl", '{"vars": {"q": "one", "api_key": "PLANTED-jsonl-key-2"}}\n'),
        ("tests.csv", "q,client_secret,__expected\none,PLANTED-csv-secret-3,contains:one\n"),
    ],
)
def test_a_tests_files_secret_named_var_is_redacted_as_an_inline_one_is(
    tmp_path: Path, name: str, text: str
) -> None:
    # the config's own secrets were registered before anything could quote them, a tests file's were
    # never: its `password` var reached every report, the run store and a digest in the cache folder
    (tmp_path / name).write_text(text, encoding="utf-8")
    (tmp_path / "evalh.yaml").write_text(
        f"prompts: ['{{{{q}}}}']\nproviders: [echo]\ntests: file://{name}\n", encoding="utf-8"
    )
    result, row = run_with_every_report(tmp_path)
    assert [value for key, value in row["vars"].items() if key != "q"] == ["[REDACTED]"]
    assert planted_in(tmp_path, result.stdout) == []


def test_a_process_secret_written_literally_into_a_config_is_redacted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # no provider reads APP_SERVICE_TOKEN and no template names it: its value, pasted into a var whose
    # name says nothing, reached every report and the run store
    monkeypatch.setenv("APP_SERVICE_TOKEN", "PLANTED-procenv-literal")
    monkeypatch.setenv("PWD", str(tmp_path))  # a directory, though "pwd" names a password in a config
    (tmp_path / "evalh.yaml").write_text(
        "prompts: ['{{q}} {{note}}']\nproviders: [echo]\n"
        f"tests:\n  - vars: {{q: one, note: PLANTED-procenv-literal, where: '{tmp_path}'}}\n"
        "    assert: [{type: contains, value: one}]\n",
        encoding="utf-8",
    )
    result, row = run_with_every_report(tmp_path)
    assert row["vars"] == {"q": "one", "note": "[REDACTED]", "where": str(tmp_path)}
    assert row["response"]["output"] == "one [REDACTED]"
    assert planted_in(tmp_path, result.stdout) == []


def test_the_environment_s_words_paths_and_user_names_are_not_taken_for_keys(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # registered values are replaced in outputs before assertions read them: a desktop's session name, CI's
    # database password "postgres" or a URL's user name taken for keys turned this passing test into a failure
    for name, value in {
        "DESKTOP_SESSION": "ubuntu",
        "POSTGRES_PASSWORD": "postgres",
        "DATABASE_URL": "postgres://postgres@localhost:5432/app",
        "SSH_AUTH_SOCK": "/tmp/ssh-agent-folder/agent.1",
        "GOOGLE_APPLICATION_CREDENTIALS": "/tmp/credentials-file.json",
    }.items():
        monkeypatch.setenv(name, value)
    (tmp_path / "evalh.yaml").write_text(
        "prompts: ['Run it on {{os}} with {{db}} via /tmp/ssh-agent-folder/agent.1']\nproviders: [echo]\n"
        "tests:\n  - vars: {os: ubuntu, db: postgresql}\n"
        "    assert: [{type: contains, value: ubuntu}, {type: icontains, value: PostgreSQL}]\n",
        encoding="utf-8",
    )
    result = CliRunner().invoke(app, ["run", str(tmp_path / "evalh.yaml"), "-o", str(tmp_path / "out.json")])
    assert result.exit_code == 0, result.output
    row = json.loads((tmp_path / "out.json").read_text(encoding="utf-8"))["results"]["results"][0]
    assert row["response"]["output"] == "Run it on ubuntu with postgresql via /tmp/ssh-agent-folder/agent.1"
