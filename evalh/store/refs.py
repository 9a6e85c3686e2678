"""A run reference or a JSON report file, read as one JSON report dict (for diff, import, the viewer).

``REF`` is a JSON report file when it names an existing file or ends in ``.json``; otherwise a stored
run (``latest``, ``latest~N``, a run id or its prefix).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from evalh.errors import ConfigError, ConfigFileError
from evalh.store.runs import RunStore, open_store

__all__ = ["is_report_file", "load_report", "read_report_file"]


def is_report_file(ref: str) -> bool:
    return ref.lower().endswith(".json") or Path(ref).is_file()


def read_report_file(path: Path, *, where: str | None = None) -> dict[str, Any]:
    """A JSON report (evalh's or promptfoo's ``-o results.json``); ConfigError (exit 2) naming the
    file when it is missing or is not a report."""
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
        rows = document["results"]["results"]
        if not isinstance(rows, list) or not all(isinstance(row, dict) for row in rows):
            raise TypeError("results.results is not a list of result objects")
    except FileNotFoundError:
        raise ConfigFileError(f"report not found: {path}", where=where) from None
    except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError) as error:
        raise ConfigError(
            f"{path} is not an evalh or promptfoo JSON report ({type(error).__name__}: {error})",
            where=where,
            hint="Pass a file written with -o results.json",
        ) from None
    return document  # type: ignore[no-any-return]


def load_report(ref: str, store: RunStore | None = None, *, where: str | None = None) -> dict[str, Any]:
    """The JSON report ``ref`` names: a report file, or a run of ``store`` (default: the user's)."""
    if is_report_file(ref):
        return read_report_file(Path(ref), where=where)
    if store is not None:
        return store.load_run(ref)
    with open_store() as opened:
        return opened.load_run(ref)
