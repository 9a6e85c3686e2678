"""The promptfoo row shape, read back: what a ``results.results[]`` row (or a ``results.prompts[]`` column)
of a JSON report or of the run store says, for every reader (retry, merge, diff, the run store, the
viewer's data, the filters).

The other half of :mod:`evalh.reports.codec`: together they are the only modules that spell the row keys
and decode ``failureReason``. The rows read here were checked first (:mod:`evalh.reports.codec_check`,
or written by evalh), so each field is absent, null or of the type read; an absent index is 0.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from evalh.model import (
    RETURNED_COMPONENTS,
    AssertionSpec,
    GradedAssertion,
    RepeatSummary,
    RowRating,
    RowTrace,
    Span,
    Status,
    TestRepeats,
    TestResult,
    Usage,
)
from evalh.reports.codec import FAILURE_REASON
from evalh.runner.plan import Job

__all__ = [
    "ID_PATH",
    "METADATA_PATH",
    "PLACE_PATHS",
    "SCORES_PATH",
    "VERDICT_PATHS",
    "RowCell",
    "column_indexes",
    "component_children",
    "interval_from_json",
    "rating_from_json",
    "recorded_status",
    "repeats_from_json",
    "result_from_row",
    "row_cell",
    "row_components",
    "row_cost",
    "row_description",
    "row_error",
    "row_grading",
    "row_has_grading",
    "row_id",
    "row_latency_ms",
    "row_line",
    "row_metadata",
    "row_named_scores",
    "row_own_description",
    "row_prompt",
    "row_provider",
    "row_rating",
    "row_response",
    "row_score",
    "row_status",
    "row_test_case",
    "row_token_usage",
    "row_trace",
    "row_vars",
    "row_with_test_case",
    "trace_from_json",
    "usage_from_json",
]

# SQLite JSON paths of a stored row's place (its test, repeat, prompt and provider indexes) and of its named
# scores: the run store reads them without decoding the rows
PLACE_PATHS = ("$.testIdx", "$.repeatIdx", "$.promptIdx", "$.providerIdx")
SCORES_PATH = "$.namedScores"
# ... and of its id (``id``: a UUID evalh and promptfoo give each row)
ID_PATH = "$.id"
# ... and of its verdict and score (``success``: the row passed; ``score``), for figures over a run's repeats
VERDICT_PATHS = ("$.success", "$.score")
# ... and of its test's metadata (the viewer's metadata filter)
METADATA_PATH = "$.metadata"
_ERROR = FAILURE_REASON[Status.ERROR]
_STATUS_OF_REASON = {code: status for status, code in FAILURE_REASON.items()}


class RowCell(NamedTuple):
    """Where a row sits in the run matrix: its test, prompt, provider and repeat indexes."""

    test: int
    prompt: int
    provider: int
    repeat: int


def row_status(row: Mapping[str, Any]) -> Status:
    """PASS when ``success`` is true, else ERROR for ``failureReason`` 2, else FAIL."""
    if row.get("success"):
        return Status.PASS
    return Status.ERROR if row.get("failureReason") == _ERROR else Status.FAIL


def recorded_status(row: Mapping[str, Any]) -> Status:
    """The status ``failureReason`` records (absent: PASS), a PASS turned FAIL by an explicit false
    ``success``: what ``--retry-errors``, ``--filter-errors-only`` and ``merge`` read. It differs from
    :func:`row_status` only on rows whose two fields disagree, which neither evalh nor promptfoo write."""
    status = _STATUS_OF_REASON.get(int(row.get("failureReason") or 0), Status.FAIL)
    return Status.FAIL if status is Status.PASS and not row.get("success", True) else status


def row_cell(row: Mapping[str, Any]) -> RowCell:
    return RowCell(
        int(row.get("testIdx") or 0),
        int(row.get("promptIdx") or 0),
        int(row.get("providerIdx") or 0),
        int(row.get("repeatIdx") or 0),
    )


def row_line(row: Mapping[str, Any]) -> tuple[int, int]:
    """The row's test and repeat indexes (a line of the results matrix), without the rest of its cell."""
    return int(row.get("testIdx") or 0), int(row.get("repeatIdx") or 0)


def column_indexes(column: Mapping[str, Any]) -> tuple[int, int]:
    """A ``results.prompts[]`` column's (or a row's) prompt and provider indexes."""
    return int(column.get("promptIdx") or 0), int(column.get("providerIdx") or 0)


def row_description(row: Mapping[str, Any]) -> Any:
    """The row's test description: the row's own, else its ``testCase``'s (None when neither has one)."""
    return row.get("description") or row_test_case(row).get("description") or None


def row_own_description(row: Mapping[str, Any]) -> Any:
    """The row's own ``description`` (:func:`row_description` falls back to its test's)."""
    return row.get("description")


def row_vars(row: Mapping[str, Any]) -> Any:
    """The row's test vars as the row holds them (``vars``; absent: None)."""
    return row.get("vars")


def row_prompt(row: Mapping[str, Any]) -> Any:
    """The row's prompt as the row holds it: ``{raw, label}`` (absent: None)."""
    return row.get("prompt")


def row_provider(row: Mapping[str, Any]) -> Any:
    """The row's provider as the row holds it: ``{id, label}`` (absent: None)."""
    return row.get("provider")


def row_score(row: Mapping[str, Any]) -> Any:
    return row.get("score")


def row_error(row: Mapping[str, Any]) -> Any:
    """Why the row failed or errored (``error``: the failed assertion's reason, or the error)."""
    return row.get("error")


def row_latency_ms(row: Mapping[str, Any]) -> Any:
    return row.get("latencyMs")


def row_cost(row: Mapping[str, Any]) -> Any:
    return row.get("cost")


def row_response(row: Mapping[str, Any]) -> Mapping[str, Any]:
    """The provider's answer (``response``: output, tokenUsage, cached, error; empty when absent)."""
    return row.get("response") or {}


def row_token_usage(row: Mapping[str, Any]) -> Mapping[str, Any]:
    """The row's ``tokenUsage``: the provider's, the graders' under ``assertions`` (empty when absent)."""
    return row.get("tokenUsage") or {}


def row_named_scores(row: Mapping[str, Any]) -> Mapping[str, Any]:
    return row.get("namedScores") or {}


def row_metadata(row: Mapping[str, Any]) -> Mapping[str, Any]:
    """The row's ``metadata``: its test's (empty when absent or not a mapping)."""
    metadata = row.get("metadata")
    return metadata if isinstance(metadata, Mapping) else {}


def row_test_case(row: Mapping[str, Any]) -> Mapping[str, Any]:
    """The test the row ran, as the report wrote it (``testCase``; empty when absent)."""
    case = row.get("testCase")
    return case if isinstance(case, Mapping) else {}


def row_with_test_case(row: Mapping[str, Any], case: Mapping[str, Any]) -> Mapping[str, Any]:
    """``row`` with ``case`` as its test (``testCase``), the row itself unchanged."""
    return {**row, "testCase": case}


def row_id(row: Mapping[str, Any]) -> str:
    """The row's ``id`` (empty when absent)."""
    value = row.get("id")
    return "" if value is None else str(value)


def row_rating(row: Mapping[str, Any]) -> dict[str, Any] | None:
    """A person's rating of the row (``{pass, score, comment, reviewer, ratedAt}``, as codec's
    ``rated_row`` wrote it: the row's verdict is the rating's), or None when nobody rated it."""
    rating = row.get("rating")
    if not isinstance(rating, Mapping):
        return None
    return {key: value for key, value in rating.items() if key != "graded"}


def rating_from_json(row: Mapping[str, Any]) -> RowRating | None:
    """The row's rating with its graded fields (see codec's ``rated_row``), or None when unrated."""
    rating = row.get("rating")
    if not isinstance(rating, Mapping):
        return None
    score, graded = rating.get("score"), rating.get("graded")
    return RowRating(
        passed=rating.get("pass") is True,
        score=float(score) if isinstance(score, int | float) else 0.0,
        comment=str(rating.get("comment") or ""),
        reviewer=str(rating.get("reviewer") or ""),
        rated_at=str(rating.get("ratedAt") or ""),
        graded=dict(graded) if isinstance(graded, Mapping) else {},
    )


def row_has_grading(row: Mapping[str, Any]) -> bool:
    """Whether the row's assertions were graded (an ERROR row before grading has no ``gradingResult``)."""
    return bool(row.get("gradingResult"))


def row_grading(row: Mapping[str, Any]) -> Mapping[str, Any]:
    """The row's ``gradingResult`` (empty when absent)."""
    grading = row.get("gradingResult")
    return grading if isinstance(grading, Mapping) else {}


def row_components(row: Mapping[str, Any]) -> Sequence[Any]:
    """The row's graded assertions, flattened as promptfoo lists them (an assert-set, then its children)."""
    return row_grading(row).get("componentResults") or []


def component_children(component: Mapping[str, Any]) -> Sequence[Any]:
    """An assert-set component's children (flattened after it in :func:`row_components` too)."""
    return component.get("componentResults") or []


def usage_from_json(data: Any) -> Usage:
    """promptfoo's ``TokenUsage`` (as :func:`evalh.reports.codec.usage_to_json` writes it) as a Usage."""
    data = data if isinstance(data, Mapping) else {}
    return Usage(
        prompt_tokens=int(data.get("prompt") or 0),
        completion_tokens=int(data.get("completion") or 0),
        total_tokens=int(data.get("total") or 0),
        requests=int(data.get("numRequests") or 0),
        cached=int(data.get("cached") or 0),
    )


def _graded(specs: Sequence[AssertionSpec], components: Sequence[Any]) -> tuple[GradedAssertion, ...]:
    """The graded assertions of ``specs`` from promptfoo's flattened ``componentResults`` (an
    assert-set's component, then its children's flattened list)."""
    graded, position = [], 0
    for spec in specs:
        if position >= len(components):
            break
        component = components[position]
        children = component_children(component)
        position += 1 + len(children)  # an assert-set's children, or a script's returned results
        details = dict(component.get("metadata") or {})
        if children and not spec.children:
            details[RETURNED_COMPONENTS] = [dict(child) for child in children if isinstance(child, Mapping)]
        graded.append(
            GradedAssertion(
                spec=spec,
                passed=bool(component.get("pass")),
                score=float(component.get("score") or 0.0),
                reason=str(component.get("reason") or ""),
                error=bool(component.get("error")),
                skipped=component.get("skipped") is True,
                details=details,
                usage=usage_from_json(component["tokensUsed"]) if "tokensUsed" in component else None,
                children=_graded(spec.children, children) if spec.children else (),
            )
        )
    return tuple(graded)


def result_from_row(row: Mapping[str, Any], job: Job) -> TestResult:
    """One report row (promptfoo's ``EvaluateResult``) as the result of ``job``, the row of the plan
    it was made for (its test, prompt and provider)."""
    grading = row_grading(row)
    response = row_response(row)
    status = recorded_status(row)
    token_usage = row_token_usage(row)
    return TestResult(
        test=job.test,
        prompt=job.prompt,
        provider=job.provider,
        prompt_index=job.prompt_index,
        provider_index=job.provider_index,
        rendered_prompt=job.rendered_prompt or (row.get("prompt") or {}).get("raw", ""),
        status=status,
        score=float(row.get("score") or 0.0),
        reason=str(grading.get("reason") or row.get("error") or ""),
        output=response.get("output"),
        error=row.get("error") if status is not Status.PASS else None,
        latency_ms=row.get("latencyMs"),
        cached=bool(response.get("cached")),
        cost=row.get("cost"),
        usage=usage_from_json(response.get("tokenUsage")),
        grading_usage=usage_from_json(token_usage.get("assertions")),
        assertions=_graded(job.test.asserts, row_components(row)),
        named_scores=dict(row.get("namedScores") or {}),
        named_score_weights=dict(grading.get("namedScoreWeights") or {}),
        repeat_index=job.repeat_index,
        id=str(row.get("id") or ""),
        trace=trace_from_json(row_trace(row)),
        rating=rating_from_json(row),
    )


def row_trace(row: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The row's ``trace`` as the row holds it (None: the run did not trace, or promptfoo wrote the row)."""
    trace = row.get("trace")
    return trace if isinstance(trace, Mapping) else None


def _ns(milliseconds: Any) -> int | None:
    """Unix milliseconds (a float to the microsecond, as codec's ``trace_to_json`` writes them) as
    nanoseconds: whole microseconds, so a span written and read back keeps its times exactly."""
    if isinstance(milliseconds, int | float) and not isinstance(milliseconds, bool):
        return round(milliseconds * 1e3) * 1000
    return None


def _span(span: Mapping[str, Any], trace_id: str) -> Span:
    status = span.get("status")
    status = status if isinstance(status, Mapping) else {}
    attributes = span.get("attributes")
    parent = span.get("parentSpanId")
    return Span(
        trace_id=str(span.get("traceId") or trace_id),
        span_id=str(span.get("spanId") or ""),
        name=str(span.get("name") or ""),
        start_ns=_ns(span.get("startTime")) or 0,
        end_ns=_ns(span.get("endTime")),
        parent_span_id=str(parent) if parent else None,
        kind=str(span.get("kind") or "INTERNAL"),
        attributes=dict(attributes) if isinstance(attributes, Mapping) else {},
        status_code=str(status.get("code") or "UNSET"),
        status_message=str(status.get("message") or ""),
        service=str(span.get("service") or ""),
    )


def trace_from_json(trace: Mapping[str, Any] | None) -> RowTrace | None:
    """A row's ``trace`` (:func:`row_trace`) as the RowTrace it was written from (None when absent)."""
    if trace is None:
        return None
    trace_id = str(trace.get("traceId") or "")
    spans = trace.get("spans")
    return RowTrace(
        trace_id=trace_id,
        spans=tuple(
            _span(span, trace_id)
            for span in (spans if isinstance(spans, list) else ())
            if isinstance(span, Mapping)
        ),
        dropped=_index(trace.get("dropped")),
    )


def _fraction(value: Any) -> float:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0.0


def interval_from_json(value: Any) -> tuple[float, float] | None:
    """A ``[low, high]`` interval of a report read back (None when absent or not a pair)."""
    if isinstance(value, Sequence) and not isinstance(value, str) and len(value) == 2:
        return (_fraction(value[0]), _fraction(value[1]))
    return None


def _test_repeats(test: Mapping[str, Any]) -> TestRepeats:
    score = test.get("meanScore")
    return TestRepeats(
        test_index=_index(test.get("testIdx")),
        prompt_index=_index(test.get("promptIdx")),
        provider_index=_index(test.get("providerIdx")),
        runs=_index(test.get("runs")),
        passes=_index(test.get("passes")),
        pass_rate=_fraction(test.get("passRate")),
        pass_rate_interval=interval_from_json(test.get("passRateInterval")) or (0.0, 1.0),
        pass_all=test.get("passAll") is True,
        pass_any=test.get("passAny") is True,
        flaky=test.get("flaky") is True,
        mean_score=None if score is None else _fraction(score),
        mean_score_interval=interval_from_json(test.get("meanScoreInterval")),
        passed=test.get("pass") is True,
    )


def repeats_from_json(block: Any) -> RepeatSummary | None:
    """``results.evalh.repeats`` of a report (codec's ``repeats_to_json``) read back; None when the run
    had no repeats (or the report comes from an evalh before them)."""
    if not isinstance(block, Mapping):
        return None
    tests = block.get("tests")
    return RepeatSummary(
        count=_index(block.get("count")),
        required_pass_rate=_fraction(block.get("requiredPassRate")),
        tests=tuple(
            _test_repeats(test)
            for test in (tests if isinstance(tests, list) else ())
            if isinstance(test, Mapping)
        ),
    )


def _index(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0
