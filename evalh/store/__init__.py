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

from typing import TYPE_CHECKING

from evalh.common.lazy_names import lazy_names

if TYPE_CHECKING:  # the names as the type checker sees them; at run time __getattr__ imports them
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

# public name -> the module that defines it. Loaded on first use: a run that records itself needs the
# recorder, not the comparison and --baseline machinery refs brings (about 100 modules).
_HOMES = {
    "SCHEMA_VERSION": "evalh.store.schema",
    "RunRecorder": "evalh.store.recorder",
    "RunStore": "evalh.store.runs",
    "RunSummary": "evalh.store.runs",
    "describe_test": "evalh.store.identity",
    "evalh_home": "evalh.store.database",
    "is_report_file": "evalh.store.refs",
    "load_report": "evalh.store.refs",
    "open_store": "evalh.store.runs",
    "read_report_file": "evalh.store.refs",
    "row_key": "evalh.store.identity",
    "store_path": "evalh.store.database",
    "stored_status": "evalh.store.identity",
}


__getattr__ = lazy_names(__name__, _HOMES, globals())


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
