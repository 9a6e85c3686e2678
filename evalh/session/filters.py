"""``--filter-failing`` / ``--filter-errors-only``: keep the tests an earlier JSON report failed or errored.

The report is read and checked by the codec (:mod:`evalh.reports.codec_check`) and its rows read by it
(:mod:`evalh.reports.codec_read`); the tests are matched as ``runner/filters.py`` matches them (by
:func:`~evalh.runner.filters.test_identity`), so the runner reads no report.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from evalh.errors import ConfigError
from evalh.model import Status, Suite
from evalh.reports.codec_check import read_report_file
from evalh.reports.codec_read import recorded_status, row_description, row_status, row_vars
from evalh.runner.filters import test_identity

__all__ = ["filter_by_report"]


def _report_identities(report: Path, errors_only: bool, flag: str) -> tuple[set[str], int]:
    """The (description, vars) identities of a report's failed or errored rows (errored only: promptfoo's
    as its failureReason records it), and its row count."""
    rows = read_report_file(report, where=flag)["results"]["results"]
    kept = {
        test_identity(row_description(row), row_vars(row))
        for row in rows
        if (recorded_status(row) is Status.ERROR if errors_only else row_status(row) is not Status.PASS)
    }
    return kept, len(rows)


def filter_by_report(
    suite: Suite, report: Path, *, errors_only: bool, flag: str = "--filter-failing"
) -> tuple[Suite, str]:
    """Keep the tests that failed or errored (``errors_only``: errored) in an earlier JSON report,
    matched by description + vars, with a line saying how many matched. Raises ConfigError when none
    does: nothing would run."""
    wanted, total = _report_identities(report, errors_only, flag)
    what = "errored" if errors_only else "failed or errored"
    kept = tuple(test for test in suite.tests if test_identity(test.description, dict(test.vars)) in wanted)
    counts = f"{len(wanted)} {what} test(s) among its {total} rows"
    if not wanted:
        raise ConfigError(
            f"{report}: none of its {total} rows {what}, so there is nothing to re-run",
            where=flag,
            hint=f"Run without {flag} to run every test",
        )
    if not kept:
        raise ConfigError(
            f"{report}: {counts}, and none of them is among this config's {len(suite.tests)} tests",
            where=flag,
            hint="Tests are matched by description and vars: pass a report this config wrote",
        )
    return replace(suite, tests=kept), f"{flag} {report}: {counts}; re-running {len(kept)} test(s)"
