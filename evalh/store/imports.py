"""``evalh runs import``: a JSON report (evalh's or promptfoo's ``-o results.json``) stored as a run.

Its config is redacted again and every registered secret value scrubbed; a test's options are redacted
by name, as evalh's own reports have them. A rated row (an evalh report written from the store, see
:func:`evalh.reports.codec.rated_row`) is stored as its graded row with its rating beside it, and the
report's figures as the graded ones, so the run reads back exactly as it was exported.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from evalh.errors import ConfigError
from evalh.reports.codec import graded_row
from evalh.reports.codec_ratings import rated_results
from evalh.reports.codec_read import row_id, row_test_case, row_with_test_case
from evalh.reports.streamed import EncodedConfig
from evalh.secrets import redact_config
from evalh.store.ratings import Rating
from evalh.store.recorder import json_text

if TYPE_CHECKING:
    from evalh.store.runs import RunStore, RunSummary

__all__ = ["import_report"]


def import_report(store: RunStore, document: Mapping[str, Any], *, source: str) -> RunSummary:
    """Store ``document`` as a run of ``store``; ConfigError when it has no ``evalId`` or a run with its
    ``evalId`` is stored already."""
    rows = document["results"]["results"]
    header = {key: value for key, value in document.items() if key != "config"}
    run_id = str(document.get("evalId") or "")
    if not run_id:
        raise ConfigError(
            f"{source}: the report has no evalId", hint="Pass a file written with -o results.json"
        )
    if store.has_run(run_id):
        raise ConfigError(
            f"{source}: the run {run_id} is in the run store already",
            hint=f"`evalh runs delete {run_id}` first to import it again",
        )
    config = document.get("config") if isinstance(document.get("config"), Mapping) else {}
    description = (config or {}).get("description")
    redacted = EncodedConfig.of_text(json_text(redact_config(document.get("config") or {})))
    graded = [graded_row(row) for row in rows]
    # the figures of a report written from the store count its ratings: stored, they are the graded ones
    ungraded = [(rated, row) for rated, (row, rating) in zip(rows, graded, strict=True) if rating]
    header["results"] = rated_results({**document["results"], "results": []}, ungraded)
    recorder = store.start(
        run_id, header, config=redacted, config_path=source, description=description, source="import"
    )
    for row, _ in graded:
        recorder.add(_redacted_row(row))
    recorder.finish(header, interrupted=bool(document["results"].get("evalh", {}).get("interrupted")))
    run = store.resolve(run_id)
    rated = [(at, Rating.from_json(row_id(row), rating)) for at, (row, rating) in enumerate(graded) if rating]
    if rated:
        store.save_ratings(run, rated)
        run = store.resolve(run_id)
    return run


def _redacted_row(row: Mapping[str, Any]) -> Mapping[str, Any]:
    """An imported row with its test's options redacted by name, as evalh's own reports have them (a
    promptfoo report may keep e.g. a grader's apiKey there)."""
    test_case = row_test_case(row)
    if not test_case.get("options"):
        return row
    return row_with_test_case(row, {**test_case, "options": redact_config(test_case["options"])})
