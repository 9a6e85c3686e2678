"""The run store keeps a row's trace (issue 26): a traced report imported, then read back by ``evalh runs
show --json`` (the stored run's export) and by the viewer's pages, holds the same spans."""

from __future__ import annotations

import json
from pathlib import Path

from evalh.reports.codec import trace_to_json
from evalh.reports.writers import write_reports
from evalh.store import open_store
from tests.reports.traced import agent_trace, traced_run
from tests.store.helpers import evalh


def test_a_stored_run_keeps_its_rows_traces(tmp_path: Path) -> None:
    (path,) = write_reports(traced_run(), [tmp_path / "traced.json"])
    eval_id = json.loads(path.read_text(encoding="utf-8"))["evalId"]
    imported = evalh("runs", "import", str(path))
    assert imported.exit_code == 0, imported.output
    shown = json.loads(evalh("runs", "show", eval_id, "--json").stdout)
    traces = [row.get("trace") for row in shown["results"]["results"]]
    expected = trace_to_json(agent_trace())
    assert traces[0] == traces[3] == expected
    assert traces.count(None) == len(traces) - 2
    with open_store() as store:
        assert [row.get("trace") for row in store.iter_rows(eval_id)] == traces
