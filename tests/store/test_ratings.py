"""People's ratings in the run store (schema version 6): a rated row reads back as promptfoo records a
manual rating on every read path, the run's counts follow, clearing gives the graded run back exactly,
and a rating survives export and import."""

from __future__ import annotations

import getpass
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from evalh.errors import ConfigError, StoreError
from evalh.reports.codec import MANUAL_REASON, graded_row, rated_row
from evalh.reports.codec_read import PLACE_PATHS, VERDICT_PATHS, row_id, row_rating, row_status
from evalh.secrets import MARKER
from evalh.store import SCHEMA_VERSION, open_store, store_path
from evalh.store.export import indented_report
from evalh.store.ratings import MAX_COMMENT_CHARS, RatingError, reviewer_name
from tests.store.helpers import evalh, write_config


def _record(tmp_path: Path, answers: dict[str, str] | None = None) -> str:
    """A stored run of ``answers`` (default: one passing, one failing row); its id."""
    config = write_config(tmp_path, answers or {"one?": "yes", "two?": "no"})
    result = evalh("run", config, "--no-table")
    assert result.exit_code in (0, 1), result.output
    with open_store() as store:
        return store.resolve("latest").id


def _rows_by_description(store: Any, ref: str) -> dict[str, dict[str, Any]]:
    return {row["description"]: row for row in store.iter_rows(ref)}


def _exported(store: Any, ref: str) -> str:
    return "".join(indented_report(store.load_run(ref, lazy=True)))


def test_a_rated_row_reads_back_as_promptfoo_records_a_manual_rating(tmp_path: Path) -> None:
    run_id = _record(tmp_path)
    with open_store() as store:
        failing = _rows_by_description(store, run_id)["two?"]
        rating = store.rate(run_id, row_id(failing), passed=True, comment="close enough", reviewer="ana")
        rated = _rows_by_description(store, run_id)["two?"]
    assert (rating.passed, rating.score, rating.reviewer) == (True, 1.0, "ana")
    assert (rated["success"], rated["score"], rated["failureReason"]) == (True, 1.0, 0)
    grading = rated["gradingResult"]
    assert (grading["pass"], grading["score"], grading["reason"]) == (True, 1.0, MANUAL_REASON)
    assert grading["comment"] == "close enough"
    graded_components = failing["gradingResult"]["componentResults"]
    assert grading["componentResults"][:-1] == graded_components  # the graded ones kept, in order
    assert grading["componentResults"][-1] == {
        "pass": True,
        "score": 1.0,
        "reason": MANUAL_REASON,
        "comment": "close enough",
        "assertion": {"type": "human"},
        "metadata": {},
    }
    assert row_rating(rated) == rating.to_json()
    assert row_rating(failing) is None
    assert rated["rating"]["graded"] == {
        key: failing[key] for key in ("success", "score", "failureReason", "error", "gradingResult")
    }
    assert list(rated)[: len(failing)] == list(failing)  # promptfoo's keys where they were


def test_every_read_path_of_the_store_applies_the_rating(tmp_path: Path) -> None:
    run_id = _record(tmp_path)
    with open_store() as store:
        passing = _rows_by_description(store, run_id)["one?"]
        store.rate(run_id, row_id(passing), passed=False, score=0.25, comment="wrong tone")
        loaded = {row["description"]: row for row in store.load_run(run_id)["results"]["results"]}
        at = {row["description"]: row for row in store.rows_at(run_id, [0, 1])}
        fields = dict(store.row_fields(run_id, *PLACE_PATHS, *VERDICT_PATHS))
        exported = json.loads(_exported(store, run_id))["results"]["results"]
    for rows in (loaded, at, {row["description"]: row for row in exported}):
        assert (rows["one?"]["success"], rows["one?"]["score"]) == (False, 0.25)
        assert row_rating(rows["one?"])["comment"] == "wrong tone"  # type: ignore[index]
        assert row_rating(rows["two?"]) is None
    assert sorted(values[-2:] for values in fields.values()) == [[False, 0.0], [False, 0.25]]


def test_the_counts_follow_ratings_and_come_back_when_cleared(tmp_path: Path) -> None:
    run_id = _record(tmp_path)
    with open_store() as store:
        before = _exported(store, run_id)
        failing = row_id(_rows_by_description(store, run_id)["two?"])
        (listed,) = store.list_runs()
        assert (listed.passed, listed.failed, listed.errors) == (1, 1, 0)
        store.rate(run_id, failing, passed=True, score=0.9)
        (listed,) = store.list_runs()
        summary = store.resolve(run_id)
        head = store.load_head(run_id)["results"]
        stats = store.load_run(run_id)["results"]["stats"]
        assert store.ratings(run_id)[failing].score == 0.9
        assert store.clear_rating(run_id, failing) is True
        assert store.clear_rating(run_id, failing) is False  # nothing left to clear
        after = _exported(store, run_id)
        (cleared,) = store.list_runs()
    assert (listed.passed, listed.failed, listed.pass_rate) == (2, 0, 100.0)
    assert (summary.passed, summary.failed) == (2, 0)
    assert (
        (head["stats"]["successes"], head["stats"]["failures"])
        == (2, 0)
        == (
            stats["successes"],
            stats["failures"],
        )
    )
    (metrics,) = [prompt["metrics"] for prompt in head["prompts"]]
    graded = json.loads(before)["results"]["prompts"][0]["metrics"]
    assert (metrics["testPassCount"], metrics["testFailCount"]) == (2, 0)
    assert metrics["score"] == pytest.approx(graded["score"] + 0.9)
    assert metrics["assertPassCount"] == graded["assertPassCount"] + 1  # the human assertion
    assert after == before  # the graded run, byte for byte
    assert (cleared.passed, cleared.failed) == (1, 1)


def test_an_error_row_rated_counts_as_the_rating_says(tmp_path: Path) -> None:
    row = {
        "id": "r1",
        "success": False,
        "score": 0,
        "failureReason": 2,
        "error": "timeout",
        "gradingResult": None,
    }
    rated = rated_row(row, {"pass": False, "score": 0.0, "comment": "", "reviewer": "x", "ratedAt": "t"})
    assert row_status(rated).value == "FAIL"
    assert rated["gradingResult"]["componentResults"][0]["assertion"] == {"type": "human"}
    assert graded_row(rated) == (
        row,
        {"pass": False, "score": 0.0, "comment": "", "reviewer": "x", "ratedAt": "t"},
    )


def test_rating_again_replaces_the_human_component_and_graded_row_undoes_it() -> None:
    human = {"pass": False, "score": 0, "reason": "earlier", "assertion": {"type": "human"}}
    other = {"pass": True, "score": 1, "reason": "ok", "assertion": {"type": "contains"}}
    row = {"id": "r", "success": False, "gradingResult": {"pass": False, "componentResults": [human, other]}}
    rating = {"pass": True, "score": 0.5, "comment": "c", "reviewer": "r", "ratedAt": "t"}
    once = rated_row(row, rating)
    twice = rated_row(once, {**rating, "pass": False, "score": 0.0})
    components = twice["gradingResult"]["componentResults"]
    assert [c["assertion"]["type"] for c in components] == ["human", "contains"]  # replaced in place
    assert components[0]["pass"] is False and twice["success"] is False
    assert graded_row(twice)[0] == row  # "score" and "failureReason" were absent: absent again
    assert "score" not in graded_row(twice)[0] and graded_row(row) == (row, None)


def test_bad_ratings_are_refused_with_what_to_do(tmp_path: Path) -> None:
    run_id = _record(tmp_path)
    with open_store() as store:
        some_row = row_id(next(store.iter_rows(run_id)))
        with pytest.raises(RatingError, match=r"no row with id .nope.*runs show .* --json") as unknown:
            store.rate(run_id, "nope", passed=True)
        assert unknown.value.exit_code == 2
        with pytest.raises(RatingError, match="no row with id 'nope'"):
            store.clear_rating(run_id, "nope")
        with pytest.raises(ConfigError, match="no run 'eval-missing'"):
            store.rate("eval-missing", some_row, passed=True)
        for score in (1.5, -0.1, float("nan")):
            with pytest.raises(RatingError, match="between 0 and 1"):
                store.rate(run_id, some_row, passed=True, score=score)
        with pytest.raises(RatingError, match="at most 4,000"):
            store.rate(run_id, some_row, passed=True, comment="x" * (MAX_COMMENT_CHARS + 1))
        store.rate(run_id, some_row, passed=True, comment="x" * MAX_COMMENT_CHARS)  # the bound itself
        with store.transaction() as db:
            db.execute("UPDATE runs SET state = 'running' WHERE id = ?", (run_id,))
        with pytest.raises(RatingError, match="still recording"):
            store.rate(run_id, some_row, passed=False)


def test_a_secret_in_a_comment_is_redacted_before_it_is_stored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    planted = "sk-planted-0123456789abcdef"
    monkeypatch.setenv("OPENAI_API_KEY", planted)
    run_id = _record(tmp_path)
    with open_store() as store:
        some_row = row_id(next(store.iter_rows(run_id)))
        rating = store.rate(
            run_id, some_row, passed=True, comment=f"used key {planted} and https://u:pw@h.example/x"
        )
    assert planted not in rating.comment and MARKER in rating.comment and "pw@" not in rating.comment
    files = [path for path in store_path().parent.iterdir() if path.is_file()]
    assert files and not any(planted.encode() in path.read_bytes() for path in files)


def test_the_reviewer_is_evalh_reviewer_else_the_os_user(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("EVALH_REVIEWER", raising=False)
    assert reviewer_name() == getpass.getuser()
    monkeypatch.setenv("EVALH_REVIEWER", "Dana Q.")
    assert reviewer_name() == "Dana Q."


def test_deleting_or_pruning_a_run_deletes_its_ratings(tmp_path: Path) -> None:
    first = _record(tmp_path)
    second = _record(tmp_path)
    with open_store() as store:
        for run_id in (first, second):
            store.rate(run_id, row_id(next(store.iter_rows(run_id))), passed=False)
        store.delete(first)
        store.prune(0)
    with sqlite3.connect(store_path()) as db:
        assert db.execute("SELECT COUNT(*) FROM ratings").fetchone() == (0,)
    db.close()


def test_an_exported_run_imports_with_its_ratings(tmp_path: Path) -> None:
    run_id = _record(tmp_path)
    with open_store() as store:
        rows = _rows_by_description(store, run_id)
        store.rate(run_id, row_id(rows["two?"]), passed=True, score=0.75, comment="fine", reviewer="ana")
        exported = json.loads(_exported(store, run_id))
        ratings_before = store.ratings(run_id)
        rows_before = list(store.iter_rows(run_id))
        store.delete(run_id)
        imported = store.import_report(exported, source="r.json")
        assert store.ratings(imported.id) == ratings_before
        assert list(store.iter_rows(imported.id)) == rows_before
        assert store.load_run(imported.id)["results"]["stats"] == exported["results"]["stats"]
        assert store.load_run(imported.id)["results"]["prompts"] == exported["results"]["prompts"]
        assert (imported.passed, imported.failed) == (2, 0)
        store.clear_rating(imported.id, row_id(rows["two?"]))
        assert list(store.iter_rows(imported.id)) == list(rows.values())  # the graded rows were stored
        assert (store.resolve(imported.id).passed, store.resolve(imported.id).failed) == (1, 1)


def test_a_version_5_store_migrates_and_a_newer_one_is_refused(tmp_path: Path) -> None:
    run_id = _record(tmp_path)
    with sqlite3.connect(store_path()) as db:  # the store as the evalh before this one left it
        db.execute("DROP TABLE ratings")
        db.execute("DELETE FROM schema_version WHERE version = 6")
    db.close()
    with open_store() as store:
        store.rate(run_id, row_id(next(store.iter_rows(run_id))), passed=False)
        with store.transaction() as db:
            versions = [v for (v,) in db.execute("SELECT version FROM schema_version ORDER BY version")]
    assert versions == [1, 2, 3, 4, 5, 6] == list(range(1, SCHEMA_VERSION + 1))
    with sqlite3.connect(store_path()) as db:
        db.execute("INSERT INTO schema_version VALUES (7, 'future')")
    db.close()
    with pytest.raises(StoreError, match=r"newer evalh.*schema version 7"):
        open_store()


def test_a_row_is_found_by_its_id_however_the_stored_text_escapes_it(tmp_path: Path) -> None:
    run_id = _record(tmp_path)
    with open_store() as store:
        first = next(store.iter_rows(run_id))
        with store.transaction() as db:  # the id written as JSON escapes, as another writer may
            escaped = "".join(f"\\u{ord(c):04x}" for c in row_id(first))
            db.execute("UPDATE rows SET body = replace(body, ?, ?)", (row_id(first), escaped))
        assert store.rate(run_id, row_id(first), passed=False).row_id == row_id(first)
        assert row_rating(next(store.iter_rows(run_id))) is not None
