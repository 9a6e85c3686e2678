"""Upper bounds of a run's size: ``--repeat`` / ``evaluateOptions.repeat``, ``-j`` / ``maxConcurrency``
(and the 0-1 of ``--repeat-pass-rate``),
the N of ``--shard i/N``, and the size of one provider reply.

Beyond them a run is a typo, not a plan, and would exhaust memory or sockets before any call. The config
schema says the same (a test checks). A leaf of its own so the command line can declare its options
without importing the model (``evalh --help`` stays fast).
"""

from __future__ import annotations

from dataclasses import dataclass

from evalh.common.environment import getenv
from evalh.errors import ConfigError

__all__ = [
    "MAX_CONCURRENCY",
    "MAX_REPEAT",
    "MAX_REPLY_ENV",
    "MAX_SHARDS",
    "RUN_OPTION_BOUNDS",
    "Bound",
    "max_reply_bytes",
    "reply_size",
]

MAX_REPEAT = 10_000
MAX_CONCURRENCY = 1_000
# GitHub Actions runs at most 256 jobs of a matrix, GitLab at most 200 copies of a parallel: job; a
# report claiming more shards is not one (merge would list millions of missing shares).
MAX_SHARDS = 1_000

# One provider reply (an HTTP body, decoded; an exec: program's stdout; a python provider's output) is
# read up to this many MiB and no further: a 200 MB reply cost 1.9 GB of memory and a 420 MB report.
# 32 MiB is ~60 times the longest chat answer (128k tokens, ~0.5 MB) and 8 times an embeddings batch of
# 64 texts at 3,072 dimensions; EVALH_MAX_REPLY_MB raises it (a larger embeddings batchSize).
DEFAULT_MAX_REPLY_MB = 32
MAX_REPLY_ENV = "EVALH_MAX_REPLY_MB"


def max_reply_bytes() -> int:
    """The cap on one provider reply, in bytes: ``EVALH_MAX_REPLY_MB`` (a positive number) or 32 MiB."""
    text = getenv(MAX_REPLY_ENV, "").strip()
    if not text:
        return DEFAULT_MAX_REPLY_MB * 1024 * 1024
    try:
        megabytes = float(text)
    except ValueError:
        megabytes = 0.0
    if not 0 < megabytes < 1024 * 1024:
        raise ConfigError(
            f"{MAX_REPLY_ENV}={text!r} is not a size in MiB",
            where=MAX_REPLY_ENV,
            hint=f"Set it to a positive number of MiB (the default is {DEFAULT_MAX_REPLY_MB}), or unset it",
        )
    return max(1, int(megabytes * 1024 * 1024))


def reply_size(limit: int) -> str:
    """``limit`` for a message: ``32 MiB``, ``1.5 MiB``, ``2048 bytes``."""
    if limit < 1024 * 1024:
        return f"{limit} bytes"
    return f"{limit / (1024 * 1024):g} MiB"


@dataclass(frozen=True)
class Bound:
    """The numbers a run option takes (whole ones unless ``whole`` is False), and its command-line flag
    (what a message names)."""

    flag: str
    low: int
    high: int
    whole: bool = True

    def problem(self, value: object) -> str | None:
        """What is wrong with ``value`` for this option ("must be ... (got -5)"), or None."""
        kinds = int if self.whole else int | float
        if isinstance(value, kinds) and not isinstance(value, bool) and self.low <= value <= self.high:
            return None
        kind = "a whole number" if self.whole else "a number"
        return f"must be {kind} from {self.low:,} to {self.high:,} (got {value!r})"


# evaluate()'s numbers, with the bounds of `evalh run`'s flags (which declare them from here too).
RUN_OPTION_BOUNDS = {
    "max_concurrency": Bound("--max-concurrency / -j", 1, MAX_CONCURRENCY),
    "repeat": Bound("--repeat", 1, MAX_REPEAT),
    "repeat_pass_rate": Bound("--repeat-pass-rate", 0, 1, whole=False),
}
