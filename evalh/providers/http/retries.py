"""When a failed attempt is retried, how long to wait first, and what the final failure says.

429 (and any 5xx that carries them) waits what the server asks (:mod:`.replies`); otherwise 5xx,
connection errors and timeouts back off exponentially with jitter (``base * 2**(n-1) * (0.5 +
random/2)``, at most the maximum delay). At most ``max_retries`` retries; the sleeps of one call never add
up to more than ``max_total_wait_s``, and no attempt starts after the call's total deadline.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass

from tenacity import RetryCallState

__all__ = ["Deadline", "RetryableError", "backoff_s", "exhausted_message", "out_of_budget"]


class RetryableError(Exception):
    """One failed attempt worth retrying; ``wait_s`` is what the server asked for, if anything."""

    def __init__(
        self, message: str, *, status: int | None = None, wait_s: float | None = None, timed_out: bool = False
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.wait_s = wait_s
        self.timed_out = timed_out


@dataclass
class Deadline:
    """When one call (all its attempts) must be over, and whether that is why it failed."""

    at: float
    passed: bool = False


def backoff_s(state: RetryCallState, base_delay_s: float, max_delay_s: float) -> float:
    """The wait before the next attempt: the server's, else exponential backoff with jitter."""
    error = state.outcome.exception() if state.outcome else None
    if isinstance(error, RetryableError) and error.wait_s is not None:
        return max(0.0, error.wait_s)
    backoff = base_delay_s * 2.0 ** (state.attempt_number - 1)
    return min(max_delay_s, backoff) * (0.5 + random.random() / 2)


def out_of_budget(
    state: RetryCallState, deadline: Deadline, max_retries: int, max_total_wait_s: float
) -> bool:
    """True when no further attempt may start: retries, total wait or the deadline are used up."""
    if state.attempt_number > max_retries:
        return True
    upcoming = state.upcoming_sleep or 0.0
    if time.perf_counter() + upcoming >= deadline.at:  # no time left for another attempt
        deadline.passed = True
        return True
    return state.idle_for + upcoming > max_total_wait_s


def exhausted_message(
    error: RetryableError,
    attempts: int,
    deadline: Deadline,
    *,
    request: str,
    total_s: float,
    timeout_s: float,
) -> str:
    """The failure after the last attempt; ``request`` is ``"POST https://host/path"``."""
    if deadline.passed:
        return (
            f"{request} did not answer within the call's total deadline of {total_s:g} s "
            f"({attempts} attempt{'s' if attempts > 1 else ''} of at most {timeout_s:g} s; "
            f"last: {error.message}); set totalTimeout or timeout to change it"
        )
    return f"{error.message} after {attempts} attempts" if attempts > 1 else error.message
