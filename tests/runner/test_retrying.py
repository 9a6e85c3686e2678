"""``--retry-errors`` (issue 10, item 5): the ERROR rows of the last report re-run and merged into it,
through the CLI with a real Python provider; the merge itself is a pure function over rows."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from evalh.cli.app import app
from evalh.model import Prompt, ProviderSpec, Status, TestCase, TestResult
from evalh.session.retry import merge_retried

PROVIDER = """
import os
def call_api(prompt, options, context):
    with open({log!r}, "a") as log:
        log.write(prompt + "\\n")
    if "Bob" in prompt and os.path.exists({down!r}):
        return {{"error": "service down"}}
    return {{"output": prompt}}
"""

SUITE = """
prompts: ["Hi {{name}}", "Bye {{name}}"]
providers: [python:prov.py]
tests:
  - {description: alpha, vars: {name: Ada}, assert: [{type: contains, value: Ada, metric: named}]}
  - {description: beta, vars: {name: Bob}, assert: [{type: contains, value: Bob, metric: named}]}
  - {description: gamma, vars: {name: Cy}, assert: [{type: contains, value: Ada}]}
"""


def run(config: Path, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["run", str(config), "--no-table", "--no-progress-bar", *args])
    assert "Traceback" not in result.output, result.output
    return result.exit_code, result.output


def report(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))["results"]
    return data


def comparable(data: dict[str, Any]) -> dict[str, Any]:
    """What a report says about the rows (not when it ran, nor its provider call counts)."""
    rows = [
        {k: row[k] for k in ("description", "promptIdx", "success", "score", "failureReason", "namedScores")}
        | {"output": row["response"]["output"], "components": row["gradingResult"]["componentResults"]}
        for row in data["results"]
    ]
    stats = {k: data["stats"][k] for k in ("successes", "failures", "errors")}
    prompts = [
        {k: v for k, v in p["metrics"].items() if k not in ("totalLatencyMs", "tokenUsage")}
        for p in data["prompts"]
    ]
    return {"rows": rows, "stats": stats, "aggregates": data["aggregates"], "prompts": prompts}


def test_retry_errors_reruns_the_error_rows_and_merges_them(tmp_path: Path) -> None:
    log, down = tmp_path / "calls.log", tmp_path / "down"
    (tmp_path / "prov.py").write_text(PROVIDER.format(log=str(log), down=str(down)), encoding="utf-8")
    config = tmp_path / "c.yaml"
    config.write_text(textwrap.dedent(SUITE), encoding="utf-8")
    out, lines = tmp_path / "out.json", tmp_path / "out.jsonl"
    down.touch()
    code, output = run(config, "-o", str(out), str(lines), "--no-cache")
    assert code == 1 and report(out)["stats"]["errors"] == 2, output
    down.unlink()
    log.unlink()
    code, output = run(config, "-o", str(out), str(lines), "--no-cache", "--retry-errors")
    assert code == 1, output  # gamma fails, as it did
    # only the two ERROR cells were called again
    assert sorted(log.read_text(encoding="utf-8").split("\n")[:-1]) == ["Bye Bob", "Hi Bob"]
    merged = report(out)
    fresh = tmp_path / "fresh.json"
    run(config, "-o", str(fresh), "--no-cache")
    # the report equals a run where those rows had succeeded: rows in order, stats, aggregates
    assert comparable(merged) == comparable(report(fresh))
    assert merged["stats"] == {**merged["stats"], "successes": 4, "failures": 2, "errors": 0}
    assert len(lines.read_text(encoding="utf-8").splitlines()) == 6  # every report holds every row


def test_retry_errors_refuses_a_report_of_another_config(tmp_path: Path) -> None:
    (tmp_path / "prov.py").write_text(PROVIDER.format(log="/dev/null", down="/nonexistent"), encoding="utf-8")
    config = tmp_path / "c.yaml"
    config.write_text(textwrap.dedent(SUITE), encoding="utf-8")
    out = tmp_path / "out.json"
    rows = [
        {"description": "beta", "vars": {"name": "Bob"}, "success": False, "failureReason": 2},
        {"description": "delta", "vars": {"name": "Di"}, "success": True, "failureReason": 0},
    ]
    out.write_text(json.dumps({"results": {"results": rows}}), encoding="utf-8")
    code, output = run(config, "-o", str(out), "--retry-errors")
    assert code == 2, output
    assert (
        "--retry-errors" in output
        and "row 1 of the report (test 'delta') is not a row of this config" in output
    )
    assert json.loads(out.read_text(encoding="utf-8"))["results"]["results"] == rows  # left as it was


def _row(name: str, status: Status, prompt_index: int = 0, output: str = "") -> TestResult:
    return TestResult(
        test=TestCase(index=0, description=name, vars={"n": name}),
        prompt=Prompt(raw="p", label="p"),
        provider=ProviderSpec(id="echo"),
        prompt_index=prompt_index,
        provider_index=0,
        rendered_prompt="p",
        status=status,
        score=1.0 if status is Status.PASS else 0.0,
        reason="",
        output=output,
    )


def test_merge_replaces_error_rows_only_and_keeps_the_order() -> None:
    earlier = [
        _row("a", Status.ERROR, output="old"),
        _row("a", Status.PASS, prompt_index=1, output="kept"),
        _row("b", Status.ERROR, output="not retried"),
        _row("c", Status.FAIL, output="failed"),
    ]
    retried = [
        _row("a", Status.PASS, output="new"),
        _row("a", Status.FAIL, prompt_index=1, output="ignored"),  # that cell did not error
        _row("c", Status.PASS, output="ignored too"),
    ]
    merged = merge_retried(earlier, retried)
    assert [(row.test.description, row.output) for row in merged] == [
        ("a", "new"),
        ("a", "kept"),
        ("b", "not retried"),
        ("c", "failed"),
    ]
