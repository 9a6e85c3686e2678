"""The viewer's rating API checks a write's Host, Origin and token before it reads the body; a DELETE
without a body needs no Content-Type; a body naming a key twice is refused; a rating that cannot be made
(a bad EVALH_REVIEWER in the server's environment) is 400, an unknown row 404; the read-only note says
"read-only" once."""

from __future__ import annotations

import json

import pytest

from evalh.viewer.writes import MAX_BODY_BYTES
from tests.viewer import test_server_ratings
from tests.viewer.test_server_ratings import ABSENT, Rateable, _refused, _request

served = test_server_ratings.rateable  # the fixture, by this name here
TOO_LARGE = json.dumps({"pass": True, "comment": "x" * MAX_BODY_BYTES}).encode()


@pytest.mark.parametrize(
    ("headers", "says"),
    [
        ({"token": "wrong"}, "a write needs this viewer's token"),
        ({"origin": "http://evil.example"}, "writes come only from the viewer's own page"),
        ({"origin": ABSENT}, "a write needs an Origin header"),
    ],
)
def test_a_foreign_write_is_refused_for_what_it_is_before_its_body_is_read(
    served: Rateable, headers: dict[str, object], says: str
) -> None:
    """A body too large (413) or chunked (411) from another page: the answer is the 403 of the page,
    not a complaint about the body, which was never read."""
    _refused(served, 403, says, body=TOO_LARGE, **headers)
    chunked = {"Transfer-Encoding": "chunked"}
    _refused(served, 403, says, body=b'e\r\n{"pass": true}\r\n0\r\n\r\n', extra=chunked, **headers)


def test_a_delete_without_a_body_needs_no_content_type(served: Rateable) -> None:
    row_id = served.row_id(0)
    assert _request(served.server, "POST", served.path(row_id)).status == 200
    cleared = _request(served.server, "DELETE", served.path(row_id), None, content_type=ABSENT)
    assert (cleared.status, cleared.body) == (200, {"cleared": True})
    assert served.ratings() == {}
    again = _request(served.server, "DELETE", served.path(row_id), b"", content_type=ABSENT)
    assert (again.status, again.body) == (200, {"cleared": False})
    with_body = _request(served.server, "DELETE", served.path(row_id), b"{}", content_type="text/plain")
    assert with_body.status == 415  # a body still comes as JSON


@pytest.mark.parametrize(
    ("body", "key"),
    [
        (b'{"pass": true, "pass": false}', "pass"),
        (b'{"pass": true, "comment": "a", "comment": "b"}', "comment"),
    ],
)
def test_a_body_naming_a_key_twice_is_refused(served: Rateable, body: bytes, key: str) -> None:
    _refused(served, 400, f"the key {key!r} is given twice", body=body)


def test_a_bad_reviewer_in_the_servers_environment_is_400_not_404(
    served: Rateable, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EVALH_REVIEWER", "Rita \udcff")  # a byte that is not UTF-8
    answer = _refused(served, 400, "the rating's reviewer holds bytes that are not UTF-8 text")
    assert "EVALH_REVIEWER" in answer.body["error"]
    monkeypatch.setenv("EVALH_REVIEWER", "Rita")
    _refused(served, 404, "has no row with id 'no-such-row'", row_id="no-such-row")


def test_the_read_only_note_says_read_only_once() -> None:
    """The page's rating section shows "Read-only: " and the note (rating.js): the note itself must not
    say it again ("Read-only: runs named on the command line are read-only: ...")."""
    from importlib.resources import files

    from evalh.viewer.sources import NAMED_RUNS_READ_ONLY

    script = files("evalh").joinpath("assets/viewer/rating.js").read_text(encoding="utf-8")
    assert '"Read-only: " + note + "."' in script
    shown = f"Read-only: {NAMED_RUNS_READ_ONLY}."
    assert shown.lower().count("read-only") == 1, shown
