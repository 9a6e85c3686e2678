"""The time limit of user code, as one exception every runtime raises (a leaf: a regex search imports it
without the process machinery of evalh/runtimes/processes.py, which re-exports it)."""

from __future__ import annotations

__all__ = ["TimedOut"]


class TimedOut(Exception):
    """User code did not finish within ``seconds``; what ran it was killed."""

    def __init__(self, seconds: float) -> None:
        super().__init__(f"timed out after {seconds:g} s")
        self.seconds = seconds
