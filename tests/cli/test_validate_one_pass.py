"""`evalh validate` loads .env as run does, and reports every problem in one pass (issue 10): schema
errors, missing files, assertion values and bounds, providers, report paths and filters together."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.config.test_promptfoo_semantics import evalh, write

FIXTURE = Path(__file__).parents[1] / "fixtures" / "validate_all"


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    shutil.copy(FIXTURE / "evalh.yaml", tmp_path / "evalh.yaml")
    shutil.copy(FIXTURE / "dotenv", tmp_path / ".env")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("VALIDATE_PROVIDER", raising=False)
    return tmp_path


def test_every_problem_is_reported_in_one_pass(project: Path) -> None:
    result = evalh("validate", "--filter-pattern", "nomatch")
    assert result.exit_code == 2
    err = result.stderr
    expected = [
        "evalh.yaml:11:9 tests[0].assert[0].weight: must be a number",  # schema
        "evalh.yaml:12:9 tests[0].assert[1].threshold: threshold must be <= 1",  # bounds, same test
        "evalh.yaml:15:12 tests[1].vars.question: file not found: missing.txt",  # files
        "evalh.yaml:19:9 tests[2].assert[0].value: must be a whole number or a mapping",  # value rule
        "evalh.yaml:5:44 providers[1]: unknown provider id 'nosuch:provider'",  # providers
        "evalh.yaml: is a file the run reads",  # report paths
        "--filter-pattern: 'nomatch' matched none of the",  # filters
    ]
    missing = [text for text in expected if text not in err]
    assert not missing, err
    assert "7 problems in the config" in err
    assert "Traceback" not in err


def test_validate_loads_dotenv_like_run(project: Path) -> None:
    (project / "evalh.yaml").write_text(
        'prompts: ["{{question}}"]\nproviders: ["{{ env.VALIDATE_PROVIDER }}"]\n'
        "tests: [{vars: {question: q}}]\n",
        encoding="utf-8",
    )
    result = evalh("validate")
    assert result.exit_code == 0, result.stderr
    assert "VALIDATE_PROVIDER" not in result.stderr  # no "not set" warning: .env set it
    (project / ".env").unlink()
    other = write(project / "other.env", "VALIDATE_PROVIDER=nosuch:thing\n")
    result = evalh("validate", "--env-file", str(other))
    assert result.exit_code == 2
    assert "unknown provider id 'nosuch:thing'" in result.stderr


def test_without_dotenv_the_variable_is_unset(project: Path) -> None:
    (project / ".env").unlink()
    result = evalh("validate")
    assert "environment variable 'VALIDATE_PROVIDER' is not set" in result.stderr
