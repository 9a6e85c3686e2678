"""The run history: every ``evalh run`` recorded in a local SQLite store (``$EVALH_HOME/runs.sqlite3``),
read by ``evalh runs``, ``evalh diff``, ``--baseline`` and ``evalh view``.

The read API for other parts of evalh::

    with open_store() as store:
        store.list_runs()              # [RunSummary], newest first
        store.resolve("latest~1")      # RunSummary; ConfigError (exit 2) for an unknown reference
        store.load_run("latest")       # the run as its JSON report dict (results.results[] and all)
        store.iter_rows("eval-abc-…")  # its rows one at a time
    load_report("results.json")        # a reference or a JSON report file, as the same dict

The store keeps report-shaped data (promptfoo's JSON output file), so a stored run and a ``-o
results.json`` file are interchangeable. Layers: the store reads the report serializer
(``evalh.reports``), never the other way round.
"""

from __future__ import annotations

from evalh.store.database import evalh_home, store_path
from evalh.store.identity import describe_test, row_key, stored_status
from evalh.store.recorder import RunRecorder
from evalh.store.refs import is_report_file, load_report, read_report_file
from evalh.store.runs import RunStore, RunSummary, open_store
from evalh.store.schema import SCHEMA_VERSION

__all__ = [
    "SCHEMA_VERSION",
    "RunRecorder",
    "RunStore",
    "RunSummary",
    "describe_test",
    "evalh_home",
    "is_report_file",
    "load_report",
    "open_store",
    "read_report_file",
    "row_key",
    "store_path",
    "stored_status",
]
