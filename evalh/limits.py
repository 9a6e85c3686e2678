"""Upper bounds of a run's size: ``--repeat`` / ``evaluateOptions.repeat`` and ``-j`` / ``maxConcurrency``.

Beyond them a run is a typo, not a plan, and would exhaust memory or sockets before any call. The config
schema says the same (a test checks). A leaf of its own so the command line can declare its options
without importing the model (``evalh --help`` stays fast).
"""

from __future__ import annotations

__all__ = ["MAX_CONCURRENCY", "MAX_REPEAT"]

MAX_REPEAT = 10_000
MAX_CONCURRENCY = 1_000
