"""``evalh runs import`` of a report whose rated rows cannot be told apart by their ``id`` (two rows share
one, or a rated row has none): exit 2 naming the rows, since a rating is found (and cleared) by its row's
id; nothing is stored."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.store.helpers import evalh, write_config


def _exported(tmp_path: Path) -> dict[str, Any]:
    """A rated run of three rows exported as a report and deleted from the store (ready to import)."""
    assert evalh("run", write_config(tmp_path, {"a?": "yes", "b?": "no", "c?": "no"}), "--no-table").exit_code
    report = _shown()
    for row in report["results"]["results"][:2]:
        assert evalh("runs", "rate", "latest", row["id"], "--fail").exit_code == 0
    report = _shown()
    assert evalh("runs", "delete", report["evalId"]).exit_code == 0
    return report


def _shown() -> dict[str, Any]:
    shown = evalh("runs", "show", "latest", "--json")
    assert shown.exit_code == 0, shown.output
    return json.loads(shown.output)  # type: ignore[no-any-return]


def _import(tmp_path: Path, report: dict[str, Any]) -> str:
    path = tmp_path / "r.json"
    path.write_text(json.dumps(report), encoding="utf-8")
    result = evalh("runs", "import", str(path))
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    assert report["evalId"] not in evalh("runs", "list").output  # nothing stored
    return " ".join(result.output.split())


@pytest.mark.parametrize(
    ("damage", "says"),
    [
        ({0: None}, "results.results[0], rated, has no id"),
        ({0: None, 1: ""}, "results.results[0], results.results[1], rated, have no id"),
        ({1: "same", 2: "same"}, "results.results[1], results.results[2], rated, share the id 'same'"),
        ({0: "same", 1: "same"}, "results.results[0], results.results[1], rated, share the id 'same'"),
    ],
)
def test_rated_rows_that_an_id_cannot_name_are_refused_naming_them(
    tmp_path: Path, damage: dict[int, str | None], says: str
) -> None:
    report = _exported(tmp_path)
    rows = report["results"]["results"]
    for at, value in damage.items():
        if value is None:
            del rows[at]["id"]
        else:
            rows[at]["id"] = value
    said = _import(tmp_path, report)
    assert says in said and "a rating is found by its row's id, so it could not be cleared" in said
    assert "Give each rated row an `id` of its own" in said


def test_an_unrated_row_without_an_id_imports_as_before(tmp_path: Path) -> None:
    report = _exported(tmp_path)
    rows = report["results"]["results"]
    del rows[2]["id"]  # unrated: nothing needs to find it
    path = tmp_path / "r.json"
    path.write_text(json.dumps(report), encoding="utf-8")
    imported = evalh("runs", "import", str(path))
    assert imported.exit_code == 0, imported.output
