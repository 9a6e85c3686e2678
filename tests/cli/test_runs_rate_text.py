"""`evalh runs rate` with a comment or a reviewer name that is not text (a byte that was not UTF-8 on the
command line or in EVALH_REVIEWER, which Python keeps as a lone surrogate): exit 2 saying what to do, and
nothing stored. It was an internal error (exit 1): the store cannot hold such a string."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalh.store import open_store
from tests.cli.test_runs_rate import _run
from tests.store.helpers import evalh


def _ratings() -> dict[str, object]:
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
