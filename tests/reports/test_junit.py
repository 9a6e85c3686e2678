"""The JUnit report, read back by a real JUnit parser (junitparser)."""

from __future__ import annotations

import dataclasses
import random
import xml.etree.ElementTree as ET
from pathlib import Path

import junitparser
import pytest

from evalh.model import RunRecord, Status
from evalh.reports.junit import to_junit_xml
from evalh.reports.writers import write_reports
from tests.reports.golden import assert_golden
from tests.reports.sample import NASTY_OUTPUT, sample_run, with_results


def _parse(path: Path) -> junitparser.JUnitXml:
    xml = junitparser.JUnitXml.fromfile(str(path))
    assert isinstance(xml, junitparser.JUnitXml)
    return xml


@pytest.mark.parametrize("name", ["results.junit.xml", "results.xml"])
def test_junit_counts_and_suites(tmp_path: Path, name: str) -> None:
    (path,) = write_reports(sample_run(), [tmp_path / name])
    xml = _parse(path)
    suites = list(xml)
    assert [s.name for s in suites] == [
        "[echo] prompt 1",
        "[echo] prompt 2",
        "[gpt] prompt 1",
        "[gpt] prompt 2",
    ]
    assert [(s.tests, s.failures, s.errors) for s in suites] == [(3, 0, 1), (3, 2, 0), (3, 1, 0), (3, 2, 1)]
    assert sum(s.tests for s in suites) == 12
    root = ET.parse(path).getroot()
    assert (root.get("tests"), root.get("failures"), root.get("errors"), root.get("time")) == (
        "12",
        "5",
        "2",
        "4.321",
    )
    assert suites[0].time == pytest.approx(0.1 + 0.14 + 0.18)


def test_failure_versus_error(tmp_path: Path) -> None:
    (path,) = write_reports(sample_run(), [tmp_path / "r.junit.xml"])
    cases = {(suite.name, case.name): case for suite in _parse(path) for case in suite}
    assert [type(r) for r in cases[("[echo] prompt 1", "test 1: greets Ada")].result] == []
    (failure,) = cases[("[echo] prompt 2", "test 1: greets Ada")].result
    assert isinstance(failure, junitparser.Failure)
    assert failure.type == "assertion"
    assert failure.message == "Similarity 0.42 is less than threshold 0.8"
    assert failure.text.splitlines() == [
        "Score: 0.71",
        "Reason: Similarity 0.42 is less than threshold 0.8",
        "Failed assertions:",
        "- similar: Similarity 0.42 is less than threshold 0.8",
    ]
    (provider_error,) = cases[("[gpt] prompt 2", "test 2")].result
    assert isinstance(provider_error, junitparser.Error)
    assert provider_error.type == "error"
    assert "HTTP 500" in provider_error.message
    (assertion_error,) = cases[("[echo] prompt 1", "test 3: odd output, line break")].result
    assert isinstance(assertion_error, junitparser.Error)
    assert assertion_error.message.startswith("python crashed")


def test_testcases_name_class_and_properties(tmp_path: Path) -> None:
    (path,) = write_reports(sample_run(), [tmp_path / "r.junit.xml"])
    suite = next(iter(_parse(path)))
    assert [c.name for c in suite] == ["test 1: greets Ada", "test 2", "test 3: odd output, line break"]
    assert {c.classname for c in suite} == {"[echo] prompt 1"}
    properties = suite.properties()  # type: ignore[no-untyped-call]
    assert {p.name: p.value for p in properties} == {
        "provider": "echo",
        "providerLabel": "echo",
        "prompt": "greet",
    }


def test_output_text_is_left_out() -> None:
    assert b"markup" not in to_junit_xml(sample_run())


def _with_text(run: RunRecord, text: str) -> RunRecord:
    rows = tuple(
        dataclasses.replace(
            r,
            reason=text if r.status is not Status.PASS else r.reason,
            error=text if r.status is Status.ERROR else r.error,
            test=dataclasses.replace(r.test, description=text),
            provider=dataclasses.replace(r.provider, label=text[:20]),
        )
        for r in run.results
    )
    return with_results(run, rows)


def test_well_formed_with_control_characters_and_lone_surrogates(tmp_path: Path) -> None:
    run = _with_text(sample_run(), NASTY_OUTPUT + "\ufffe\uffff\x0c")
    (path,) = write_reports(run, [tmp_path / "nasty.junit.xml"])
    xml = _parse(path)
    assert sum(s.failures for s in xml) == 5 and sum(s.errors for s in xml) == 2
    case = next(iter(next(iter(xml))))
    assert "\\x07" in case.name and "\\x1b[31mred" in case.name and "\\udcff" in case.name
    assert "<tag> & lone" in case.name


def test_well_formed_for_random_unicode() -> None:
    rng = random.Random(7)
    for _ in range(20):
        text = "".join(
            chr(rng.choice([rng.randrange(0, 0x80), rng.randrange(0xD700, 0x10000)])) for _ in range(200)
        )
        ET.fromstring(to_junit_xml(_with_text(sample_run(), text)))


def test_long_texts_are_truncated() -> None:
    run = _with_text(sample_run(), "word " * 5000)
    root = ET.fromstring(to_junit_xml(run))
    case = root.find("testsuite/testcase")
    failure = root.find(".//failure")
    assert case is not None and failure is not None
    assert len(case.get("name", "")) == 512 and case.get("name", "").endswith("…")
    assert len(failure.get("message", "")) == 1024
    assert len(failure.text or "") == 8192


def test_junit_matches_golden() -> None:
    assert_golden("report.junit.xml", to_junit_xml(sample_run()).decode("utf-8"))


@pytest.mark.parametrize("finished", [True, False])
def test_an_interrupted_run_is_marked_even_with_no_finished_row(tmp_path: Path, finished: bool) -> None:
    run = sample_run()
    run = dataclasses.replace(
        with_results(run, run.results if finished else ()),
        interrupted=True,
        interrupted_by="SIGTERM",
        not_run=5,
    )
    (path,) = write_reports(run, [tmp_path / "r.junit.xml"])
    xml = _parse(path)
    suites = list(xml)
    assert suites[-1].name == "evalh run"
    assert all(
        {p.name: p.value for p in suite.properties()}.get("interruptedBy") == "SIGTERM" for suite in suites
    )
    (case,) = list(suites[-1])
    (error,) = case.result
    assert isinstance(error, junitparser.Error) and error.type == "interrupted"
    done = len(run.results)
    assert error.message == f"the run was interrupted by SIGTERM: {done} row(s) finished, 5 did not run"
    assert xml.tests == len(run.results) + 1 and xml.errors == run.count(Status.ERROR) + 1
