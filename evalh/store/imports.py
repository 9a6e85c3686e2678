"""``evalh runs import``: a JSON report (evalh's or promptfoo's ``-o results.json``) stored as a run.

Its config is redacted again and every registered secret value scrubbed; a test's options are redacted
by name, as evalh's own reports have them. A rated row (an evalh report written from the store, see
:func:`evalh.reports.codec.rated_row`) is stored as its graded row with its rating beside it, and the
report's figures as the graded ones, so the run reads back exactly as it was exported.
"""

from __future__ import annotations

import collections
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
    _check_addressable(graded, source)
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


def _check_addressable(graded: list[tuple[Mapping[str, Any], Any]], source: str) -> None:
    """ConfigError unless each rated row has an ``id`` no other row has: a rating is found by its row's id
    (``evalh runs rate REF ROW_ID --clear``, the viewer), so one it cannot name could never be cleared."""
    ids = [row_id(row) for row, _ in graded]
    counts = collections.Counter(ids)
    rated = [at for at, (_, rating) in enumerate(graded) if rating]
    unnamed = [at for at in rated if not ids[at]]
    shared = [at for at in rated if ids[at] and counts[ids[at]] > 1]
    if not unnamed and not shared:
        return
    if unnamed:
        what = f"{_places(unnamed)}, rated, {'have' if len(unnamed) > 1 else 'has'} no id"
    else:
        same = [at for at, found in enumerate(ids) if found == ids[shared[0]]]
        what = f"{_places(same)}, rated, share the id {ids[shared[0]][:80]!r}"
    raise ConfigError(
        f"{source}: {what}; a rating is found by its row's id, so it could not be cleared",
        hint="Give each rated row an `id` of its own (a report written by evalh has them), or remove its "
        "`rating`, and import it again",
    )


def _places(positions: list[int]) -> str:
    """Rows by their place in the report (``results.results[3]``), the first few."""
    shown = ", ".join(f"results.results[{at}]" for at in positions[:5])
    return shown + (f" and {len(positions) - 5} more" if len(positions) > 5 else "")


def _redacted_row(row: Mapping[str, Any]) -> Mapping[str, Any]:
    """An imported row with its test's options redacted by name, as evalh's own reports have them (a
    promptfoo report may keep e.g. a grader's apiKey there)."""
    test_case = row_test_case(row)
    if not test_case.get("options"):
        return row
    return row_with_test_case(row, {**test_case, "options": redact_config(test_case["options"])})
