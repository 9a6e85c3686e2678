"""Where the viewer's runs come from: the run store (``evalh view``), or the runs named on the command
line (``evalh view results.json latest~1``: JSON report files or stored runs, as ``evalh diff`` takes
them).

A source lists run summaries (newest first), gives one run as the viewer's data
(:func:`evalh.reports.viewdata.run_view`) a page of lines at a time, and its rows (for comparisons), by
ref. The run store's runs can be rated (:class:`RatingWriter`); runs named on the command line are
read-only (:data:`NAMED_RUNS_READ_ONLY` says why, on the page).
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from evalh.errors import ConfigError
from evalh.reports import viewdata
from evalh.reports.viewdata import run_view
from evalh.store import RunStore, RunSummary, is_report_file, load_report, open_store
from evalh.store.compare import RunRows
from evalh.viewer.compare import ComparedRun
from evalh.viewer.pages import LineIndex, index_stored_run, page_of_view

__all__ = [
    "NAMED_RUNS_READ_ONLY",
    "GivenRuns",
    "RatingWriter",
    "RunSource",
    "StillRecording",
    "StoredRuns",
    "UnknownRun",
]

NAMED_RUNS_READ_ONLY = (
    "runs named on the command line cannot be rated here: to rate one, import it (evalh runs import "
    "FILE) and open evalh view without naming runs"
)


class UnknownRun(LookupError):
    """No run has this ref."""


class StillRecording(Exception):
    """The run is still recording: it cannot be rated yet."""


class RunSource(Protocol):
    def runs(self) -> list[dict[str, Any]]:
        """Every run's summary (the shape of ``run_view(...)["run"]``), newest first."""
        ...

    def page(self, ref: str, offset: int, limit: int) -> dict[str, Any]:
        """Lines ``offset`` to ``offset + limit`` of a run's viewer data (:mod:`evalh.viewer.pages`);
        :class:`UnknownRun` when no run has ``ref``."""
        ...

    def rows(self, ref: str) -> AbstractContextManager[ComparedRun]:
        """One run, for a comparison; :class:`UnknownRun` when no run has ``ref``."""
        ...


@runtime_checkable
class RatingWriter(Protocol):
    """A source whose runs can be rated (the run store's)."""

    def rate(
        self, ref: str, row_id: str, *, passed: bool, score: float | None, comment: str
    ) -> dict[str, Any]:
        """Rate the row ``row_id`` of run ``ref`` (its ``id`` in the JSON report): the rating's JSON;
        :class:`UnknownRun` when no run has ``ref``, :class:`StillRecording` when it is recording, the
        store's error (an EvalhError) when the row is not there."""
        ...

    def clear_rating(self, ref: str, row_id: str) -> bool:
        """Clear the row's rating (its graded verdict is back): whether it had one."""
        ...


def _summary(run: RunSummary) -> dict[str, Any]:
    """A stored run's summary in the viewer's shape, without reading its rows."""
    return {
        "ref": run.id,
        "evalId": run.id,
        "description": run.description or "",
        "name": viewdata.run_name(run.description, run.config_path, run.id),
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


RatingsStamp = tuple[tuple[str, bool, float], ...]


def _ratings_stamp(store: RunStore, run_id: str) -> RatingsStamp:
    """What of a run's ratings its line index depends on (each verdict and score): a rating made since
    the index was read, here or by another process (`evalh runs rate`), changes its counts and figures."""
    return tuple(sorted((row_id, r.passed, r.score) for row_id, r in store.ratings(run_id).items()))


class StoredRuns:
    """The run store's runs. A finished run's line index is kept once read, until its ratings change;
    a run still recording is read anew. Rows are read from the store a page at a time, never a whole run."""

    def __init__(self) -> None:
        self._indexes: dict[str, tuple[RatingsStamp, LineIndex]] = {}
        self._lock = threading.Lock()

    def runs(self) -> list[dict[str, Any]]:
        with open_store() as store:
            return [_summary(run) for run in store.list_runs()]

    def page(self, ref: str, offset: int, limit: int) -> dict[str, Any]:
        with _known(ref), open_store() as store:
            summary = store.resolve(ref)
            stamp = _ratings_stamp(store, summary.id)  # read first: a rating made meanwhile reads anew
            with self._lock:
                kept = self._indexes.get(summary.id)
            index = kept[1] if kept is not None and kept[0] == stamp else None
            if index is None:
                index = index_stored_run(store, summary.id)
                if summary.state != "running":  # a finished run's rows never change, its ratings may
                    with self._lock:
                        self._indexes[summary.id] = (stamp, index)
            return index.page(store, offset, limit)

    def rate(
        self, ref: str, row_id: str, *, passed: bool, score: float | None, comment: str
    ) -> dict[str, Any]:
        with open_store() as store:
            run_id = self._resolve(store, ref)
            try:
                rating = store.rate(run_id, row_id, passed=passed, score=score, comment=comment)
            finally:  # its verdicts and counts have changed: its line index is read again
                self._forget(run_id)
        return rating.to_json()

    def clear_rating(self, ref: str, row_id: str) -> bool:
        with open_store() as store:
            run_id = self._resolve(store, ref)
            try:
                return store.clear_rating(run_id, row_id)
            finally:
                self._forget(run_id)

    @staticmethod
    def _resolve(store: RunStore, ref: str) -> str:
        """The id of the run ``ref`` (UnknownRun), one that has finished (StillRecording); the store
        refuses to rate a recording run too, this names the case for the viewer's answer (409)."""
        with _known(ref):
            summary = store.resolve(ref)
        if summary.state == "running":
            raise StillRecording(summary.id)
        return summary.id

    def _forget(self, run_id: str) -> None:
        with self._lock:
            self._indexes.pop(run_id, None)

    @contextmanager
    def rows(self, ref: str) -> Iterator[ComparedRun]:
        with _known(ref), open_store() as store:
            summary = store.resolve(ref)
            head = {**store.load_head(summary.id), "config": {"description": summary.description}}
            rows = _StoredRows(store, summary.id)
            yield ComparedRun(head, RunRows(summary.id, rows), summary.config_path)


class _StoredRows:
    """A stored run's rows, read from the store anew (one at a time) each time they are iterated."""

    def __init__(self, store: RunStore, run_id: str) -> None:
        self._store = store
        self._run_id = run_id

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return self._store.iter_rows(self._run_id)


@contextmanager
def _known(ref: str) -> Iterator[None]:
    """The store's "no run 'x'" (or an ambiguous prefix) as :class:`UnknownRun`."""
    try:
        yield
    except ConfigError:
        raise UnknownRun(ref) from None


class GivenRuns:
    """The runs named on the command line, each read once at start (so a bad name is an error before
    anything is served): a report file is known by its name, a stored run by its id."""

    def __init__(self, refs: Sequence[str]) -> None:
        loaders = [(ref, functools.partial(load_report, ref, where="evalh view")) for ref in refs]
        reports = [load() for _, load in loaders]
        names = _names([ref for ref, _ in loaders], reports)
        sources = [_source_file(ref) for ref, _ in loaders]
        views = [run_view(report, name) for report, name in zip(reports, names, strict=True)]
        for view, source in zip(views, sources, strict=True):  # a stored run is named by its config
            view["run"]["name"] = viewdata.run_name(view["run"]["description"], source, view["run"]["ref"])
        # Newest first, as the history lists runs; runs of the same second (timestamps have no fraction)
        # keep the command line's order, oldest first, so `evalh view old.json new.json` reads naturally.
        order = sorted(
            range(len(views)), key=lambda i: (str(views[i]["run"]["timestamp"] or ""), i), reverse=True
        )
        self._views = {names[i]: views[i] for i in order}
        self._loaders = {names[i]: loaders[i][1] for i in order}
        self._sources = {names[i]: sources[i] for i in order}

    def runs(self) -> list[dict[str, Any]]:
        return [view["run"] for view in self._views.values()]

    def page(self, ref: str, offset: int, limit: int) -> dict[str, Any]:
        if ref not in self._views:
            raise UnknownRun(ref)
        return page_of_view(self._views[ref], offset, limit)

    @contextmanager
    def rows(self, ref: str) -> Iterator[ComparedRun]:
        """Read again when asked (a comparison), rather than kept: a large run's report is big."""
        if ref not in self._loaders:
            raise UnknownRun(ref)
        report = self._loaders[ref]()
        rows = RunRows(str(report.get("evalId") or "?"), report["results"]["results"])
        yield ComparedRun(report, rows, self._sources[ref])


def _source_file(ref: str) -> str | None:
    """The file that names a run without a description: a report file itself, a stored run's config."""
    if is_report_file(ref):
        return ref
    with _known(ref), open_store() as store:
        return store.resolve(ref).config_path


def _names(refs: Sequence[str], reports: Sequence[dict[str, Any]]) -> list[str]:
    """A short ref per run: a file's name (its path where two files share a name), a stored run's id."""
    names = [
        Path(ref).name if is_report_file(ref) else str(report.get("evalId") or ref)
        for ref, report in zip(refs, reports, strict=True)
    ]
    return [name if names.count(name) == 1 else ref for name, ref in zip(names, refs, strict=True)]
