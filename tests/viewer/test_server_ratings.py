"""The viewer's one write, a rating, over real sockets with raw requests: what a write must carry (the
server's Host and Origin, its token, a JSON body within bounds, a rate within bounds), each refusal and
its message, and that a refused write stores nothing. See evalh/viewer/writes.py."""

from __future__ import annotations

import http.client
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from evalh.reports.html import to_html
from evalh.store import open_store
from evalh.store.recorder import BATCH_ROWS
from evalh.viewer.server import ViewerServer
from evalh.viewer.sources import GivenRuns, StoredRuns
from evalh.viewer.writes import MAX_BODY_BYTES, WRITES_PER_WINDOW
from tests.viewer.test_cli_view import _serve, _stop

ABSENT = object()  # a header left out of the request


@dataclass(frozen=True)
class Answer:
    status: int
    body: dict[str, Any]
    headers: dict[str, str]


@dataclass
class Rateable:
    """`evalh view` of the run store holding the fixture's current run: its server, the run and its rows."""

    server: ViewerServer
    run_id: str
    rows: list[dict[str, Any]]  # the stored rows, in order

    def row_id(self, test: int, prompt: int = 0) -> str:
        return next(
            str(row["id"]) for row in self.rows if (row["testIdx"], row["promptIdx"]) == (test, prompt)
        )

    def path(self, row_id: str, ref: str | None = None) -> str:
        return f"/api/runs/{ref or self.run_id}/rows/{row_id}/rating"

    def ratings(self) -> dict[str, Any]:
        with open_store() as store:
            return store.ratings(self.run_id)


def _request(
    server: ViewerServer,
    method: str,
    path: str,
    body: bytes | None = b'{"pass": true}',
    *,
    token: object = None,
    origin: object = None,
    host: object = None,
    content_type: object = "application/json",
    extra: dict[str, str] | None = None,
) -> Answer:
    """A raw request: every header exactly as given (None: the right value; ABSENT: left out)."""
    own = f"127.0.0.1:{server.port}"
    headers = {
        "Host": own if host is None else host,
        "Origin": f"http://{own}" if origin is None else origin,
        "X-Evalh-Token": server.token if token is None else token,
        "Content-Type": content_type,
        **(extra or {}),
    }
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    connection.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
    for name, value in headers.items():
        if value is not ABSENT:
            connection.putheader(name, str(value))
    if body is not None and "Transfer-Encoding" not in headers:
        connection.putheader("Content-Length", str(len(body)))
    connection.endheaders(body)
    response = connection.getresponse()
    text = response.read()
    connection.close()
    answer = json.loads(text) if text else {}
    return Answer(response.status, answer, {name.lower(): value for name, value in response.getheaders()})


@pytest.fixture
def rateable(runs: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> Iterator[Rateable]:
    monkeypatch.setenv("EVALH_REVIEWER", "Rita Reviewer")
    report = json.loads(runs[1].read_text(encoding="utf-8"))
    with open_store() as store:
        run_id = store.import_report(report, source="current.json").id
        rows = list(store.iter_rows(run_id))
    server = ViewerServer(StoredRuns())
    server.start()
    try:
        yield Rateable(server, run_id, rows)
    finally:
        server.close()


def _cell(rateable: Rateable, test: int, prompt: int = 0) -> dict[str, Any]:
    page = _request(rateable.server, "GET", f"/api/runs/{rateable.run_id}?limit=10", None).body
    line = next(line for line in page["lines"] if line["test"] == test)
    return dict(line["cells"][prompt])


def _summary(rateable: Rateable) -> dict[str, Any]:
    return dict(_request(rateable.server, "GET", f"/api/runs/{rateable.run_id}?limit=1", None).body["run"])


def test_rate_then_clear_a_result(rateable: Rateable) -> None:
    """Test 0 ("greets Ada") fails in column 0; a person passes it, with a score and a comment; the
    verdict, the cell and the run's counts are the rated ones; cleared, the graded ones are back."""
    row_id = rateable.row_id(0)
    graded = _cell(rateable, 0)
    assert graded["status"] == "FAIL" and "rating" not in graded and graded["id"] == row_id
    before = _summary(rateable)
    body = json.dumps({"pass": True, "score": 0.75, "comment": "Close enough: <b>Ada</b>"}).encode()
    answer = _request(rateable.server, "POST", rateable.path(row_id), body)
    assert answer.status == 200
    rating = answer.body["rating"]
    assert (rating["pass"], rating["score"], rating["comment"], rating["reviewer"]) == (
        True,
        0.75,
        "Close enough: <b>Ada</b>",
        "Rita Reviewer",
    )
    rated = _cell(rateable, 0)
    assert rated["status"] == "PASS" and rated["score"] == 0.75
    assert rated["rating"]["reviewer"] == "Rita Reviewer" and rated["rating"]["comment"] == rating["comment"]
    after = _summary(rateable)
    assert (after["passed"], after["failed"]) == (before["passed"] + 1, before["failed"] - 1)
    assert set(rateable.ratings()) == {row_id}
    cleared = _request(rateable.server, "DELETE", rateable.path(row_id), None)
    assert (cleared.status, cleared.body) == (200, {"cleared": True})
    assert _cell(rateable, 0) == graded and _summary(rateable) == before
    assert rateable.ratings() == {}
    again = _request(rateable.server, "DELETE", rateable.path(row_id), b"")
    assert (again.status, again.body) == (200, {"cleared": False})


def _refused(rateable: Rateable, status: int, message: str, **request: Any) -> Answer:
    """The write is refused with ``status`` and an error holding ``message``, and nothing is stored."""
    method = request.pop("method", "POST")
    answer = _request(
        rateable.server, method, rateable.path(request.pop("row_id", rateable.row_id(0))), **request
    )
    assert answer.status == status, answer.body
    assert message in answer.body["error"], answer.body
    assert "\n" not in answer.body["error"]
    assert not any(name.startswith("access-control-") for name in answer.headers)
    assert rateable.ratings() == {}
    return answer


def test_a_write_without_the_token_is_refused(rateable: Rateable) -> None:
    for method in ("POST", "DELETE"):
        _refused(rateable, 403, "a write needs this viewer's token", token=ABSENT, method=method)
    _refused(rateable, 403, "X-Evalh-Token", token="")


def test_a_wrong_token_is_refused(rateable: Rateable) -> None:
    other = ViewerServer(StoredRuns())  # another server's token: each server has its own
    other.close()
    assert other.token != rateable.server.token and len(other.token) == len(rateable.server.token) >= 40
    _refused(rateable, 403, "reload the page", token=other.token)
    _refused(rateable, 403, "reload the page", token=rateable.server.token[:-1])
    _refused(rateable, 403, "reload the page", token=rateable.server.token + "x")
    _refused(rateable, 403, "reload the page", token="é" * 10)  # not ASCII: still just a wrong token


def test_a_write_from_another_origin_is_refused(rateable: Rateable) -> None:
    port = rateable.server.port
    for origin in ("http://evil.example", f"http://evil.example:{port}", f"http://127.0.0.1:{port + 1}",
                   f"https://127.0.0.1:{port}", "null", f"http://127.0.0.1:{port}/"):  # fmt: skip
        _refused(rateable, 403, "writes come only from the viewer's own page", origin=origin)


def test_a_write_without_an_origin_is_refused(rateable: Rateable) -> None:
    _refused(rateable, 403, "a write needs an Origin header", origin=ABSENT)


def test_both_own_origins_may_write(rateable: Rateable) -> None:
    port = rateable.server.port
    for origin, host in ((f"http://localhost:{port}", f"localhost:{port}"), (None, None)):
        answer = _request(
            rateable.server, "POST", rateable.path(rateable.row_id(1)), origin=origin, host=host
        )
        assert answer.status == 200, answer.body


def test_a_foreign_host_cannot_write(rateable: Rateable) -> None:
    """A page whose DNS name rebinds to 127.0.0.1 sends its own Host and Origin: refused, token or not."""
    name = f"evil.example:{rateable.server.port}"
    _refused(rateable, 403, "answers only on its own address", host=name, origin=f"http://{name}")


@pytest.mark.parametrize(
    "content_type",
    ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", ABSENT],
)
def test_only_json_bodies(rateable: Rateable, content_type: object) -> None:
    """A form post cannot set its content type to JSON."""
    _refused(rateable, 415, "send Content-Type: application/json", content_type=content_type)


def test_json_with_a_charset_is_json(rateable: Rateable) -> None:
    ok = _request(
        rateable.server,
        "POST",
        rateable.path(rateable.row_id(1)),
        content_type="application/json; charset=utf-8",
    )
    assert ok.status == 200


def test_a_large_body_is_refused(rateable: Rateable) -> None:
    body = json.dumps({"pass": True, "comment": "x" * MAX_BODY_BYTES}).encode()
    answer = _refused(rateable, 413, f"at most {MAX_BODY_BYTES} bytes (got {len(body)})", body=body)
    assert answer.body["error"].startswith("a write's body")


def test_a_chunked_body_is_refused(rateable: Rateable) -> None:
    _refused(
        rateable, 411, "with a Content-Length", body=b"e\r\n{\"pass\": true}\r\n0\r\n\r\n",
        extra={"Transfer-Encoding": "chunked"},
    )  # fmt: skip


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"", "the body is not JSON"),
        (b"{pass: true}", "the body is not JSON"),
        (b"\xff", "the body is not JSON"),
        (b"[true]", 'the body is a JSON object {"pass"'),
        (b"{}", '"pass" is true or false (got null)'),
        (b'{"pass": "yes"}', '"pass" is true or false (got "yes")'),
        (b'{"pass": 1}', '"pass" is true or false (got 1)'),
        (b'{"pass": true, "score": 1.5}', '"score" is a number from 0 to 1 (got 1.5)'),
        (b'{"pass": true, "score": -0.1}', '"score" is a number from 0 to 1'),
        (b'{"pass": true, "score": "0.5"}', '"score" is a number from 0 to 1'),
        (b'{"pass": true, "score": true}', '"score" is a number from 0 to 1'),
        (b'{"pass": true, "score": NaN}', '"score" is a number from 0 to 1'),
        (b'{"pass": true, "comment": 3}', '"comment" is text'),
        (b'{"pass": true, "verdict": "ok"}', "unknown key 'verdict'"),
        (json.dumps({"pass": True, "comment": "x" * 4001}).encode(), '"comment" is at most 4000 characters'),
    ],
)
def test_bad_bodies_say_what_to_send(rateable: Rateable, body: bytes, message: str) -> None:
    _refused(rateable, 400, message, body=body)


def test_a_long_comment_up_to_the_bound_is_kept(rateable: Rateable) -> None:
    comment = "é" * 4000  # 8,000 bytes of UTF-8: within the body's bound
    body = json.dumps({"pass": False, "comment": comment}, ensure_ascii=False).encode()
    assert _request(rateable.server, "POST", rateable.path(rateable.row_id(1)), body).status == 200
    assert rateable.ratings()[rateable.row_id(1)].comment == comment


def test_unknown_runs_and_rows(rateable: Rateable) -> None:
    answer = _request(rateable.server, "POST", rateable.path(rateable.row_id(0), ref="nope"))
    assert (answer.status, answer.body) == (404, {"error": "not found: run 'nope'"})
    missing = _refused(rateable, 404, "has no row with id 'no-such-row'", row_id="no-such-row")
    assert "evalh runs show" in missing.body["error"]
    for method in ("POST", "DELETE"):
        assert _request(rateable.server, method, rateable.path("no-such-row")).status == 404


def test_the_rate_of_writes_is_bounded(rateable: Rateable) -> None:
    """Writes a page cannot make (no token) do not count; past the bound, 429 with Retry-After."""
    for _ in range(WRITES_PER_WINDOW + 5):
        assert (
            _request(rateable.server, "POST", rateable.path(rateable.row_id(1)), token=ABSENT).status == 403
        )
    for _ in range(WRITES_PER_WINDOW):
        assert _request(rateable.server, "POST", rateable.path(rateable.row_id(1))).status == 200
    rateable_rows = rateable.ratings()
    body = json.dumps({"pass": False, "comment": "one too many"}).encode()
    answer = _request(rateable.server, "POST", rateable.path(rateable.row_id(2)), body)
    assert answer.status == 429
    assert answer.body["error"].startswith(
        f"too many writes: at most {WRITES_PER_WINDOW} in 10 s; try again in"
    )
    assert 1 <= int(answer.headers["retry-after"]) <= 10
    assert rateable.ratings() == rateable_rows  # the refused write stored nothing


def test_a_preflight_is_never_granted(rateable: Rateable) -> None:
    """A cross-origin fetch with the token header asks first; no answer carries a CORS header."""
    preflight = _request(
        rateable.server, "OPTIONS", rateable.path(rateable.row_id(0)), None, origin="http://evil.example",
        extra={"Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "x-evalh-token"},
    )  # fmt: skip
    assert preflight.status == 405
    ok = _request(rateable.server, "POST", rateable.path(rateable.row_id(1)))
    for answer in (preflight, ok):
        assert not any(name.startswith("access-control-") for name in answer.headers)


def test_the_page_carries_the_token_and_the_report_never(rateable: Rateable) -> None:
    page = http.client.HTTPConnection("127.0.0.1", rateable.server.port, timeout=10)
    page.request("GET", "/")
    text = page.getresponse().read().decode()
    page.close()
    assert f'<meta name="evalh-token" content="{rateable.server.token}">' in text
    assert 'name="evalh-read-only"' not in text
    runs = _request(rateable.server, "GET", "/api/runs", None).body
    assert (runs["readOnly"], runs["readOnlyReason"]) == (False, None)
    with open_store() as store:
        unrated = to_html(store.load_run(rateable.run_id))
    # an unrated run's report inlines neither the ratings' script nor the rows' ids: the file it always was
    assert "EV.ratingSection" not in unrated and rateable.row_id(0) not in unrated
    assert _request(rateable.server, "POST", rateable.path(rateable.row_id(0))).status == 200
    with open_store() as store:
        report = store.load_run(rateable.run_id)
    html = to_html(report)
    assert '<meta name="evalh-token" content=' not in html and rateable.server.token not in html
    assert "EV.ratingSection" in html  # the rated run's report shows its ratings (and cannot write)


def _page_text(server: ViewerServer) -> str:
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    connection.request("GET", "/")
    text = connection.getresponse().read().decode()
    connection.close()
    return text


def test_read_only_refuses_every_write(rateable: Rateable) -> None:
    server = ViewerServer(StoredRuns(), read_only=True)
    server.start()
    try:
        for method in ("POST", "DELETE"):  # even with its own token, Origin and JSON
            answer = _request(server, method, rateable.path(rateable.row_id(0)))
            assert answer.status == 405 and answer.headers["allow"] == "GET, HEAD"
            assert answer.body["error"] == (
                "this viewer takes no writes: it was started with --read-only "
                "(start evalh view without it to rate results)"
            )
        text = _page_text(server)
        assert "evalh-token" not in text and "evalh-read-only" not in text  # the page as it always was
        runs = _request(server, "GET", "/api/runs", None).body
        assert runs["readOnly"] is True and "--read-only" in runs["readOnlyReason"]
    finally:
        server.close()
    assert rateable.ratings() == {}


def test_runs_named_on_the_command_line_are_read_only(runs: tuple[Path, Path]) -> None:
    server = ViewerServer(GivenRuns([str(run) for run in runs]))
    server.start()
    try:
        answer = _request(server, "POST", "/api/runs/current.json/rows/x/rating")
        assert answer.status == 405
        assert "evalh runs import FILE" in answer.body["error"]
        text = _page_text(server)
        assert "evalh-token" not in text
        assert (
            '<meta name="evalh-read-only" content="runs named on the command line cannot be rated here'
            in text
        )
    finally:
        server.close()


def test_an_exposed_viewer_takes_no_writes(rateable: Rateable) -> None:
    """On 0.0.0.0 the Host check (which stops DNS rebinding) is off, so writes are off too."""
    server = ViewerServer(StoredRuns(), host="0.0.0.0")
    server.start()
    try:
        answer = _request(
            server, "POST", rateable.path(rateable.row_id(0)), origin=f"http://127.0.0.1:{server.port}"
        )
        assert answer.status == 405 and "other machines reach" in answer.body["error"]
        assert "evalh-token" not in _page_text(server)
    finally:
        server.close()
    assert rateable.ratings() == {}


def test_other_paths_and_methods_stay_refused(rateable: Rateable) -> None:
    for method, path in (("POST", "/api/runs"), ("PUT", rateable.path(rateable.row_id(0))),
                         ("PATCH", rateable.path(rateable.row_id(0))), ("POST", "/"),
                         ("POST", f"/api/runs/{rateable.run_id}/rows/x/rating/more")):  # fmt: skip
        assert _request(rateable.server, method, path).status == 405
    assert rateable.ratings() == {}


def test_a_run_still_recording_cannot_be_rated(rateable: Rateable) -> None:
    with open_store() as store:
        recorder = store.start(
            "eval-live", {"results": {"timestamp": "t"}}, config=None, config_path=None, description=None
        )
        for _ in range(BATCH_ROWS):  # one whole batch: written at once
            recorder.add({"id": "live-row", "success": True, "failureReason": 0, "testCase": {}, "vars": {}})
        answer = _request(rateable.server, "POST", rateable.path("live-row", ref="eval-live"))
        recorder._give_up(OSError("the test is over"))
    assert (answer.status, answer.body["error"]) == (
        409,
        "the run eval-live is still recording: rate it once it has finished",
    )


@pytest.mark.parametrize(("flags", "status"), [(["--read-only"], 405), ([], 403)])
def test_evalh_view_read_only(rateable: Rateable, flags: list[str], status: int) -> None:
    """`evalh view --read-only` as a real process: every write 405 (without the flag, a write without the
    token is 403: the viewer takes writes)."""
    process, url = _serve(*flags, runs=1)
    try:
        port = int(url.rstrip("/").rsplit(":", 1)[1])
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        headers = {"Origin": f"http://127.0.0.1:{port}", "Content-Type": "application/json"}
        connection.request("POST", rateable.path(rateable.row_id(0)), b'{"pass": true}', headers)
        answer = connection.getresponse()
        assert answer.status == status, answer.read()
        connection.close()
    finally:
        code, _out, err = _stop(process)
    assert code == 0 and "Traceback" not in err
    assert rateable.ratings() == {}
