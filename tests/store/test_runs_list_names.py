"""`evalh runs list` names a run without a description by its config's file name, as the viewer's run list
does (a new user's list of such runs was ids and counts only, nothing to tell two suites apart)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.store.helpers import evalh


def _suite(path: Path, description: str | None) -> Path:
    config: dict[str, object] = {
        "tests": [{"vars": {"q": "hi"}, "output": "yes", "assert": [{"type": "icontains", "value": "yes"}]}]
    }
    if description is not None:
        config["description"] = description
    path.write_text(json.dumps(config), encoding="utf-8")
    return path


def test_a_run_without_a_description_is_listed_by_its_config_file_name(tmp_path: Path) -> None:
    evalh("run", _suite(tmp_path / "refunds.yaml", None), "--no-table")
    evalh("run", _suite(tmp_path / "other.yaml", "Billing answers"), "--no-table")
    lines = evalh("runs", "list").stdout.splitlines()
    assert len(lines) == 2
    assert lines[0].endswith("1/1 passed (100.0%)  Billing answers")  # a description is the name, as before
    assert lines[1].endswith("1/1 passed (100.0%)  refunds.yaml")  # no description: the config's file name
    listed = json.loads(evalh("runs", "list", "--json").stdout)
    assert [run["description"] for run in listed] == ["Billing answers", None]  # --json: the data as stored


def test_an_imported_run_without_a_description_is_listed_by_its_report_file_name(tmp_path: Path) -> None:
    suite = _suite(tmp_path / "refunds.yaml", None)
    evalh("run", suite, "--no-table", "--no-write", "-o", tmp_path / "r.json")
    assert evalh("runs", "import", tmp_path / "r.json").exit_code == 0
    (line,) = evalh("runs", "list").stdout.splitlines()
    assert line.endswith("1/1 passed (100.0%) (imported)  r.json")  # the file it came from, as the viewer
