"""The comparison the viewer's compare page draws (``GET /api/compare``): every change carries both runs'
results whole (output, assertions, vars) as a run's page has them, for its first changes only, so two
large runs that differ everywhere are not sent whole."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path

import pytest

from evalh.viewer import compare
from evalh.viewer.server import ViewerServer
from evalh.viewer.sources import GivenRuns


def _compared(runs: tuple[Path, Path]) -> dict[str, object]:
    server = ViewerServer(GivenRuns([str(run) for run in runs]))
    server.start()
    try:
        query = "api/compare?baseline=baseline.json&current=current.json"
        with urllib.request.urlopen(server.url + query) as answer:
            found: dict[str, object] = json.loads(answer.read())
            return found
    finally:
        server.close()


def test_every_change_carries_both_results(runs: tuple[Path, Path]) -> None:
    diff = _compared(runs)
    changes = [*diff["regressions"], *diff["fixes"]]  # type: ignore[misc]
    assert len(changes) == 4 and diff["detailed"] == 4
    for change in changes:
        name = "Ada" if change in diff["regressions"] else "Bob"  # type: ignore[operator]
        assert change["vars"] == {"name": name, "note": ""}
        before, after = change["before"]["cell"], change["after"]["cell"]
        assert before["output"] == after["output"] and name in after["output"]
        assert before["status"] == change["before"]["status"].upper()
        assert [a["type"] for a in before["assertions"]] == ["icontains" if name == "Ada" else "contains"]
    regression = diff["regressions"][0]  # type: ignore[index]
    assert regression["after"]["cell"]["assertions"][0]["value"] == "Adeline"
    assert "Output does not contain 'Adeline'" in regression["after"]["cell"]["assertions"][0]["reason"]


def test_only_the_first_changes_come_whole(runs: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(compare, "MAX_DETAILED_CHANGES", 1)
    diff = _compared(runs)
    first, *others = [*diff["regressions"], *diff["fixes"]]  # type: ignore[misc]
    assert diff["detailed"] == 1
    assert "cell" in first["before"] and "cell" in first["after"]
    assert all("cell" not in change["before"] and "cell" not in change["after"] for change in others)
