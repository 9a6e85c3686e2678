"""Whether a process is gone, for tests that check evalh killed what it started."""

from __future__ import annotations

import os
import time
from pathlib import Path

__all__ = ["ends", "gone"]


def gone(pid: int) -> bool:
    """True when ``pid`` no longer runs. A killed orphan stays a zombie until init reaps it, which a
    container's init may do late or never: a zombie counts as gone."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    stat = Path(f"/proc/{pid}/stat")
    try:
        state = stat.read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return not stat.parent.exists() and Path("/proc/self").exists()
    return state in ("Z", "X")


def ends(pid: int) -> bool:
    """Whether ``pid`` is gone within a few seconds: a SIGKILL takes effect when the process is next
    scheduled, which is soon but not at once."""
    for _ in range(1000):
        if gone(pid):
            return True
        time.sleep(0.01)
    return False
