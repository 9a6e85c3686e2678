"""Upper bounds of a run's size: ``--repeat`` / ``evaluateOptions.repeat``, ``-j`` / ``maxConcurrency`` and
the N of ``--shard i/N``.

Beyond them a run is a typo, not a plan, and would exhaust memory or sockets before any call. The config
schema says the same (a test checks). A leaf of its own so the command line can declare its options
without importing the model (``evalh --help`` stays fast).
"""

from __future__ import annotations

__all__ = ["MAX_CONCURRENCY", "MAX_REPEAT", "MAX_SHARDS"]

MAX_REPEAT = 10_000
MAX_CONCURRENCY = 1_000
# GitHub Actions runs at most 256 jobs of a matrix, GitLab at most 200 copies of a parallel: job; a
# report claiming more shards is not one (merge would list millions of missing shares).
MAX_SHARDS = 1_000
