"""A run reference or a JSON report file, read as one JSON report dict (for diff, import, the viewer).

``REF`` is a JSON report file when it names an existing file or ends in ``.json``; otherwise a stored
run (``latest``, ``latest~N``, a run id or its prefix).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from evalh.runner.filters import read_report_file
from evalh.store.compare import RunRows
from evalh.store.runs import RunStore, open_store

__all__ = ["is_report_file", "load_report", "read_report_file", "run_rows"]


def is_report_file(ref: str) -> bool:
    return ref.lower().endswith(".json") or Path(ref).is_file()


def load_report(ref: str, store: RunStore | None = None, *, where: str | None = None) -> dict[str, Any]:
    """The JSON report ``ref`` names: a report file, or a run of ``store`` (default: the user's)."""
    if is_report_file(ref):
        return read_report_file(Path(ref), where=where)
    if store is not None:
        return store.load_run(ref)
    with open_store() as opened:
        return opened.load_run(ref)


def run_rows(ref: str, store: RunStore | None, *, where: str | None = None) -> RunRows:
    """The rows ``ref`` names, for a comparison: a report file's (read whole), or a run of ``store``'s,
    read one at a time as they are compared (``store`` stays open meanwhile; None: only files)."""
    if is_report_file(ref) or store is None:
        document = load_report(ref, where=where)
        return RunRows(str(document.get("evalId") or "?"), document["results"]["results"])
    return RunRows(store.resolve(ref).id, store.iter_rows(ref))
