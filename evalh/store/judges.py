"""Which judges graded a run, and whether they changed between two runs compared (``evalh diff``,
``evalh run --baseline``): gathered while the comparison reads each run's rows, never by a second read.

A judged result records its judge in its metadata (``judge``: provider id, model, sha256 of the grading
prompt template; ``judges``: one per grader of ``provider: [a, b]``). When an assertion type was graded
by different judges in the two runs, a changed verdict may be the judge's doing, not the output's: the
diff says so. Runs from before judges were recorded carry none, and are not compared.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from evalh.reports.codec_read import row_components

__all__ = ["judge_changes", "noting_judges"]


def _described(judge: Mapping[str, Any]) -> str:
    digest = str(judge.get("prompt_sha256") or "")[:12]
    return f"{judge.get('provider')} (model {judge.get('model')}, prompt {digest})"


def noting_judges(
    rows: Iterable[Mapping[str, Any]], found: dict[str, set[str]]
) -> Iterator[Mapping[str, Any]]:
    """``rows`` as they are, each judged assertion type's judges added to ``found`` as a row goes by."""
    for row in rows:
        for component in row_components(row):
            if not isinstance(component, Mapping):
                continue
            metadata = component.get("metadata")
            if not isinstance(metadata, Mapping):
                continue
            judges = metadata.get("judges")
            listed = judges if isinstance(judges, list) else [metadata.get("judge")]
            named = [_described(j) for j in listed if isinstance(j, Mapping)]
            if named:
                assertion = component.get("assertion")
                kind = assertion.get("type") if isinstance(assertion, Mapping) else None
                found.setdefault(str(kind or "judge"), set()).update(named)
        yield row


def judge_changes(before: Mapping[str, set[str]], after: Mapping[str, set[str]]) -> list[str]:
    """One warning per assertion type both runs judged with different judges."""
    return [
        f"warning: the judge of {kind} changed between the runs (A: {', '.join(sorted(before[kind]))}; "
        f"B: {', '.join(sorted(after[kind]))}): a changed verdict may be the judge's, not the output's"
        for kind in sorted(set(before) & set(after))
        if before[kind] != after[kind]
    ]
