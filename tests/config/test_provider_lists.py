"""``provider: [a, b]`` on an embedding assertion: multi-model scoring, validated like config.providers."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from evalh.cli.app import app
from evalh.config.load import load_suite
from evalh.errors import ConfigError
from evalh.model import RunOptions, Status
from evalh.runner.execute import run_suite


def write(path: Path, text: str) -> Path:
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def test_a_provider_list_scores_the_mean_over_models(tmp_path: Path) -> None:
    config = write(
        tmp_path / "evalh.yaml",
        """
        tests:
          - output: alpha beta gamma
            assert:
              - type: similar
                value: alpha beta gamma
                threshold: 0.9
                provider: [fake, "fake:64"]
        """,
    )
    suite = load_suite(config)
    spec = suite.tests[0].asserts[0]
    assert spec.provider is not None and [m.id for m in spec.provider.models] == ["fake", "fake:64"]
    row = run_suite(suite, RunOptions(cache=False)).results[0]
    assert row.status is Status.PASS, row.reason
    models = row.assertions[0].details["models"]
    assert [model["provider"] for model in models] == ["fake", "fake:64"]
    assert row.assertions[0].score == pytest.approx(sum(m["score"] for m in models) / 2)


def test_a_provider_list_that_cannot_embed_is_a_config_error(tmp_path: Path) -> None:
    config = write(
        tmp_path / "evalh.yaml",
        """
        tests:
          - output: x
            assert:
              - {type: similar, value: x, provider: [fake, echo]}
        """,
    )
    with pytest.raises(ConfigError, match=r"provider 'echo' \(from tests\[0\]\.assert\[0\]\.provider\[1\]\)"):
        load_suite(config)


def test_a_judge_takes_a_list_of_graders(tmp_path: Path) -> None:
    config = write(
        tmp_path / "evalh.yaml",
        """
        tests:
          - output: x
            assert:
              - {type: llm-rubric, value: is polite, provider: [openai:chat:a, openai:chat:b], aggregate: min}
        """,
    )
    (spec,) = load_suite(config).tests[0].asserts
    assert spec.provider is not None
    assert [grader.id for grader in spec.provider.models] == ["openai:chat:a", "openai:chat:b"]


@pytest.mark.parametrize("limit", ["lots", 0, -2, 1.5, True])
def test_a_bad_max_concurrency_is_a_located_config_error(tmp_path: Path, limit: object) -> None:
    config = write(
        tmp_path / "evalh.yaml",
        f"""
        prompts: ["{{{{q}}}}"]
        providers:
          - id: echo
            config: {{maxConcurrency: {limit!r}}}
        tests:
          - vars: {{q: x}}
        """,
    )
    with pytest.raises(ConfigError, match=r"providers\[0\]\.config\.maxConcurrency.*whole number") as raised:
        load_suite(config)
    assert raised.value.exit_code == 2


@pytest.mark.parametrize("threshold", [".nan", ".inf", "-.inf"])
def test_a_non_finite_threshold_is_a_config_error(tmp_path: Path, threshold: str) -> None:
    config = write(
        tmp_path / "evalh.yaml",
        f"""
        tests:
          - output: x
            assert:
              - {{type: "similar:dot", value: x, threshold: {threshold}, provider: fake}}
        """,
    )
    with pytest.raises(ConfigError, match=r"tests\[0\]\.assert\[0\]\.threshold.*finite number"):
        load_suite(config)


@pytest.mark.parametrize(
    ("assertion", "where", "problem"),
    [
        ("{type: similar, value: x, config: {providers: []}}", r"\.config\.providers", "non-empty list"),
        (
            "{type: similar, value: x, config: {providers: [{config: {}}]}}",
            r"\.config\.providers\[0\]",
            "a provider must be an id",
        ),
        (
            "{type: similar, value: x, config: {providers: [local, lcoal]}}",
            r"\.config\.providers\[1\]",
            "unknown provider id 'lcoal'. Did you mean 'local'",
        ),
        (
            "{type: bertscore-like, value: x, config: {providers: [123]}}",
            r"\.config\.providers\[0\]",
            "a provider must be an id",
        ),
        (
            "{type: similar, value: x, config: {providers: [openai:chat:gpt-4o]}}",
            ":",
            "provider 'openai:chat:gpt-4o' .from tests.0..assert.0..config.providers.0.. only offers text",
        ),
        (
            "{type: similar, value: x, config: {providers: [python:missing.py]}}",
            r"\.config\.providers\[0\]",
            "missing.py",
        ),
        (
            "{type: similar, value: x, config: {providers: [{id: fake, config: {maxConcurrency: 0}}]}}",
            r"\.config\.providers\[0\]\.config\.maxConcurrency",
            "whole number",
        ),
        (
            "{type: similar, value: x, provider: [fake, {id: python:gone.py}]}",
            r"\.provider\[1\]",
            "gone.py",
        ),
    ],
)
def test_every_provider_list_entry_is_checked_at_load(
    tmp_path: Path, assertion: str, where: str, problem: str
) -> None:
    config = write(tmp_path / "evalh.yaml", f"tests:\n  - output: x\n    assert:\n      - {assertion}\n")
    with pytest.raises(ConfigError, match=rf"tests\[0\]\.assert\[0\]{where}.*{problem}"):
        load_suite(config)


def test_a_listed_providers_config_is_never_shown(tmp_path: Path) -> None:
    config = write(
        tmp_path / "evalh.yaml",
        """
        tests:
          - output: x
            assert:
              - {type: similar, value: x, config: {providers: [{model: m, config: {apiKey: sk-secret-9}}]}}
        """,
    )
    with pytest.raises(ConfigError, match=r"object with keys \['config', 'model'\]") as raised:
        load_suite(config)
    assert "sk-secret-9" not in str(raised.value)


def test_config_providers_is_the_same_list_as_provider(tmp_path: Path) -> None:
    config = write(
        tmp_path / "evalh.yaml",
        """
        tests:
          - output: alpha beta
            assert:
              - {type: similar, value: alpha beta, provider: [fake, {id: "fake:64", label: small}]}
              - {type: similar, value: alpha beta, config: {providers: [fake, {embedding: "fake:64"}]}}
        """,
    )
    first, second = load_suite(config).tests[0].asserts
    assert first.provider is not None and second.provider is not None
    assert [m.id for m in first.provider.models] == [m.id for m in second.provider.models]
    assert second.provider.models[1].path == "tests[0].assert[1].config.providers[1].embedding"


def test_validate_reports_a_missing_provider_script_in_a_list(tmp_path: Path) -> None:
    config = write(
        tmp_path / "evalh.yaml",
        """
        tests:
          - output: x
            assert:
              - {type: similar, value: x, config: {providers: [fake, python:nowhere.py]}}
        """,
    )
    result = CliRunner().invoke(app, ["validate", str(config)])
    assert result.exit_code == 2
    assert "nowhere.py" in result.output and "config.providers[1]" in result.output


def test_a_missing_file_in_a_providers_options_is_reported_at_load(tmp_path: Path) -> None:
    (tmp_path / "here.json").write_text("{}", encoding="utf-8")
    config = write(
        tmp_path / "evalh.yaml",
        """
        prompts: ["{{q}}"]
        providers:
          - id: http
            config:
              url: http://127.0.0.1:9/chat
              body: file://here.json
              transformResponse: [file://nowhere.py:parse]
        tests:
          - vars: {q: x}
        """,
    )
    result = CliRunner().invoke(app, ["validate", str(config)])
    assert result.exit_code == 2
    assert "providers[0].config.transformResponse[0]" in result.output and "nowhere.py" in result.output
    assert "here.json" not in result.output


# an echo suite whose defaultTest options continue in the test's own text
ECHO_WITH_DEFAULT_OPTIONS = """
        prompts: ["{{answer}}"]
        providers: [echo]
        defaultTest:
          options:"""


def test_tests_inheriting_default_test_provider_share_one_spec(tmp_path: Path) -> None:
    # one spec object for every inheriting test: the run keys pool, gate, usage and embedding batches on
    # it, and a copy per test was parsed, checked and hashed again 5,000 times in sim-5000
    config = write(
        tmp_path / "c.yaml",
        ECHO_WITH_DEFAULT_OPTIONS
        + """
            provider:
              embedding: {id: "openai:embedding:text-embedding-3-small", config: {apiKey: sk-x}}
        tests:
          - vars: {answer: a}
          - vars: {answer: b}
          - vars: {answer: c}
            options: {provider: local}
        """,
    )
    tests = load_suite(config).tests
    assert tests[0].provider is not None and tests[0].provider is tests[1].provider
    assert tests[0].provider.embedding is not None
    assert tests[0].provider.embedding.config == {"apiKey": "sk-x"}
    assert tests[2].provider is not None and tests[2].provider.default is not None
    assert tests[2].provider.default.id == "local"


def test_a_bad_default_test_provider_is_one_problem_for_every_test(tmp_path: Path) -> None:
    config = write(
        tmp_path / "c.yaml",
        ECHO_WITH_DEFAULT_OPTIONS
        + """
            provider: {embedding: "opneai:embedding:x"}
        tests:
          - vars: {answer: a}
          - vars: {answer: b}
        """,
    )
    with pytest.raises(ConfigError) as raised:
        load_suite(config)
    message = raised.value.render()
    assert message.count("unknown provider id 'opneai:embedding:x'") == 1
    assert "defaultTest.options.provider" in message
