"""A run as JUnit XML (``-o results.junit.xml`` or ``.xml``), following promptfoo's layout.

``<testsuites name="evalh" tests failures errors skipped time timestamp>`` (time: the run's wall time)
holds one ``<testsuite>`` per prompt x provider column, named ``[<provider label or id>] prompt <k>``
(k counts that provider's prompts from 1), with its counts, ``time`` (sum of latencies, seconds),
``timestamp`` and ``<properties>`` naming the provider and prompt. Each row is a
``<testcase classname="<suite name>" name="test <n>[: description]">``, sorted by test index; a FAIL adds
``<failure type="assertion">`` (message: the reason; body: score, reason, failed assertions), an ERROR
adds ``<error type="error">``. Output text is left out on purpose.

With ``--repeat`` above 1, each ``<testcase>`` (one repeat of a test) gets ``<properties>`` with its
test's figures over every repeat: ``passRate`` and ``passRateInterval`` (a Wilson 95% interval, ``low,high``;
fractions with 4 decimals), ``flaky`` (``true`` / ``false``) and ``repeatVerdict`` (``pass`` / ``fail`` at
``--repeat-pass-rate``); each ``<testsuite>`` gets the suite's ``passRateInterval`` (tests as the unit)
and ``repeatPassRate``. Without repeats the file is as before.

An interrupted run (Ctrl-C, SIGTERM, SIGHUP) is marked so that CI cannot mistake it for a complete
one: every ``<testsuite>`` gets the properties ``interrupted=true`` and ``interruptedBy=<signal>``, and a
last ``<testsuite name="evalh run">`` holds one ``<testcase name="run interrupted">`` with an
``<error type="interrupted">`` saying how many rows did not run (they are not written as testcases).

Every string goes through :func:`~evalh.reports.textutil.xml_safe`, so the file is well-formed whatever
an output or a reason holds (control characters, lone surrogates).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

from evalh.model import Column, RowRating, RunRecord, Status, TestRepeats, TestResult
from evalh.reports.textutil import collapse_whitespace, failed_assertion_lines, truncate, xml_safe

__all__ = ["to_junit_xml"]

NAME_LIMIT = 512
MESSAGE_LIMIT = 1024
BODY_LIMIT = 8192


def _name(text: str) -> str:
    return truncate(collapse_whitespace(xml_safe(text)), NAME_LIMIT)


def _message(text: str) -> str:
    return truncate(collapse_whitespace(xml_safe(text)), MESSAGE_LIMIT)


def _seconds(ms: float) -> str:
    return f"{ms / 1000.0:.3f}"


def _failure_body(row: TestResult) -> str:
    lines = [f"Score: {row.score:.2f}", f"Reason: {row.reason}"]
    if row.rating is not None:
        lines.append(f"Rated fail by {row.rating.reviewer}: {row.rating.comment}")
    failed = failed_assertion_lines(row.assertions)
    if failed:
        lines.append("Failed assertions:")
        lines.extend(failed)
    return truncate(xml_safe("\n".join(lines)), BODY_LIMIT)


def _rating_properties(rating: RowRating, shared: ET.Element | None) -> ET.Element:
    """A rated row's properties: the repeats' ones (``shared``) and its rating (text escaped by the
    XML writer, made XML-safe first)."""
    properties = ET.Element("properties")
    properties.extend(list(shared) if shared is not None else [])
    for key, value in (
        ("rating", "pass" if rating.passed else "fail"),
        ("ratingScore", f"{rating.score:.4f}"),
        ("ratingReviewer", _name(rating.reviewer)),
        ("ratingComment", truncate(xml_safe(rating.comment), BODY_LIMIT)),
    ):
        ET.SubElement(properties, "property", {"name": key, "value": value})
    return properties


def _fractions(interval: tuple[float, float]) -> str:
    return f"{interval[0]:.4f},{interval[1]:.4f}"


def _repeat_properties(test: TestRepeats) -> ET.Element:
    """A test's figures over its repeats, one element that each of its repeats' testcases holds (the same
    object: 50,000 rows held 200,000 property elements, ~95 MiB, for 5,000 distinct ones)."""
    properties = ET.Element("properties")
    for key, value in (
        ("passRate", f"{test.pass_rate:.4f}"),
        ("passRateInterval", _fractions(test.pass_rate_interval)),
        ("flaky", "true" if test.flaky else "false"),
        ("repeatVerdict", "pass" if test.passed else "fail"),
    ):
        ET.SubElement(properties, "property", {"name": key, "value": value})
    return properties


def _testcase(parent: ET.Element, classname: str, row: TestResult, properties: ET.Element | None) -> None:
    name = f"test {row.test.index + 1}"
    if row.test.description:
        name = f"{name}: {row.test.description}"
    if row.repeat_index:
        name = f"{name} (repeat {row.repeat_index + 1})"
    case = ET.SubElement(
        parent,
        "testcase",
        {"classname": classname, "name": _name(name), "time": _seconds(row.latency_ms or 0.0)},
    )
    if row.rating is not None:  # the rows of a test's repeats share their properties: a rated one has its own
        properties = _rating_properties(row.rating, properties)
    if properties is not None:
        case.append(properties)
    if row.status is Status.FAIL:
        failure = ET.SubElement(case, "failure", {"type": "assertion", "message": _message(row.reason)})
        failure.text = _failure_body(row)
    elif row.status is Status.ERROR:
        text = row.error or row.reason or "Evaluation error"
        error = ET.SubElement(case, "error", {"type": "error", "message": _message(text)})
        error.text = truncate(xml_safe(f"Error: {text}"), BODY_LIMIT)


def _suite_name(column: Column, k: int) -> str:
    return _name(f"[{column.provider.display}] prompt {k}")


def _interruption(run: RunRecord) -> tuple[tuple[str, str], ...]:
    if not run.interrupted:
        return ()
    return (("interrupted", "true"), ("interruptedBy", run.interrupted_by or "SIGINT"))


def _repeats_of_run(run: RunRecord) -> tuple[tuple[str, str], ...]:
    repeats = run.aggregates.repeats
    if repeats is None:
        return ()
    interval = _fractions(run.aggregates.pass_rate_interval)
    return (("passRateInterval", interval), ("repeatPassRate", f"{repeats.required_pass_rate:g}"))


def _interrupted_suite(root: ET.Element, run: RunRecord) -> None:
    """The testcase that makes an interrupted run fail in CI, with what was left undone."""
    signal_name = run.interrupted_by or "SIGINT"
    suite = ET.SubElement(
        root,
        "testsuite",
        {
            "name": "evalh run",
            "tests": "1",
            "failures": "0",
            "errors": "1",
            "skipped": "0",
            "time": _seconds(run.duration_ms),
            "timestamp": xml_safe(run.started_at),
        },
    )
    properties = ET.SubElement(suite, "properties")
    for key, value in _interruption(run):
        ET.SubElement(properties, "property", {"name": key, "value": value})
    case = ET.SubElement(
        suite, "testcase", {"classname": "evalh run", "name": "run interrupted", "time": "0.000"}
    )
    message = (
        f"the run was interrupted by {signal_name}: {len(run.results)} row(s) finished, "
        f"{run.not_run} did not run"
    )
    error = ET.SubElement(case, "error", {"type": "interrupted", "message": message})
    error.text = f"Error: {message}. Rows that did not run are not listed as testcases."


def _testsuite(root: ET.Element, column: Column, k: int, run: RunRecord) -> tuple[int, int, int]:
    rows = sorted(column.rows, key=lambda r: (r.test.index, r.repeat_index))
    failures = sum(1 for r in rows if r.status is Status.FAIL)
    errors = sum(1 for r in rows if r.status is Status.ERROR)
    time_ms = sum(r.latency_ms or 0.0 for r in rows)
    name = _suite_name(column, k)
    suite = ET.SubElement(
        root,
        "testsuite",
        {
            "name": name,
            "tests": str(len(rows)),
            "failures": str(failures),
            "errors": str(errors),
            "skipped": "0",
            "time": _seconds(time_ms),
            "timestamp": xml_safe(run.started_at),
        },
    )
    properties = ET.SubElement(suite, "properties")
    for key, value in (
        ("provider", column.provider.shown_id),
        ("providerLabel", column.provider.display),
        ("prompt", column.prompt.label),
        *_repeats_of_run(run),
        *_interruption(run),
    ):
        ET.SubElement(properties, "property", {"name": key, "value": _message(value)})
    repeats = run.aggregates.repeats
    figures = {
        (test.test_index, test.prompt_index, test.provider_index): _repeat_properties(test)
        for test in (repeats.tests if repeats else ())
        if (test.provider_index, test.prompt_index) == column.key
    }
    for row in rows:
        _testcase(suite, name, row, figures.get((row.test.index, row.prompt_index, row.provider_index)))
    return len(rows), failures, errors


def to_junit_xml(run: RunRecord) -> bytes:
    """The JUnit XML document of ``run`` (UTF-8 bytes, with an XML declaration)."""
    root = ET.Element("testsuites", {"name": "evalh"})
    totals = [0, 0, 0]
    per_provider: dict[int, int] = {}
    for column in run.aggregates.columns:
        k = per_provider[column.provider_index] = per_provider.get(column.provider_index, 0) + 1
        tests, failures, errors = _testsuite(root, column, k, run)
        totals = [totals[0] + tests, totals[1] + failures, totals[2] + errors]
    if run.interrupted:
        _interrupted_suite(root, run)
        totals = [totals[0] + 1, totals[1], totals[2] + 1]
    root.set("tests", str(totals[0]))
    root.set("failures", str(totals[1]))
    root.set("errors", str(totals[2]))
    root.set("skipped", "0")
    root.set("time", _seconds(run.duration_ms))
    root.set("timestamp", xml_safe(run.started_at))
    ET.indent(root)
    document: bytes = ET.tostring(root, encoding="utf-8", xml_declaration=True)
    return document
