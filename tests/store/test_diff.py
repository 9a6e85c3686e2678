"""evalh diff and run --baseline / --fail-on regressions: rows matched by test identity across runs and
report files, each change in one group, and exit codes that depend on new failures only."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from evalh.store.compare import compare_reports
from tests.store.helpers import evalh, report, write_config


def _row(description: str, success: bool, score: float, *, error: bool = False, **extra: Any) -> dict:
    return {
        "description": description,
        "vars": {"q": description},
        "prompt": {"raw": "x", "label": "p"},
        "provider": {"id": "echo", "label": "echo"},
        "success": success,
        "score": score,
        "failureReason": 0 if success else 2 if error else 1,
        "error": None if success else f"{description} went wrong",
        **extra,
    }


def _report(eval_id: str, *rows: dict) -> dict:
    return {"evalId": eval_id, "results": {"results": list(rows)}}


def test_each_row_lands_in_one_group() -> None:
    before = _report(
        "A",
        _row("kept", True, 1.0),
        _row("breaks", True, 1.0),
        _row("errors now", True, 0.9),
        _row("heals", False, 0.2),
        _row("drifts", True, 0.9),
        _row("jitters", True, 0.9),
        _row("still failing", False, 0.1),
        _row("gone", True, 1.0),
    )
    after = _report(
        "B",
        _row("drifts", True, 0.7),  # order does not matter: rows are matched by identity
        _row("kept", True, 1.0),
        _row("breaks", False, 0.0),
        _row("errors now", False, 0.0, error=True),
        _row("heals", True, 1.0),
        _row("jitters", True, 0.905),
        _row("still failing", False, 0.1),
        _row("new and failing", False, 0.0),
        _row("new and passing", True, 1.0),
    )
    result = compare_reports(before, after, tolerance=0.01)
    names = {
        group: [change.test for change in getattr(result, group)]
        for group in ("regressions", "new_failures", "fixes", "score_changes", "added", "removed")
    }
    assert names == {
        "regressions": ["breaks", "errors now"],
        "new_failures": ["new and failing"],
        "fixes": ["heals"],
        "score_changes": ["drifts"],
        "added": ["new and passing"],
        "removed": ["gone"],
    }
    assert result.unchanged == 3 and result.failed == 3
    document = result.to_json()
    assert document["newFailureCount"] == 3
    assert document["regressions"][1]["after"] == {
        "status": "error",
        "score": 0.0,
        "reason": "errors now went wrong",
    }


def test_identity_is_description_vars_prompt_and_provider() -> None:
    base = _row("same", True, 1.0)
    other_provider = {**base, "provider": {"id": "echo", "label": "other"}, "success": False}
    other_vars = {**base, "vars": {"q": "different"}, "success": False}
    result = compare_reports(_report("A", base), _report("B", base, other_provider, other_vars))
    assert result.regressions == [] and len(result.new_failures) == 2 and result.unchanged == 1


def test_repeated_identities_are_matched_in_order() -> None:
    before = _report("A", _row("twin", True, 1.0), _row("twin", True, 1.0))
    after = _report("B", _row("twin", True, 1.0), _row("twin", False, 0.0))
    result = compare_reports(before, after)
    assert len(result.regressions) == 1 and result.unchanged == 1 and not result.added


def test_diff_of_stored_runs_exits_1_on_regressions(tmp_path: Path) -> None:
    write_config(tmp_path, {"one?": "yes", "two?": "yes", "three?": "no"})
    assert evalh("run", tmp_path / "evalh.yaml", "--no-table").exit_code == 1
    write_config(tmp_path, {"one?": "yes", "two?": "no", "three?": "yes", "four?": "yes"})
    evalh("run", tmp_path / "evalh.yaml", "--no-table")
    result = evalh("diff", "latest~1", "latest", "-o", tmp_path / "diff.json")
    assert result.exit_code == 1, result.output
    assert "Regressions: passed in the baseline, fail now (1):" in result.stdout
    assert (
        "  - two? (recorded): PASS 1.00 -> FAIL 0.00 (-1.00): icontains: Output does not contain 'yes' "
        "(ignoring case)\n" in result.stdout
    )
    assert "Fixed: failed in the baseline, pass now (1):" in result.stdout
    written = json.loads((tmp_path / "diff.json").read_text())
    assert [c["test"] for c in written["regressions"]] == ["two?"]
    assert [c["test"] for c in written["fixes"]] == ["three?"]
    assert [c["test"] for c in written["added"]] == ["four?"]
    assert evalh("diff", "latest", "latest").exit_code == 0


def test_diff_of_report_files_and_a_bad_reference(tmp_path: Path) -> None:
    write_config(tmp_path, {"one?": "yes"})
    evalh("run", tmp_path / "evalh.yaml", "--no-table", "--no-write", "-o", tmp_path / "a.json")
    write_config(tmp_path, {"one?": "no"})
    evalh("run", tmp_path / "evalh.yaml", "--no-table", "--no-write", "-o", tmp_path / "b.json")
    result = evalh("diff", tmp_path / "a.json", tmp_path / "b.json", "--json")
    assert result.exit_code == 1
    assert json.loads(result.stdout)["baseline"]["id"] == report(tmp_path / "a.json")["evalId"]
    assert evalh("diff", tmp_path / "b.json", tmp_path / "a.json").exit_code == 0
    missing = evalh("diff", "latest~5", tmp_path / "a.json")
    assert missing.exit_code == 2 and "no run 'latest~5'" in missing.stderr
    over = evalh("diff", tmp_path / "a.json", tmp_path / "b.json", "-o", tmp_path / "b.json")
    assert over.exit_code == 2 and "is a file the run reads" in over.stderr
    assert report(tmp_path / "b.json")["evalId"]  # untouched
    nope = evalh("diff", tmp_path / "nope.json", tmp_path / "a.json")
    assert nope.exit_code == 2 and "report not found" in nope.stderr


def test_baseline_and_fail_on_regressions(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"known failure": "no", "good": "yes"})
    assert evalh("run", config, "--no-table").exit_code == 1
    # the known failure fails again: no new failure, CI passes with --fail-on regressions
    again = evalh("run", config, "--no-table", "--baseline", "latest", "--fail-on", "regressions")
    assert again.exit_code == 0, again.output
    assert "No new failures since the baseline." in again.stdout
    # without --fail-on, failures still decide the exit code
    assert evalh("run", config, "--no-table", "--baseline", "latest").exit_code == 1
    write_config(tmp_path, {"known failure": "no", "good": "no"})
    broken = evalh("run", config, "--no-table", "--baseline", "latest", "--fail-on", "regressions")
    assert broken.exit_code == 1
    assert "Regressions: passed in the baseline, fail now (1):" in broken.stdout
    assert "1 new failure(s) since the baseline." in broken.stdout


def test_baseline_from_a_report_file_and_usage_errors(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"a": "yes"})
    evalh("run", config, "--no-table", "--no-write", "-o", tmp_path / "base.json")
    ok = evalh("run", config, "--no-table", "--no-write", "--baseline", tmp_path / "base.json")
    assert ok.exit_code == 0 and "Unchanged: 1" in ok.stdout
    lone = evalh("run", config, "--fail-on", "regressions")
    assert lone.exit_code == 2 and "--baseline" in lone.stderr
    unknown = evalh("run", config, "--baseline", "latest~9")
    assert unknown.exit_code == 2 and "no run 'latest~9'" in unknown.stderr
    assert "Tests" not in unknown.stdout  # refused before the run
