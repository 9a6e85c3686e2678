"""``evalh diff`` warns when the judge changed between the runs compared: two real runs graded by a loopback
judge, the second under another model or another grading prompt."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from evalh.cli.app import app
from tests.assertions.test_judge_votes import grader, run_config
from tests.loopback import LoopbackServer


def report_of(server: LoopbackServer, tmp_path: Path, name: str, **assertion: Any) -> str:
    folder = tmp_path / name
    folder.mkdir()
    run_config(server, folder, assertion)
    return str(folder / "out.json")


def diff(a: str, b: str) -> Any:
    return CliRunner().invoke(app, ["diff", a, b])


def test_a_changed_judge_model_is_a_warning(loopback: LoopbackServer, tmp_path: Path) -> None:
    first = report_of(loopback, tmp_path, "a")
    second = report_of(loopback, tmp_path, "b", provider=grader(loopback, "judge-c"))
    result = diff(first, second)
    assert "the judge of llm-rubric changed" in result.stderr
    assert "openai:chat:judge-a (model judge-a" in result.stderr
    assert "openai:chat:judge-c (model judge-c" in result.stderr


def test_a_changed_grading_prompt_is_a_warning(loopback: LoopbackServer, tmp_path: Path) -> None:
    first = report_of(loopback, tmp_path, "a")
    second = report_of(loopback, tmp_path, "b", rubricPrompt="Grade {{output}} by: {{rubric}}")
    assert "the judge of llm-rubric changed" in diff(first, second).stderr


def test_the_same_judge_is_no_warning(loopback: LoopbackServer, tmp_path: Path) -> None:
    first = report_of(loopback, tmp_path, "a")
    second = report_of(loopback, tmp_path, "b")
    result = diff(first, second)
    assert result.exit_code == 0, result.output
    assert "judge" not in result.stderr


def test_run_with_a_baseline_warns_of_a_changed_judge(
    loopback: LoopbackServer, tmp_path: Path
) -> None:
    """``evalh run --baseline`` compares as ``evalh diff`` does, so it warns of the changed judge as well."""
    import yaml

    first = report_of(loopback, tmp_path, "a")  # judged by judge-a; the loopback routes stay up
    config = {
        "prompts": ["Say hello to {{name}}"],
        "providers": [
            {"id": "openai:chat:app", "config": {"apiBaseUrl": loopback.url + "/app/v1", "apiKey": "k"}}
        ],
        "defaultTest": {"options": {"provider": grader(loopback, "judge-c")}},
        "tests": [{"vars": {"name": "Ada"}, "assert": [{"type": "llm-rubric", "value": "greets Ada"}]}],
    }
    path = tmp_path / "b.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    result = CliRunner().invoke(app, ["run", str(path), "--baseline", first, "--no-write", "--no-table"])
    assert result.exit_code == 0, result.output
    assert "the judge of llm-rubric changed" in result.stderr
    assert "openai:chat:judge-c (model judge-c" in result.stderr
