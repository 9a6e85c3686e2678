"""Provider ids promptfoo documents: served ones load wherever a provider is written; the ones evalh does not
serve are a located config error (exit 2) saying what to use instead, never "unknown provider"."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from evalh.cli.app import app
from evalh.config.load import load_suite
from evalh.errors import ConfigError


def write(path: Path, text: str) -> Path:
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


@pytest.fixture(autouse=True)
def _no_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (
        "GROQ_API_KEY",
        "COHERE_API_KEY",
        "OPENAI_API_KEY",
        "REPLICATE_API_TOKEN",
        "REPLICATE_API_KEY",
    ):
        monkeypatch.delenv(name, raising=False)


def test_family_ids_load_as_graders_everywhere(tmp_path: Path) -> None:
    config = write(
        tmp_path / "promptfooconfig.yaml",
        """
        prompts: ["Say {{x}}"]
        providers: [echo, "mistral:mistral-small-latest"]
        defaultTest:
          options:
            provider: {text: "groq:llama-3.1-8b-instant", embedding: "cohere:embedding:embed-english-v3.0"}
        tests:
          - vars: {x: hi}
            assert:
              - {type: llm-rubric, value: is a greeting, provider: "replicate:meta/meta-llama-3-8b-instruct"}
              - {type: similar, value: hi, provider: "togetherai:embedding:m2-bert"}
        """,
    )
    suite = load_suite(config)
    assert [spec.id for spec in suite.providers] == ["echo", "mistral:mistral-small-latest"]
    assert suite.tests[0].asserts[0].provider is not None


def test_a_missing_family_key_is_named_by_run_and_only_warned_by_validate(tmp_path: Path) -> None:
    write(
        tmp_path / "promptfooconfig.yaml",
        """
        prompts: ["Say {{x}}"]
        providers: [echo]
        tests:
          - vars: {x: hi}
            assert:
              - {type: llm-rubric, value: is a greeting, provider: "groq:llama-3.1-8b-instant"}
        """,
    )
    runner = CliRunner()
    validated = runner.invoke(app, ["validate", "-c", str(tmp_path / "promptfooconfig.yaml")])
    assert validated.exit_code == 0, validated.output
    assert "GROQ_API_KEY" in validated.output
    ran = runner.invoke(
        app, ["eval", "-c", str(tmp_path / "promptfooconfig.yaml"), "--no-cache", "--no-write"]
    )
    # the judged row is an ERROR naming the family's key (as in promptfoo); --strict stops before any call
    assert ran.exit_code == 1 and "groq:llama-3.1-8b-instant" in ran.output and "GROQ_API_KEY" in ran.output
    config = str(tmp_path / "promptfooconfig.yaml")
    strict = runner.invoke(app, ["eval", "-c", config, "--no-cache", "--no-write", "--strict"])
    assert strict.exit_code == 2 and "GROQ_API_KEY" in strict.output


@pytest.mark.parametrize(
    ("place", "yaml_text"),
    [
        ("providers[1]", 'providers: [echo, "watsonx:ibm/granite-13b-chat-v2"]\ntests: [{vars: {x: a}}]'),
        (
            "tests[0].assert[0].provider",
            "providers: [echo]\ntests:\n"
            '  - assert: [{type: llm-rubric, value: ok, provider: "ai21:jamba-1.5-mini"}]',
        ),
        (
            "defaultTest.options.provider",
            'providers: [echo]\ndefaultTest: {options: {provider: "openai:realtime:gpt-4o-realtime"}}\n'
            "tests: [{assert: [{type: llm-rubric, value: ok}]}]",
        ),
        (
            "tests[0].options.provider",
            'providers: [echo]\ntests:\n  - options: {provider: {id: "anthropic:completion:claude-2"}}\n'
            "    assert: [{type: llm-rubric, value: ok}]",
        ),
    ],
)
def test_an_id_evalh_cannot_serve_is_located_and_says_what_instead(
    tmp_path: Path, place: str, yaml_text: str
) -> None:
    config = tmp_path / "c.yaml"
    config.write_text('prompts: ["Say {{x}}"]\n' + yaml_text + "\n", encoding="utf-8")
    with pytest.raises(ConfigError) as raised:
        load_suite(config)
    message = raised.value.render()
    assert raised.value.exit_code == 2
    assert "c.yaml:" in message and place in message, message
    assert "evalh cannot serve provider" in message and "Instead, use" in message
    assert "unknown provider" not in message and "Did you mean" not in message


def test_spellings_promptfoo_does_not_know_either_get_promptfoos_way(tmp_path: Path) -> None:
    config = write(tmp_path / "c.yaml", 'prompts: ["hi"]\nproviders: ["vllm:llama-3"]\ntests: [{}]\n')
    with pytest.raises(
        ConfigError, match=r"openai:chat:<model> with config\.apiBaseUrl http://localhost:8000/v1"
    ):
        load_suite(config)


def test_a_family_named_without_its_model(tmp_path: Path) -> None:
    config = write(tmp_path / "c.yaml", 'prompts: ["hi"]\nproviders: ["groq:"]\ntests: [{}]\n')
    with pytest.raises(ConfigError, match=r"provider id 'groq:' names no model\. Write it as groq:<model>"):
        load_suite(config)
