"""``evalh runs rate REF ROW_ID``: REF names a stored run (never a report file, so its error offers
none); ROW_ID may be a unique prefix of a row's id (as a run reference may be), for a rating and for
``--clear``; an ambiguous prefix is exit 2 naming the rows it begins."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.store.helpers import evalh, write_config

IDS = {"one?": "abc1-first-row", "two?": "abc2-second-row", "three?": "abd3-third-row"}


def _imported(tmp_path: Path) -> None:
    """A stored run whose rows have the ids of IDS (set in an exported report, then imported)."""
    assert evalh("run", write_config(tmp_path, dict.fromkeys(IDS, "no")), "--no-table").exit_code == 1
    report = _shown()
    for row in report["results"]["results"]:
        row["id"] = IDS[row["description"]]
    assert evalh("runs", "delete", report["evalId"]).exit_code == 0
    (tmp_path / "r.json").write_text(json.dumps(report), encoding="utf-8")
    imported = evalh("runs", "import", str(tmp_path / "r.json"))
    assert imported.exit_code == 0, imported.output


def _shown() -> dict[str, Any]:
    shown = evalh("runs", "show", "latest", "--json")
    assert shown.exit_code == 0, shown.output
    return json.loads(shown.output)  # type: ignore[no-any-return]


def _rated() -> dict[str, Any]:
    return {row["id"]: row.get("rating") for row in _shown()["results"]["results"]}


def test_a_unique_prefix_of_a_row_id_rates_and_clears_that_row(tmp_path: Path) -> None:
    _imported(tmp_path)
    rated = evalh("runs", "rate", "latest", "abc2", "--pass", "--comment", "fine")
    assert rated.exit_code == 0, rated.output
    assert "Rated row abc2-second-row of eval-" in rated.output  # the whole id, said back
    ratings = _rated()
    assert ratings["abc2-second-row"]["comment"] == "fine"
    assert ratings["abc1-first-row"] is None and ratings["abd3-third-row"] is None
    assert "2/3 passed" not in evalh("runs", "list").output and "1/3 passed" in evalh("runs", "list").output
    cleared = evalh("runs", "rate", "latest", "abc2-s", "--clear")
    assert cleared.exit_code == 0 and "its graded verdict holds again" in cleared.output
    assert _rated()["abc2-second-row"] is None
    whole = evalh("runs", "rate", "latest", "abd3-third-row", "--fail")  # the whole id still works
    assert whole.exit_code == 0 and _rated()["abd3-third-row"]["pass"] is False


def test_an_ambiguous_prefix_is_exit_2_listing_the_rows_it_begins(tmp_path: Path) -> None:
    _imported(tmp_path)
    for flag in ("--pass", "--clear"):
        result = evalh("runs", "rate", "latest", "abc", flag)
        assert result.exit_code == 2, result.output
        assert "'abc' begins the id of 2 rows of the run eval-" in result.output
        assert (
            "(abc1-first-row, abc2-second-row)" in result.output
            and "Give more of the row id" in result.output
        )
        assert "Traceback" not in result.output
    assert set(_rated().values()) == {None}
    unknown = evalh("runs", "rate", "latest", "abz", "--pass")
    assert unknown.exit_code == 2 and "has no row with id 'abz'" in unknown.output


def test_a_run_rate_cannot_find_offers_what_rate_takes_not_a_report_file(tmp_path: Path) -> None:
    report = tmp_path / "results.json"
    report.write_text("{}", encoding="utf-8")
    for ref in ("eval-none", str(report)):
        result = evalh("runs", "rate", ref, "abc", "--pass")
        assert result.exit_code == 2, result.output
        said = " ".join(result.output.split())
        assert f"no run {ref!r}" in said and "or a JSON report file" not in said
        assert "a reference is a run id, latest or latest~N" in said
        assert "to rate a JSON report file, import it first: `evalh runs import FILE`" in said
    shown = evalh("runs", "show", "eval-none")  # other commands keep their wording
    assert shown.exit_code == 2 and "latest~N, or a JSON report file" in " ".join(shown.output.split())
