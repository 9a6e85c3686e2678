"""A server that accepts and never answers costs one bounded wait: the whole call, retries included,
has a total deadline, and the error names the endpoint (without secrets) and the deadline."""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from evalh.errors import ConfigError, ProviderHTTPError
from evalh.model import ProviderSpec
from evalh.providers.http import HttpClient, HttpSettings

SECRET = "sk-deadline-0123456789"


class SilentServer:
    """Accepts connections, reads nothing, answers nothing; counts the connections."""

    def __init__(self) -> None:
        self.socket = socket.create_server(("127.0.0.1", 0))
        self.port = self.socket.getsockname()[1]
        self.accepted: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                connection, _ = self.socket.accept()
            except OSError:
                return
            self.accepted.append(connection)

    def close(self) -> None:
        self.socket.close()
        for connection in self.accepted:
            connection.close()


@pytest.fixture
def silent() -> Iterator[SilentServer]:
    server = SilentServer()
    try:
        yield server
    finally:
        server.close()


def call(http: HttpClient) -> ProviderHTTPError:
    async def go() -> Any:
        try:
            return await http.post_json("chat/completions", {"x": 1})
        finally:
            await http.aclose()

    with pytest.raises(ProviderHTTPError) as caught:
        asyncio.run(go())
    return caught.value


def test_a_hanging_server_fails_at_the_total_deadline_naming_the_endpoint(silent: SilentServer) -> None:
    spec = ProviderSpec(
        id="openai:chat:m",
        config={"timeoutMs": 300, "totalTimeoutMs": 1000, "maxRetries": 20, "retryBaseDelayS": 0.01},
    )
    http = HttpClient.for_spec(spec, base_url=f"http://user:{SECRET}@127.0.0.1:{silent.port}/v1")
    error = call(http)
    message = str(error)
    assert f"POST http://127.0.0.1:{silent.port}/v1/chat/completions did not answer" in message
    assert "within the call's total deadline of 1 s" in message
    assert SECRET not in message
    assert 2 <= error.attempts < 21  # the deadline, not maxRetries, ended it
    assert len(silent.accepted) == error.attempts
    assert error.status is None


def test_the_default_deadline_is_never_shorter_than_one_attempt(silent: SilentServer) -> None:
    http = HttpClient(
        provider_id="p", base_url=f"http://127.0.0.1:{silent.port}", timeout_s=0.3, max_retries=0
    )
    error = call(http)
    assert "timed out after 0.3 s" in str(error)
    assert "deadline" not in str(error)  # maxRetries ended it
    assert error.attempts == 1


def test_deadline_settings_are_read_and_checked() -> None:
    assert HttpSettings.from_config({}).total_timeout_s is None
    assert HttpSettings.from_config({"totalTimeout": 90}).total_timeout_s == 90.0
    assert HttpSettings.from_config({"totalTimeoutMs": 2500}).total_timeout_s == 2.5
    with pytest.raises(
        ConfigError, match=r"^providers\[1\]\.config\.totalTimeoutMs: config\.totalTimeoutMs must"
    ):
        HttpSettings.from_config({"totalTimeoutMs": "never"}, where="providers[1]")
