"""Recording a run from the session: open the store, start the run, hand rows over, finish it.

Nothing here is fatal to the run: a store that cannot be opened or written gives one warning and the
run goes on unrecorded (its reports are still written).
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from evalh.errors import StoreError
from evalh.model import RunRecord, Suite
from evalh.reports.json import new_eval_id, report_document
from evalh.reports.streamed import ConfigEcho, EncodedRow
from evalh.store.database import warn
from evalh.store.recorder import RunRecorder
from evalh.store.runs import RunStore, open_store

__all__ = ["Recording", "recording", "stored_config_path"]

_ID_ATTEMPTS = 20


class Recording:
    """The store's side of one run: ``add`` each finished row, then ``finish`` with the result, which
    stores the run's config (``echo``) too: made then, its text is redacted with every secret value
    the run registered (an HTTP provider's ``Bearer`` header, say), so the JSON report, written next,
    takes the same text rather than encoding the config again."""

    def __init__(self, recorder: RunRecorder | None, echo: ConfigEcho | None = None) -> None:
        self._recorder = recorder
        self._echo = echo

    @property
    def run_id(self) -> str | None:
        """The stored run's id (the reports' ``evalId`` too), None when the run is not recorded."""
        return self._recorder.run_id if self._recorder is not None else None

    def add(self, row: EncodedRow) -> None:
        """A finished row, encoded once for every report and the store (``RowSpool.add``)."""
        if self._recorder is not None:
            self._recorder.add(row.document, row.text)

    def finish(self, result: RunRecord) -> None:
        if self._recorder is None:
            return
        header = report_document(result, [], eval_id=self._recorder.run_id, config={})
        del header["config"]  # stored in a table of its own (every test: big)
        encoded = self._echo.encoded() if self._echo is not None else contextlib.nullcontext()
        with encoded as config:
            self._recorder.finish(header, interrupted=result.interrupted, config=config)


def stored_config_path(suite: Suite) -> str | None:
    """The config path a run of ``suite`` is stored under (absolute): with its description, what
    ``--baseline latest`` matches to find the runs of the same config."""
    return str(Path(suite.config_path).resolve()) if suite.config_path else None


def _start(store: RunStore, suite: Suite, started_at: str) -> RunRecorder:
    config_path = stored_config_path(suite)
    for _ in range(_ID_ATTEMPTS):
        run_id = new_eval_id(started_at)
        header = {"evalId": run_id, "results": {"version": 3, "timestamp": started_at, "results": []}}
        try:
            return store.start(
                run_id,
                header,
                config=None,  # stored when the run finishes (Recording.finish)
                config_path=config_path,
                description=suite.description,
            )
        except sqlite3.IntegrityError:
            continue  # two runs started in the same second drew the same id: draw again
    raise StoreError("cannot find a free run id", where=str(store.path))


@contextmanager
def recording(
    suite: Suite, started_at: str, *, enabled: bool, echo: ConfigEcho | None = None
) -> Iterator[Recording]:
    """A :class:`Recording` of the run of ``suite`` in the user's store (a no-op one when not
    ``enabled`` or when the store cannot be used, with a warning). ``echo``: the suite's config as
    the run's JSON report echoes it, encoded once for both."""
    if not enabled:
        yield Recording(None)
        return
    try:
        store = open_store()
    except StoreError as error:
        warn(f"{error.render()}; this run is not recorded")
        yield Recording(None)
        return
    try:
        # the config's text as the JSON report has it (redacted by ConfigEcho), made once for both
        if echo is None or echo.config is not suite.raw_config:
            echo = ConfigEcho(suite.raw_config)
        try:
            recorder: RunRecorder | None = _start(store, suite, started_at)
        except StoreError as error:
            warn(f"{error.render()}; this run is not recorded")
            recorder = None
        yield Recording(recorder, echo)
    finally:
        store.close()
