"""A run reference or a JSON report file, read as one JSON report dict (for diff, import, the viewer).

``REF`` is a JSON report file when it names an existing file or ends in ``.json``; otherwise a stored
run (``latest``, ``latest~N``, a run id or its prefix).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from evalh.runner.report_file import read_report_file
from evalh.store.runs import RunStore, open_store

__all__ = ["is_report_file", "load_report", "read_report_file"]


def is_report_file(ref: str) -> bool:
    """A path rather than a run reference: a ``.json`` name, or anything but a directory there (a device
    or a FIFO is then refused as a report, not looked up as a run id)."""
    if ref.lower().endswith(".json"):
        return True
    try:
        path = Path(ref)
        return path.exists() and not path.is_dir()
    except (OSError, ValueError):  # a NUL, a name too long: not a file, so a run reference
        return False


def load_report(ref: str, store: RunStore | None = None, *, where: str | None = None) -> dict[str, Any]:
    """The JSON report ``ref`` names: a report file, or a run of ``store`` (default: the user's)."""
    if is_report_file(ref):
        return read_report_file(Path(ref), where=where)
    if store is not None:
        return store.load_run(ref)
    with open_store() as opened:
        return opened.load_run(ref)
