"""A run rated outside the open viewer (`evalh runs rate` in a terminal, another `evalh view`): its page's
counts follow at the next read, as the run list's do. The viewer kept a finished run's line index for
ever, so the page said 4 passed beside a cell that said PASS and a run list that said 5."""

from __future__ import annotations

from typing import Any

from evalh.store import open_store
from tests.viewer import test_server_ratings
from tests.viewer.test_server_ratings import Rateable, _request

served = test_server_ratings.rateable  # the fixture, by this name here


def _page(served: Rateable) -> dict[str, Any]:
    answer = _request(served.server, "GET", f"/api/runs/{served.run_id}?limit=10", None)
    assert answer.status == 200, answer.body
    return answer.body


def _listed(served: Rateable) -> tuple[int, int]:
    (run,) = _request(served.server, "GET", "/api/runs", None).body["runs"]
    return run["passed"], run["failed"]


def test_a_rating_made_elsewhere_shows_in_the_open_viewers_counts(served: Rateable) -> None:
    before = _page(served)["run"]
    assert (before["passed"], before["failed"]) == _listed(served)
    with open_store() as store:  # as `evalh runs rate` does, in another process
        store.rate(served.run_id, served.row_id(0), passed=True, comment="fine")
    after = _page(served)["run"]
    assert (
        (after["passed"], after["failed"]) == (before["passed"] + 1, before["failed"] - 1) == _listed(served)
    )
    with open_store() as store:
        store.clear_rating(served.run_id, served.row_id(0))
    cleared = _page(served)["run"]
    assert (cleared["passed"], cleared["failed"]) == (before["passed"], before["failed"]) == _listed(served)
