"""Upper bounds of a run's size: ``--repeat`` / ``evaluateOptions.repeat``, ``-j`` / ``maxConcurrency`` and
the N of ``--shard i/N``.

Beyond them a run is a typo, not a plan, and would exhaust memory or sockets before any call. The config
schema says the same (a test checks). A leaf of its own so the command line can declare its options
without importing the model (``evalh --help`` stays fast).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["MAX_CONCURRENCY", "MAX_REPEAT", "MAX_SHARDS", "RUN_OPTION_BOUNDS", "Bound"]

MAX_REPEAT = 10_000
MAX_CONCURRENCY = 1_000
# GitHub Actions runs at most 256 jobs of a matrix, GitLab at most 200 copies of a parallel: job; a
# report claiming more shards is not one (merge would list millions of missing shares).
MAX_SHARDS = 1_000


@dataclass(frozen=True)
class Bound:
    """The whole numbers a run option takes, and its command-line flag (what a message names)."""

    flag: str
    low: int
    high: int

    def problem(self, value: object) -> str | None:
        """What is wrong with ``value`` for this option ("must be ... (got -5)"), or None."""
        if isinstance(value, int) and not isinstance(value, bool) and self.low <= value <= self.high:
            return None
        return f"must be a whole number from {self.low:,} to {self.high:,} (got {value!r})"


# evaluate()'s numbers, with the bounds of `evalh run`'s flags (which declare them from here too).
RUN_OPTION_BOUNDS = {
    "max_concurrency": Bound("--max-concurrency / -j", 1, MAX_CONCURRENCY),
    "repeat": Bound("--repeat", 1, MAX_REPEAT),
}
