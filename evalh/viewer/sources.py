"""Where the viewer's runs come from: the run store (``evalh view``), or the runs named on the command
line (``evalh view results.json latest~1``: JSON report files or stored runs, as ``evalh diff`` takes
them).

A source lists run summaries (newest first), gives one run as the viewer's data
(:func:`evalh.reports.viewdata.run_view`) and as its JSON report (for comparisons), by ref. Runs are
read-only.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

from evalh.errors import ConfigError
from evalh.reports.viewdata import run_view
from evalh.store import RunSummary, is_report_file, load_report, open_store

__all__ = ["GivenRuns", "RunSource", "StoredRuns", "UnknownRun"]


class UnknownRun(LookupError):
    """No run has this ref."""


class RunSource(Protocol):
    def runs(self) -> list[dict[str, Any]]:
        """Every run's summary (the shape of ``run_view(...)["run"]``), newest first."""
        ...

    def view(self, ref: str) -> dict[str, Any]:
        """One run as the viewer's data; :class:`UnknownRun` when no run has ``ref``."""
        ...

    def report(self, ref: str) -> dict[str, Any]:
        """One run as its JSON report; :class:`UnknownRun` when no run has ``ref``."""
        ...


def _summary(run: RunSummary) -> dict[str, Any]:
    """A stored run's summary in the viewer's shape, without reading its rows."""
    return {
        "ref": run.id,
        "evalId": run.id,
        "description": run.description or "",
        "timestamp": run.created_at,
        "passed": run.passed,
        "failed": run.failed,
        "errors": run.errors,
        "rows": run.rows,
        "passRate": run.pass_rate,
        "durationMs": run.duration_ms or 0.0,
        "interrupted": run.state == "interrupted",
        "interruptedBy": None,
        "notRun": 0,
        "state": run.state,
    }


class StoredRuns:
    """The run store's runs. A finished run's data is kept once read; a run still recording is read anew."""

    def __init__(self) -> None:
        self._views: dict[str, dict[str, Any]] = {}
        self._lock = threading.Lock()

    def runs(self) -> list[dict[str, Any]]:
        with open_store() as store:
            return [_summary(run) for run in store.list_runs()]

    def report(self, ref: str) -> dict[str, Any]:
        try:
            with open_store() as store:
                return store.load_run(ref)
        except ConfigError:  # the store's "no run 'x'" (or an ambiguous prefix)
            raise UnknownRun(ref) from None

    def view(self, ref: str) -> dict[str, Any]:
        with self._lock:
            if ref in self._views:
                return self._views[ref]
        report = self.report(ref)
        run_id = str(report.get("evalId") or ref)
        view = run_view(report, run_id)
        state = (report.get("results") or {}).get("evalh", {}).get("store", {}).get("state")
        if state != "running" and ref == run_id:  # latest~N moves; an id names one run for good
            with self._lock:
                self._views[ref] = view
        return view


class GivenRuns:
    """The runs named on the command line, each read once at start (so a bad name is an error before
    anything is served): a report file is known by its name, a stored run by its id."""

    def __init__(self, refs: Sequence[str]) -> None:
        loaders = [(ref, functools.partial(load_report, ref, where="evalh view")) for ref in refs]
        reports = [load() for _, load in loaders]
        names = _names([ref for ref, _ in loaders], reports)
        views = [run_view(report, name) for report, name in zip(reports, names, strict=True)]
        # Newest first, as the history lists runs; runs of the same second (timestamps have no fraction)
        # keep the command line's order, oldest first, so `evalh view old.json new.json` reads naturally.
        order = sorted(
            range(len(views)), key=lambda i: (str(views[i]["run"]["timestamp"] or ""), i), reverse=True
        )
        self._views = {names[i]: views[i] for i in order}
        self._loaders = {names[i]: loaders[i][1] for i in order}

    def runs(self) -> list[dict[str, Any]]:
        return [view["run"] for view in self._views.values()]

    def view(self, ref: str) -> dict[str, Any]:
        try:
            return self._views[ref]
        except KeyError:
            raise UnknownRun(ref) from None

    def report(self, ref: str) -> dict[str, Any]:
        """Read again when asked (a comparison), rather than kept: a large run's report is big."""
        if ref not in self._loaders:
            raise UnknownRun(ref)
        return self._loaders[ref]()


def _names(refs: Sequence[str], reports: Sequence[dict[str, Any]]) -> list[str]:
    """A short ref per run: a file's name (its path where two files share a name), a stored run's id."""
    names = [
        Path(ref).name if is_report_file(ref) else str(report.get("evalId") or ref)
        for ref, report in zip(refs, reports, strict=True)
    ]
    return [name if names.count(name) == 1 else ref for name, ref in zip(names, refs, strict=True)]
