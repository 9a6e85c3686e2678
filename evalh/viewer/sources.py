"""Where the viewer's runs come from: JSON report files given on the command line.

A source lists run summaries (newest first) and gives one run as the viewer's data
(:func:`evalh.reports.viewdata.run_view`) by its ref. Runs are read-only; a file is read once, when the
viewer starts, so a broken file is a clear error before anything is served.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

from evalh.errors import ConfigError
from evalh.reports.viewdata import run_view

__all__ = ["ReportFiles", "RunSource", "UnknownRun"]


class UnknownRun(LookupError):
    """No run has this ref."""


class RunSource(Protocol):
    def runs(self) -> list[dict[str, Any]]:
        """Every run's summary (``run_view(...)["run"]``), newest first."""
        ...

    def view(self, ref: str) -> dict[str, Any]:
        """One run as the viewer's data; :class:`UnknownRun` when no run has ``ref``."""
        ...


def _read_report(path: Path) -> Mapping[str, Any]:
    hint = "Give JSON reports written by `evalh run -o FILE.json` (or promptfoo's -o output)."
    try:
        report = json.loads(path.read_bytes())
    except OSError as error:
        raise ConfigError(
            f"cannot read the report: {error.strerror or error}", where=str(path), hint=hint
        ) from None
    except ValueError as error:
        raise ConfigError(f"not JSON: {error}", where=str(path), hint=hint) from None
    results = report.get("results") if isinstance(report, dict) else None
    if not isinstance(results, dict) or not isinstance(results.get("results"), list):
        raise ConfigError("not a JSON report: it has no results.results list", where=str(path), hint=hint)
    document: Mapping[str, Any] = report
    return document


def _refs(paths: Sequence[Path]) -> list[str]:
    """A short ref per file: its name, or its path where two files share a name."""
    names = [path.name for path in paths]
    return [path.name if names.count(path.name) == 1 else str(path) for path in paths]


class ReportFiles:
    """The runs of the JSON report files given, read once."""

    def __init__(self, paths: Sequence[Path]) -> None:
        views = [run_view(_read_report(path), ref) for path, ref in zip(paths, _refs(paths), strict=True)]
        # Newest first, as the history lists runs; runs of the same second (timestamps have no fraction)
        # keep the command line's order, oldest first, so `evalh view old.json new.json` reads naturally.
        order = sorted(
            range(len(views)), key=lambda i: (str(views[i]["run"]["timestamp"] or ""), i), reverse=True
        )
        self._views = {views[i]["run"]["ref"]: views[i] for i in order}

    def runs(self) -> list[dict[str, Any]]:
        return [view["run"] for view in self._views.values()]

    def view(self, ref: str) -> dict[str, Any]:
        try:
            return self._views[ref]
        except KeyError:
            raise UnknownRun(ref) from None
