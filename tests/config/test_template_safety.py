"""Templates are sandboxed and each value is rendered once: wherever a template comes from (a CSV or
JSONL cell, a prompt, an assertion value, a metric, a rubric prompt, an HTTP body), a payload that would
run a shell command is refused with a located error and runs nothing; env and --var values are data."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from evalh.cli.app import app
from evalh.common.notices import warnings_to
from evalh.config.load import load_suite
from evalh.errors import EXIT_CONFIG, TemplateError
from evalh.model import ProviderSpec
from evalh.providers.base import CallContext
from evalh.providers.registry import build_provider
from evalh.runner.plan import plan_jobs
from tests.assertions.judge_helpers import judge, openai_grader, openai_text
from tests.config.conftest import WriteFiles
from tests.loopback import LoopbackServer, Reply
from tests.providers.chat_helpers import complete_once


def payload(marker: Path) -> str:
    """What a hostile cell would hold: on an unsandboxed Jinja it creates ``marker``."""
    return "{{ cycler.__init__.__globals__.os.popen('touch " + str(marker) + "').read() }}"


def hidden_payload(marker: Path) -> str:
    """The same, with the attribute names in variables, so only the sandbox at render time stops it."""
    return "{{ ((cycler | attr(a)) | attr(b))['os'].popen('touch " + str(marker) + "').read() }}"


HIDDEN_VARS = {"a": "__init__", "b": "__globals__"}


@pytest.fixture
def marker(tmp_path: Path) -> Path:
    return tmp_path / "pwned"


def test_a_csv_cell_cannot_run_code(project: WriteFiles, marker: Path) -> None:
    config = project(
        "prompts: ['{{q}}']\nproviders: [echo]\ntests: file://tests.csv\n",
        {"tests.csv": f'q\n"{payload(marker)}"\n'},
    )
    with pytest.raises(TemplateError) as caught:
        load_suite(config)
    assert "tests.csv:2" in str(caught.value) and "'__globals__'" in str(caught.value)
    assert not marker.exists()


def test_a_jsonl_cell_and_an_expected_cell_cannot_run_code(project: WriteFiles, marker: Path) -> None:
    line = {"vars": {"q": hidden_payload(marker), **HIDDEN_VARS}}
    config = project(
        "prompts: ['{{q}}']\nproviders: [echo]\ntests: [file://tests.jsonl, file://expected.csv]\n",
        {
            "tests.jsonl": json.dumps(line) + "\n",
            "expected.csv": f'q,__expected\nhi,"contains:{payload(marker)}"\n',
        },
    )
    with pytest.raises(TemplateError) as caught:
        load_suite(config)
    message = str(caught.value)
    assert (
        "tests.jsonl:1 tests[0].vars.q" in message and "expected.csv:2:2 tests[1].assert[0].value" in message
    )
    assert message.count("was refused") == 2
    assert not marker.exists()


def test_a_prompt_cannot_run_code_and_validation_finds_it(project: WriteFiles, marker: Path) -> None:
    config = project(f'prompts: ["{payload(marker)}"]\nproviders: [echo]\ntests: [{{vars: {{q: x}}}}]\n')
    with pytest.raises(TemplateError, match=r"evalh.yaml:1:\d+ prompts\[0\]"):
        load_suite(config)  # found when the prompt is parsed: nothing is rendered
    hidden = project(
        f'prompts: ["{hidden_payload(marker)}"]\nproviders: [echo]\ntests: [{{vars: {HIDDEN_VARS}}}]\n'
    )
    suite = load_suite(hidden)
    with pytest.raises(TemplateError, match=r"prompts\[0\] \(for tests\[0\]\).*refused"):
        plan_jobs(suite)
    assert not marker.exists()


@pytest.mark.parametrize("field", ["value", "metric"])
def test_an_assertion_value_or_metric_cannot_run_code(project: WriteFiles, marker: Path, field: str) -> None:
    config = project(
        f"prompts: ['hi']\nproviders: [echo]\ntests:\n  - vars: {json.dumps(HIDDEN_VARS)}\n"
        f"    assert: [{{type: contains, {'' if field == 'value' else 'value: x, '}"
        f"{field}: {json.dumps(hidden_payload(marker))}}}]\n"
    )
    with pytest.raises(TemplateError, match=rf"tests\[0\]\.assert\[0\]\.{field}: template .* was refused"):
        load_suite(config)
    assert not marker.exists()


def test_a_rubric_prompt_cannot_run_code(project: WriteFiles, loopback: LoopbackServer, marker: Path) -> None:
    config = project(
        "prompts: ['hi']\nproviders: [echo]\ntests:\n  - assert:\n"
        f"      - {{type: llm-rubric, value: polite, rubricPrompt: {json.dumps(payload(marker))}}}\n"
    )
    with pytest.raises(TemplateError, match=r"assert\[0\]\.rubricPrompt: template .* was refused"):
        load_suite(config)  # evalh validate reports it before any grader call
    result, _ = judge(
        "llm-rubric",
        openai_grader(loopback),
        value="v",
        rubric_prompt=hidden_payload(marker),
        vars=HIDDEN_VARS,
    )
    assert result.error and "refused" in result.reason
    assert loopback.requests == [] and not marker.exists()


def test_a_model_output_is_never_rendered(loopback: LoopbackServer, marker: Path) -> None:
    loopback.route(
        "POST", "/v1/chat/completions", lambda r: openai_text('{"pass": true, "score": 1, "reason": "ok"}')
    )
    output = payload(marker) + " {{ 7*7 }}"
    judge("llm-rubric", openai_grader(loopback), value="polite", output=output)
    sent = json.dumps(loopback.requests[0].json)
    # The output went out verbatim (not "49"; a bare "49" check also matched pytest's tmp dir numbers).
    assert json.dumps(output)[1:-1] in sent
    assert not marker.exists()


def test_an_http_body_cannot_run_code(loopback: LoopbackServer, marker: Path) -> None:
    loopback.route("POST", "/chat", lambda r: Reply.json({"ok": True}))
    spec = ProviderSpec(id="http", config={"url": loopback.url + "/chat", "body": {"q": payload(marker)}})
    with pytest.raises(TemplateError, match=r"config\.body: template .* was refused"):
        build_provider(spec)  # checked when the provider is built, before the first call
    config = {"url": loopback.url + "/chat", "body": {"q": hidden_payload(marker)}}
    _, response = complete_once("http", config, "hi", CallContext(vars=HIDDEN_VARS))
    assert response.error is not None and "could not render the request" in response.error
    assert loopback.requests == [] and not marker.exists()


@pytest.mark.parametrize("command", ["validate", "run"])
def test_the_cli_refuses_a_hostile_cell_with_a_located_error(
    project: WriteFiles, marker: Path, command: str
) -> None:
    config = project(
        "prompts: ['{{q}}']\nproviders: [echo]\ntests: file://tests.csv\n",
        {"tests.csv": f'q\n"{payload(marker)}"\n'},
    )
    result = CliRunner().invoke(app, [command, str(config)])
    assert result.exit_code == EXIT_CONFIG
    assert "tests.csv:2" in result.output and "sandboxed" in result.output
    assert "Traceback" not in result.output
    assert not marker.exists()


def test_env_and_cli_values_reach_the_prompt_literally(
    project: WriteFiles, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("EVALH_TEST_PR_TITLE", "{{ 7*7 }} {% if true %}x{% endif %}")
    config = project(
        "env: {FROM_CONFIG: '{{ env.EVALH_TEST_PR_TITLE }}'}\n"
        "prompts: ['{{ env.EVALH_TEST_PR_TITLE }} | {{ env.FROM_CONFIG }} | {{ q }} | {{ r }}']\n"
        "providers: [echo]\ntests: [{vars: {r: 'r={{ q }}'}}]\n"
    )
    report, page = tmp_path / "out.json", tmp_path / "out.html"
    args = ["run", str(config), "--var", "q={{ 7*7 }}", "-o", str(report), "-o", str(page), "--no-cache"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    row = json.loads(report.read_text(encoding="utf-8"))["results"]["results"][0]
    literal = "{{ 7*7 }} {% if true %}x{% endif %}"
    assert row["response"]["output"] == f"{literal} | {literal} | {{{{ 7*7 }}}} | r={{{{ 7*7 }}}}"
    assert literal in page.read_text(encoding="utf-8")  # the HTML report shows outputs as text too


def test_a_cli_var_is_data_but_config_vars_still_reference_each_other(project: WriteFiles) -> None:
    config = project(
        "prompts: ['{{ a }}/{{ b }}/{{ c }}']\nproviders: [echo]\n"
        "tests: [{vars: {b: 'b-{{ a }}', c: 'c-{{ b }}'}}]\n"
    )
    suite = load_suite(config, cli_vars={"a": "{{ b }}"})
    assert suite.tests[0].vars == {"a": "{{ b }}", "b": "b-{{ b }}", "c": "c-b-{{ b }}"}
    assert plan_jobs(suite)[0].rendered_prompt == "{{ b }}/b-{{ b }}/c-b-{{ b }}"


def test_a_var_file_is_data(project: WriteFiles) -> None:
    config = project(
        "prompts: ['{{ doc }}']\nproviders: [echo]\ntests: [{vars: {doc: file://doc.md}}]\n",
        {"doc.md": "Jinja example: {{ undefined_name }} {% raw %}"},
    )
    suite = load_suite(config)
    assert plan_jobs(suite)[0].rendered_prompt == "Jinja example: {{ undefined_name }} {% raw %}"


def test_env_goes_into_provider_config_once_and_into_http_bodies_as_data(
    project: WriteFiles, monkeypatch: pytest.MonkeyPatch, loopback: LoopbackServer
) -> None:
    monkeypatch.setenv("EVALH_TEST_TOKEN", "t{{ 7*7 }}")
    loopback.route("POST", "/chat", lambda r: Reply.json({"answer": "ok"}))
    config = project(
        f"prompts: ['hi']\nproviders:\n  - id: http\n    config:\n      url: {loopback.url}/chat\n"
        "      headers: {X-Token: '{{ env.EVALH_TEST_TOKEN }}'}\n"
        "      body: {q: '{{ prompt }}', token: '{{ env.EVALH_TEST_TOKEN }}'}\n"
        "tests: [{vars: {}}]\n"
    )
    spec = load_suite(config).providers[0]
    # the http provider renders its headers for each call (with the test's vars), as its body
    assert spec.config["headers"] == {"X-Token": "{{ env.EVALH_TEST_TOKEN }}"}
    assert spec.config["body"] == {"q": "{{ prompt }}", "token": "{{ env.EVALH_TEST_TOKEN }}"}
    _, response = complete_once("http", spec.config, "hi")
    assert response.error is None
    assert loopback.requests[0].json == {"q": "hi", "token": "t{{ 7*7 }}"}
    assert loopback.requests[0].header("X-Token") == "t{{ 7*7 }}"


def test_an_unset_env_in_a_prompt_is_found_when_loading(
    project: WriteFiles, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("EVALH_TEST_UNSET", raising=False)
    guarded = (
        "{{ env.EVALH_TEST_UNSET | default('d') }}{{ env.get('EVALH_TEST_UNSET') }}"
        "{% if env.EVALH_TEST_UNSET is defined %}x{% endif %}{{ env.IN_CONFIG }}"
    )
    fine = project(f"env: {{IN_CONFIG: 1}}\nprompts: [{json.dumps(guarded)}]\nproviders: [echo]\n")
    assert plan_jobs(load_suite(fine))[0].rendered_prompt == "d1"
    config = project(
        "prompts: ['a', {raw: [{role: user, content: \"{{ env['EVALH_TEST_UNSET'] }}\"}]}]\n",
        name="unset.yaml",
    )
    with (
        warnings_to(None, strict=True),
        pytest.raises(
            TemplateError, match=r"prompts\[1\]: environment variable 'EVALH_TEST_UNSET' is not set"
        ),
    ):
        load_suite(config)
    config.write_text(config.read_text(encoding="utf-8") + "providers: [echo]\n", encoding="utf-8")
    shown: list[str] = []
    with warnings_to(shown.append):  # without --strict it renders empty, as in promptfoo, with a warning
        assert plan_jobs(load_suite(config))[1].rendered_prompt == [{"role": "user", "content": ""}]
    assert len(shown) == 1 and "'EVALH_TEST_UNSET' is not set" in shown[0] and "prompts[1]" in shown[0]


def test_a_secret_an_http_body_reads_from_env_is_redacted(
    monkeypatch: pytest.MonkeyPatch, loopback: LoopbackServer
) -> None:
    """The body's env is rendered per call now, so its secret-named fields are registered then."""
    monkeypatch.setenv("EVALH_TEST_BODY_TOKEN", "tok-0123456789")
    loopback.route("POST", "/chat", lambda r: Reply.json({"error": f"bad {r.json['apiKey']}"}, status=400))
    config = {
        "url": loopback.url + "/chat",
        "body": {"q": "{{ prompt }}", "apiKey": "{{ env.EVALH_TEST_BODY_TOKEN }}"},
    }
    _, response = complete_once("http", config, "hi")
    assert loopback.requests[0].json["apiKey"] == "tok-0123456789"
    assert response.error is not None and "tok-0123456789" not in response.error
