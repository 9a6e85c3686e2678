"""The console of a traced run (issue 26): a failed row's cell, where the reasons are, says how many spans
its trace holds (and how many errored), for `evalh run` and `evalh runs show` alike; a passing row's cell,
and every cell of an untraced run, read as they always did."""

from __future__ import annotations

import io
import re

from evalh.model import RowTrace, RunRecord
from evalh.reports.json import to_promptfoo_json
from evalh.reports.matrix import trace_line
from evalh.reports.table import print_report, print_summary
from tests.reports.sample import sample_run
from tests.reports.traced import agent_trace, traced_run


def _printed(run: RunRecord, *, report: bool = False) -> str:
    out = io.StringIO()
    if report:
        print_report(to_promptfoo_json(run), console_file=out)
    else:
        print_summary(run, console_file=out)
    return re.sub(r"Duration .*", "", out.getvalue())


def test_a_failed_traced_rows_cell_counts_its_spans() -> None:
    for report in (False, True):
        text = _printed(traced_run(rows=(0, 3)), report=report)
        assert text.count("trace: 4 spans (1 error)") == 1  # row 3 failed; row 0 passed: no mention


def test_an_untraced_run_and_a_passing_traced_row_print_as_before() -> None:
    assert _printed(traced_run(rows=(0,))) == _printed(sample_run())
    assert _printed(traced_run(rows=(0,)), report=True) == _printed(sample_run(), report=True)


def test_the_trace_line_counts_errors_and_dropped_spans() -> None:
    trace = agent_trace()
    assert trace_line(trace) == "trace: 4 spans (1 error)"
    assert trace_line(RowTrace(trace.trace_id, trace.spans[:1], dropped=3)) == "trace: 1 span (3 dropped)"
    assert trace_line(RowTrace(trace.trace_id)) == "trace: 0 spans"
