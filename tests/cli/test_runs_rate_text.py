"""`evalh runs rate` with a comment or a reviewer name that is not text (a byte that was not UTF-8 on the
command line or in EVALH_REVIEWER, which Python keeps as a lone surrogate): exit 2 saying what to do, and
nothing stored. It was an internal error (exit 1): the store cannot hold such a string."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalh.store import open_store
from evalh.store.ratings import Rating
from tests.cli.test_runs_rate import _run, _shown
from tests.store.helpers import evalh


def _ratings() -> dict[str, Rating]:
    with open_store() as store:
        return dict(store.ratings("latest"))


def test_a_comment_that_is_not_utf8_exits_2(tmp_path: Path) -> None:
    ids = _run(tmp_path)
    rated = evalh("runs", "rate", "latest", ids["two?"], "--fail", "--comment", "bad \udcff\udcfe byte")
    assert rated.exit_code == 2, rated.output
    assert "the rating's comment holds bytes that are not UTF-8 text. Type it as UTF-8 text" in rated.output
    assert _ratings() == {}


def test_a_reviewer_that_is_not_utf8_exits_2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ids = _run(tmp_path)
    monkeypatch.setenv("EVALH_REVIEWER", "ana\udcff")
    rated = evalh("runs", "rate", "latest", ids["two?"], "--pass")
    assert rated.exit_code == 2, rated.output
    assert "reviewer holds bytes that are not UTF-8 text. Set EVALH_REVIEWER to your name" in rated.output
    assert _ratings() == {}


def test_an_imported_rating_with_a_lone_surrogate_keeps_it_as_a_visible_escape(tmp_path: Path) -> None:
    """JSON may spell "\\ud800"; an imported rating's comment and reviewer keep it as the text \\ud800 (it was
    an internal error: the store could not hold the string)."""
    ids = _run(tmp_path)
    assert evalh("runs", "rate", "latest", ids["two?"], "--pass").exit_code == 0
    exported = _shown()
    (row,) = [row for row in exported["results"]["results"] if row["id"] == ids["two?"]]
    row["rating"].update(comment="odd \ud800 byte", reviewer="ana\udfff")
    (tmp_path / "r.json").write_text(json.dumps(exported), encoding="utf-8")
    assert evalh("runs", "delete", "latest").exit_code == 0
    imported = evalh("runs", "import", str(tmp_path / "r.json"))
    assert imported.exit_code == 0, imported.output
    (rating,) = _ratings().values()
    assert (rating.comment, rating.reviewer) == ("odd \\ud800 byte", "ana\\udfff")
