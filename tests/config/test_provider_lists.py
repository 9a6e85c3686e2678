"""``provider: [a, b]`` on an embedding assertion: multi-model scoring, validated like config.providers."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from evalh.config.load import load_suite
from evalh.errors import ConfigError
from evalh.model import EvaluateOptions, Status
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
    assert spec.provider is None and spec.config["providers"] == ["fake", "fake:64"]
    row = run_suite(suite, EvaluateOptions(cache=False)).results[0]
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
    with pytest.raises(ConfigError, match="cannot embed"):
        load_suite(config)


def test_a_judge_takes_one_provider_not_a_list(tmp_path: Path) -> None:
    config = write(
        tmp_path / "evalh.yaml",
        """
        tests:
          - output: x
            assert:
              - {type: llm-rubric, value: is polite, provider: [openai:chat:a, openai:chat:b]}
        """,
    )
    pattern = r"tests\[0\]\.assert\[0\]\.provider.*takes one provider, not a list"
    with pytest.raises(ConfigError, match=pattern):
        load_suite(config)


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
