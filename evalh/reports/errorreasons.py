"""Why rows errored, in one line for the console when no results table shows the reasons (``--no-table``,
what CI runs): the most common distinct reasons with their counts, secret values redacted, controls
escaped, each reason cut to a readable length."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from rich.text import Text

from evalh.model import Status, TestResult
from evalh.reports.console import safe_text
from evalh.secrets import redact_text

__all__ = ["REASONS_SHOWN", "error_reasons_line"]

REASONS_SHOWN = 3  # distinct reasons named; the others are counted
_REASON_LIMIT = 200  # characters of one reason


def error_reasons_line(rows: Iterable[TestResult]) -> Text | None:
    """``3 rows errored: 'HTTP 401 from ...' x2; 'timed out' x1`` (None when no row errored)."""
    reasons = Counter(
        safe_text(redact_text(row.error or row.reason or "no reason given"), _REASON_LIMIT).plain
        for row in rows
        if row.status is Status.ERROR
    )
    if not reasons:
        return None
    total = sum(reasons.values())
    common = reasons.most_common(REASONS_SHOWN)
    parts = [f"'{reason}' x{count}" for reason, count in common]
    others = len(reasons) - len(common)
    if others:
        rest = total - sum(count for _reason, count in common)
        parts.append(f"and {others} other reason{'s' if others > 1 else ''} x{rest}")
    return Text(f"{total} row{'s' if total > 1 else ''} errored: " + "; ".join(parts))
