"""Hostile writes to `evalh view` that once dropped the connection with a traceback on the terminal (or
held a thread for ever): each is now a clear 4xx answer that stores nothing, or a closed connection."""

from __future__ import annotations

import http.client
import socket
import sqlite3

import pytest

from evalh.store import database, store_path
from evalh.viewer import server as server_module
from tests.viewer import test_server_ratings
from tests.viewer.test_server_ratings import Rateable, _refused

served = test_server_ratings.rateable  # the fixture, by this name here


def _raw(served: Rateable, head: str, body: bytes) -> bytes:
    """The whole answer to a request sent byte for byte (``head``: its headers, after the method line)."""
    port = served.server.port
    request = (
        f"POST {served.path(served.row_id(1))} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
        f"Origin: http://127.0.0.1:{port}\r\nX-Evalh-Token: {served.server.token}\r\n"
        f"Content-Type: application/json\r\n{head}\r\n"
    )
    with socket.create_connection(("127.0.0.1", port), timeout=60) as connection:
        connection.sendall(request.encode("latin-1") + body)
        answer = b""
        while chunk := connection.recv(1 << 16):
            answer += chunk
    return answer


@pytest.mark.parametrize("length", ["\xb2", "\xb9", "\xb3"])
def test_a_content_length_in_superscript_digits_is_refused(served: Rateable, length: str) -> None:
    """ "²" is a digit to str.isdigit but no number to int(): it was a ValueError and a dropped connection."""
    answer = _raw(served, f"Content-Length: {length}\r\n", b'{"pass": true}')
    assert answer.startswith(b"HTTP/1.0 400 "), answer[:200]
    assert b"Content-Length is a whole number of bytes" in answer
    assert served.ratings() == {}


def test_json_nested_too_deep_is_refused(served: Rateable) -> None:
    """A body of 5,000 nested arrays: json.loads raised RecursionError, which nothing caught."""
    _refused(served, 400, "nested too deep", body=b"[" * 5000 + b"]" * 5000)


def test_a_comment_with_a_lone_surrogate_is_refused(served: Rateable) -> None:
    """JSON may spell a lone surrogate; the store cannot hold it (it was a UnicodeEncodeError)."""
    _refused(
        served,
        400,
        '"comment" is text: it holds a lone surrogate',
        body=b'{"pass": true, "comment": "a\\ud800"}',
    )


def test_a_stalled_body_does_not_hold_the_connection_for_ever(
    served: Rateable, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A client that sends fewer bytes than its Content-Length says, then waits: the server gives up on it
    and closes the connection (it used to wait for ever, one thread per such client)."""
    assert server_module._Handler.timeout is not None  # the bound (30 s); lowered here so the test is quick
    monkeypatch.setattr(server_module._Handler, "timeout", 1)
    assert _raw(served, "Content-Length: 15\r\n", b'{"pass": true}') == b""
    assert served.ratings() == {}


def _ipv6_loopback() -> bool:
    try:
        with socket.socket(socket.AF_INET6) as probe:
            probe.bind(("::1", 0))
    except OSError:
        return False
    return True


@pytest.mark.skipif(not _ipv6_loopback(), reason="this machine has no IPv6 loopback (::1)")
def test_an_ipv6_loopback_viewer_binds_and_writes_only_from_its_own_origin(
    served: Rateable,
) -> None:
    """`evalh view --host ::1` could not bind at all (an IPv4 socket): it now serves, checks its Host
    ([::1]:PORT) and takes writes from its own origin only."""
    from evalh.viewer.server import ViewerServer
    from evalh.viewer.sources import StoredRuns

    server = ViewerServer(StoredRuns(), "::1")
    server.start()
    try:
        own = f"[::1]:{server.port}"
        assert server.url == f"http://{own}/" and server.read_only is None
        path = served.path(served.row_id(1))
        for host, origin, status in (
            (own, f"http://{own}", 200),
            (own, f"http://127.0.0.1:{server.port}", 403),
            (f"127.0.0.1:{server.port}", f"http://127.0.0.1:{server.port}", 403),
        ):
            connection = http.client.HTTPConnection("::1", server.port, timeout=30)
            headers = {"Host": host, "Origin": origin, "X-Evalh-Token": server.token}
            connection.request(
                "POST", path, b'{"pass": false}', {**headers, "Content-Type": "application/json"}
            )
            assert connection.getresponse().status == status, (host, origin)
            connection.close()
    finally:
        server.close()
    assert set(served.ratings()) == {served.row_id(1)}


def test_a_write_while_the_store_is_locked_is_503_not_404(
    served: Rateable, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another process holds the run store's write lock past the wait: the answer says the store cannot be
    used now (503), where it said 404, as if the row were not there."""
    monkeypatch.setattr(database, "BUSY_TIMEOUT_S", 0.05)
    holder = sqlite3.connect(store_path(), isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        answer = _refused(served, 503, "database is locked")
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert "no row with id" not in answer.body["error"]
