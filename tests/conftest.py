"""Fixtures shared by every test package."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from evalh.secrets import clear_registry
from tests.loopback import LoopbackServer

# A shell without job control starts background commands with SIGINT ignored, and an ignored signal
# stays ignored across exec: every `evalh` the Ctrl-C tests start would then keep ignoring Ctrl-C, as
# a well-behaved Unix program must. Give pytest, and so its children, the ordinary Ctrl-C.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture
def loopback() -> Iterator[LoopbackServer]:
    """A real HTTP server on 127.0.0.1 with scripted routes; see tests/loopback.py."""
    server = LoopbackServer()
    try:
        yield server
    finally:
        server.close()


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test gets its own embedding/completion cache directory, never the user's."""
    monkeypatch.setenv("EVALH_CACHE_DIR", str(tmp_path / "evalh-cache"))


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test gets its own run store ($EVALH_HOME), never the user's ~/.evalh."""
    monkeypatch.setenv("EVALH_HOME", str(tmp_path / "evalh-home"))


@pytest.fixture(autouse=True)
def _no_inherited_terminal_size(monkeypatch: pytest.MonkeyPatch) -> None:
    """evalh wraps to ``COLUMNS`` when it is set; the runner's own (pytest-xdist workers get 80, a
    developer may export one) must not reflow the output tests read. A test wanting a width sets it."""
    monkeypatch.delenv("COLUMNS", raising=False)
    monkeypatch.delenv("LINES", raising=False)


@pytest.fixture(autouse=True)
def _fresh_secret_registry() -> Iterator[None]:
    """Secret values registered by one test (run-scoped in evalh) are not redacted in the next."""
    yield
    clear_registry()
