"""The viewer's server over real sockets: what it serves, what it refuses, and its headers."""

from __future__ import annotations

import http.client
import json
from pathlib import Path

import httpx
import pytest

from evalh.errors import ConfigError
from evalh.viewer.server import CONTENT_SECURITY_POLICY, ViewerServer, is_loopback
from evalh.viewer.sources import GivenRuns


def _get(server: ViewerServer, path: str, host: str | None = None) -> http.client.HTTPResponse:
    """A raw request: the path is sent exactly as written (httpx would normalise ``..``)."""
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    connection.putrequest("GET", path, skip_host=True)
    connection.putheader("Host", host or f"127.0.0.1:{server.port}")
    connection.endheaders()
    response = connection.getresponse()
    response.read()
    connection.close()
    return response


def test_runs_newest_first_and_one_run(viewer: ViewerServer) -> None:
    runs = httpx.get(viewer.url + "api/runs").json()["runs"]
    assert [run["ref"] for run in runs] == ["current.json", "baseline.json"]
    assert runs[0]["description"] == "Viewer fixture current" and runs[0]["failed"] == 4
    view = httpx.get(viewer.url + "api/runs/current.json").json()
    assert [column["label"] for column in view["columns"]] == ["[echo] greet", "[echo] hi"]
    assert view["lines"][0]["cells"][0]["reason"].startswith("icontains: Output does not contain 'Adeline'")


def test_compare(viewer: ViewerServer) -> None:
    """`evalh diff`'s comparison (evalh.store.compare), with column labels and the runs' summaries."""
    params = {"baseline": "baseline.json", "current": "current.json"}
    diff = httpx.get(viewer.url + "api/compare", params=params).json()
    counts = {
        group: len(diff[group]) for group in ("regressions", "newFailures", "fixes", "added", "removed")
    }
    assert counts == {"regressions": 2, "newFailures": 0, "fixes": 2, "added": 0, "removed": 0}
    assert diff["unchanged"] == 4
    assert sorted(change["column"] for change in diff["regressions"]) == ["[echo] greet", "[echo] hi"]
    assert {change["test"] for change in diff["regressions"]} == {"greets Ada"}
    assert (diff["baseline"]["ref"], diff["current"]["description"]) == (
        "baseline.json",
        "Viewer fixture current",
    )
    missing = httpx.get(viewer.url + "api/compare", params={**params, "current": "nope.json"})
    assert missing.status_code == 404


def test_page_and_assets_with_a_strict_policy(viewer: ViewerServer) -> None:
    page = httpx.get(viewer.url)
    assert page.headers["content-type"] == "text/html; charset=utf-8"
    assert page.headers["content-security-policy"] == CONTENT_SECURITY_POLICY
    assert (
        "'unsafe-inline'" not in CONTENT_SECURITY_POLICY
        and "frame-ancestors 'none'" in CONTENT_SECURITY_POLICY
    )
    assert page.headers["x-content-type-options"] == "nosniff"
    assert '<script src="/static/evalh.js">' in page.text
    script = httpx.get(viewer.url + "static/evalh.js")
    assert script.headers["content-type"] == "text/javascript; charset=utf-8" and "EV.route" in script.text
    assert httpx.get(viewer.url + "static/app.css").headers["content-type"] == "text/css; charset=utf-8"


@pytest.mark.parametrize(
    "path",
    [
        "/static/../../pyproject.toml",
        "/static/%2e%2e/%2e%2e/pyproject.toml",
        "/static/..%2f__init__.py",
        "/static/",
        "/static/server.py",
        "/static/app.js",  # served only within evalh.js
        "/../evalh/viewer/server.py",
        "/etc/passwd",
        "/api/runs/..%2F..%2Fpyproject.toml",
        "/api/runs/nope.json",
        "/api/compare?baseline=current.json",
        "/api/compare?baseline=current.json&current=nope",
    ],
)
def test_nothing_else_is_served(viewer: ViewerServer, path: str) -> None:
    assert _get(viewer, path).status == 404


def test_read_only(viewer: ViewerServer) -> None:
    for method in ("POST", "PUT", "DELETE", "PATCH", "OPTIONS"):
        assert httpx.request(method, viewer.url + "api/runs").status_code == 405


def test_a_foreign_host_name_is_refused(viewer: ViewerServer) -> None:
    """A page on evil.example whose name rebinds to 127.0.0.1 cannot read the runs."""
    assert _get(viewer, "/api/runs", host=f"evil.example:{viewer.port}").status == 403
    assert _get(viewer, "/api/runs", host=f"localhost:{viewer.port}").status == 200


def test_exposed_host_takes_any_host_name(runs: tuple[Path, Path]) -> None:
    server = ViewerServer(GivenRuns([str(run) for run in runs]), host="0.0.0.0")
    server.start()
    try:
        assert _get(server, "/api/runs", host=f"my-box.lan:{server.port}").status == 200
    finally:
        server.close()


def test_loopback_addresses() -> None:
    assert [is_loopback(h) for h in ("127.0.0.1", "localhost", "::1", "[::1]", "127.1.2.3")] == [True] * 5
    assert [is_loopback(h) for h in ("0.0.0.0", "192.168.1.2", "::", "example.com")] == [False] * 4


def test_bad_report_files_are_located_errors(tmp_path: Path) -> None:
    (tmp_path / "text.json").write_text("not json", encoding="utf-8")
    (tmp_path / "other.json").write_text(json.dumps({"results": {"stats": {}}}), encoding="utf-8")
    expected = {
        "missing.json": f"evalh view: report not found: {tmp_path / 'missing.json'}",
        "text.json": f"evalh view: {tmp_path / 'text.json'}:1:1: invalid JSON",
        "other.json": f"evalh view: {tmp_path / 'other.json'}: is not an evalh or promptfoo JSON report: "
        "results.results is missing",
    }
    for name, message in expected.items():
        with pytest.raises(ConfigError) as caught:
            GivenRuns([str(tmp_path / name)])
        assert caught.value.render().startswith(message)


def test_an_unknown_stored_run_is_named() -> None:
    with pytest.raises(ConfigError, match="no run 'nope' in the run store"):
        GivenRuns(["nope"])


def test_a_dropped_connection_prints_no_traceback(
    viewer: ViewerServer, capsys: pytest.CaptureFixture[str]
) -> None:
    """A browser that closes a connection mid-reply (a reload) is quiet; a bug in a request still shows."""
    server = viewer._httpd  # the server whose request threads report errors through handle_error
    for dropped in (
        BrokenPipeError(32, "Broken pipe"),
        ConnectionResetError(104, "Connection reset by peer"),
    ):
        try:
            raise dropped
        except ConnectionError:
            server.handle_error(None, ("127.0.0.1", 50000))
    assert capsys.readouterr().err == ""
    try:
        raise ValueError("a bug in a handler")
    except ValueError:
        server.handle_error(None, ("127.0.0.1", 50000))
    assert "ValueError: a bug in a handler" in capsys.readouterr().err
