"""``evalh runs rate REF ROW_ID --pass|--fail|--clear``: a person's verdict on a stored row, shown by
``runs list``/``runs show``, written by ``runs show -o``, exported and imported, and refused with what to
do when it cannot be made."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.store.helpers import evalh, write_config

HOSTILE = "[bold red]loud[/] <img src=x onerror=alert(1)> {{ 7*7 }}"


def _run(tmp_path: Path) -> dict[str, str]:
    """A stored run of two rows ("one?" passes, "two?" fails); each row's id by its description."""
    result = evalh("run", write_config(tmp_path, {"one?": "yes", "two?": "no"}), "--no-table")
    assert result.exit_code == 1, result.output
    return {row["description"]: row["id"] for row in _shown()["results"]["results"]}


def _shown(ref: str = "latest") -> dict[str, Any]:
    shown = evalh("runs", "show", ref, "--json")
    assert shown.exit_code == 0, shown.output
    return json.loads(shown.output)  # type: ignore[no-any-return]


def test_rating_a_row_prints_what_it_did_and_the_counts_follow(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ids = _run(tmp_path)
    monkeypatch.setenv("EVALH_REVIEWER", "ana")
    rated = evalh("runs", "rate", "latest", ids["two?"], "--pass", "--score", "0.8", "--comment", "fine")
    assert rated.exit_code == 0, rated.output
    assert f"Rated row {ids['two?']} of eval-" in rated.output and "PASS (score 0.80) as ana" in rated.output
    assert "comment: fine" in rated.output
    assert "2/2 passed (100.0%)" in evalh("runs", "list").output
    (row,) = [row for row in _shown()["results"]["results"] if row["id"] == ids["two?"]]
    assert (row["success"], row["score"], row["rating"]["reviewer"]) == (True, 0.8, "ana")
    cleared = evalh("runs", "rate", "latest", ids["two?"], "--clear")
    assert cleared.exit_code == 0 and "its graded verdict holds again" in cleared.output
    assert "1/2 passed (50.0%)" in evalh("runs", "list").output
    again = evalh("runs", "rate", "latest", ids["two?"], "--clear")
    assert again.exit_code == 0 and "has no rating: nothing to clear" in again.output


@pytest.mark.parametrize(
    ("flags", "says"),
    [
        (["nope", "--fail"], "no row with id 'nope'. A row's id is its `id` in the JSON report"),
        (["{one?}"], "give exactly one of --pass, --fail and --clear"),
        (["{one?}", "--pass", "--fail"], "give exactly one of --pass, --fail and --clear"),
        (["{one?}", "--clear", "--comment", "x"], "--clear takes no --score or --comment"),
        (["{one?}", "--pass", "--score", "2"], "between 0 and 1 (got 2.0)"),
        (["{one?}", "--pass", "--comment", "x" * 4001], "the comment has 4,001 characters"),
        (["eval-none", "{one?}", "--pass"], "no run 'eval-none'"),
    ],
)
def test_a_rating_that_cannot_be_made_exits_2_saying_what_to_do(
    tmp_path: Path, flags: list[str], says: str
) -> None:
    ids = _run(tmp_path)
    args = [flag.format_map(ids) for flag in flags]
    if args[0] != "eval-none":
        args.insert(0, "latest")
    result = evalh("runs", "rate", *args)
    assert result.exit_code == 2, result.output
    assert says in result.output and "Traceback" not in result.output
    assert "1/2 passed" in evalh("runs", "list").output  # nothing changed


def test_runs_show_marks_a_rated_cell_and_shows_its_comment_as_text(tmp_path: Path) -> None:
    ids = _run(tmp_path)
    assert evalh("runs", "rate", "latest", ids["one?"], "--fail", "--comment", HOSTILE).exit_code == 0
    shown = evalh("runs", "show", "latest", "--table-cell-max-length", "200")
    assert shown.exit_code == 0, shown.output
    assert "FAIL 0.00 (rated)" in shown.output
    assert HOSTILE in shown.output  # rich markup in a comment is shown, never read
    assert "0/2 passed (0.0%)" in shown.output and "Pass rate  0.00%" in shown.output


def test_runs_show_writes_every_report_format_from_the_store(tmp_path: Path) -> None:
    ids = _run(tmp_path)
    assert evalh("runs", "rate", "latest", ids["two?"], "--pass", "--comment", HOSTILE).exit_code == 0
    paths = [tmp_path / name for name in ("r.json", "r.xml", "r.md", "r.csv", "r.yaml", "r.html")]
    written = evalh("runs", "show", "latest", *[arg for path in paths for arg in ("-o", str(path))])
    assert written.exit_code == 0, written.output
    assert all(path.is_file() and f"Wrote {path}" in written.output for path in paths)
    report = json.loads(paths[0].read_text(encoding="utf-8"))
    assert report["evalId"] == _shown()["evalId"]
    (row,) = [row for row in report["results"]["results"] if row["id"] == ids["two?"]]
    assert (row["success"], row["rating"]["comment"]) == (True, HOSTILE)
    assert row["gradingResult"]["componentResults"][-1]["assertion"] == {"type": "human"}
    assert report["results"]["stats"]["successes"] == 2
    assert "| two? |" in paths[2].read_text(encoding="utf-8")  # the Markdown lists the rated row
    bad = evalh("runs", "show", "latest", "-o", str(tmp_path / "r.pdf"))
    assert bad.exit_code == 2 and "unsupported report format" in bad.output


def test_an_exported_rated_run_imports_with_the_same_ratings(tmp_path: Path) -> None:
    ids = _run(tmp_path)
    evalh("runs", "rate", "latest", ids["two?"], "--pass", "--score", "0.6", "--comment", "ok")
    evalh("runs", "rate", "latest", ids["one?"], "--fail", "--comment", "rude")
    exported = _shown()
    (tmp_path / "r.json").write_text(json.dumps(exported), encoding="utf-8")
    assert evalh("runs", "delete", exported["evalId"]).exit_code == 0
    imported = evalh("runs", "import", str(tmp_path / "r.json"))
    assert imported.exit_code == 0, imported.output
    assert "(1/2 passed)" in imported.output  # the rated counts: one pass (rated), one fail (rated)
    again = _shown(exported["evalId"])
    assert again["results"]["results"] == exported["results"]["results"]
    assert again["results"]["stats"] == exported["results"]["stats"]
    assert evalh("runs", "rate", "latest", ids["one?"], "--clear").exit_code == 0
    (row,) = [row for row in _shown()["results"]["results"] if row["id"] == ids["one?"]]
    assert row["success"] is True and "rating" not in row  # the graded row was stored


@pytest.mark.parametrize(
    ("damage", "says"),
    [
        ({"score": 5}, "rating.score must be a number from 0 to 1 or null, not the number 5"),
        ({"pass": "yes"}, "rating.pass must be true or false, not a string ('yes')"),
        ({"pass": None}, "rating.pass must be true or false, not null"),
        ({"comment": "x" * 4001}, "rating.comment must hold at most 4,000 characters, not 4,001"),
        ({"graded": {"success": "no"}}, "rating.graded.success must be true or false or null"),
        ({"graded": None}, "rating.graded must be an object, not null"),
    ],
)
def test_a_damaged_rating_in_an_imported_report_is_a_located_error(
    tmp_path: Path, damage: dict[str, Any], says: str
) -> None:
    ids = _run(tmp_path)
    evalh("runs", "rate", "latest", ids["two?"], "--pass")
    exported = _shown()
    at = [row["id"] for row in exported["results"]["results"]].index(ids["two?"])
    exported["results"]["results"][at]["rating"].update(damage)
    evalh("runs", "delete", "latest")
    (tmp_path / "r.json").write_text(json.dumps(exported), encoding="utf-8")
    imported = evalh("runs", "import", str(tmp_path / "r.json"))
    assert imported.exit_code == 2, imported.output
    assert (
        f"r.json: is not an evalh or promptfoo JSON report: results.results[{at}].{says}" in imported.output
    )
    assert "Traceback" not in imported.output
