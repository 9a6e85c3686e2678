"""What a test shares with the test converted before it is converted once (``codec._test_json``).

The load shares defaultTest's plain assertions between tests (the same spec objects) and merges
defaultTest's options into each test (a new mapping of the same values): a run's rows take their
report forms from the last test's conversion. Checked on suites loaded for real (defaultTest
assertions and assert-sets, options with secrets, URL passwords and ``env`` maps, tests in any order,
secrets registered between rows): every row is the one converted alone, text and document, and the
forms are shared (the same objects) only while no secret value was registered since they were made.
"""

from __future__ import annotations

import itertools
import random
from pathlib import Path
from typing import Any

from evalh.config.load import load_suite_data
from evalh.model import AssertionSpec, GradedAssertion, Suite, TestCase, TestResult
from evalh.reports.codec import new_memo, result_to_json
from evalh.reports.streamed import encode_row
from evalh.secrets import MARKER, register, run_registry
from tests.reports.sample import passed_row

SECRET = 'pa"ss-wörd-123'  # a quote and an accent: its JSON forms differ from it
URL = "https://user:hunter2-pw@example.com/v1"


def _suite(tmp_path: Path, *, default_asserts: list[Any], options: dict[str, Any], tests: int) -> Suite:
    data = {
        "prompts": ["{{q}}"],
        "providers": ["echo"],
        "defaultTest": {"assert": default_asserts, "options": options},
        "tests": [
            {
                "description": f"case {n}",
                "vars": {"q": f"question {n}"},
                "assert": [{"type": "contains", "value": f"question {n}"}] if n % 3 else [],
                **({"options": {"transform": "output.trim()"}} if n % 5 == 4 else {}),
            }
            for n in range(tests)
        ],
    }
    return load_suite_data(data, base_dir=tmp_path)


def _graded(spec: AssertionSpec, at: int) -> GradedAssertion:
    children = tuple(_graded(child, at) for child in spec.children)
    return GradedAssertion(spec=spec, passed=at % 2 == 0, score=1.0, reason=f"r{at}", children=children)


def _row(test: TestCase, repeat: int = 0) -> TestResult:
    return passed_row(test, tuple(_graded(spec, at) for at, spec in enumerate(test.asserts)), repeat=repeat)


DEFAULT_ASSERTS: list[Any] = [
    {"type": "not-contains", "value": "never here"},
    {"type": "icontains", "value": f"holds {SECRET} inside"},
    {"type": "contains", "value": URL},
    {"type": "levenshtein", "value": "anything", "threshold": 100, "weight": 2},
]
OPTIONS: dict[str, Any] = {
    "provider": {
        "id": "openai:chat:gpt-4o-mini",
        "config": {"apiBaseUrl": URL, "apiKey": "sk-planted-key-123", "env": {"TOKEN": "abc"}},
    },
    "prefix": f"say {SECRET}",
}


def _texts_alone(rows: list[TestResult]) -> list[tuple[str, str]]:
    return [(encoded.text, repr(encoded.document)) for encoded in map(encode_row, rows)]


def test_rows_of_tests_sharing_defaulttest_are_those_converted_alone(tmp_path: Path) -> None:
    rng = random.Random(29)
    for default_asserts in (
        DEFAULT_ASSERTS,
        [*DEFAULT_ASSERTS, {"type": "assert-set", "assert": DEFAULT_ASSERTS}],
    ):
        for options in (OPTIONS, {}, {"prefix": "plain"}):
            suite = _suite(tmp_path, default_asserts=default_asserts, options=options, tests=40)
            rows = [_row(test, repeat) for test in suite.tests for repeat in range(2)]
            rng.shuffle(rows[20:])  # rows finish in any order
            with run_registry():
                register(SECRET)
                memo = new_memo()
                shared = [encode_row(row, memo) for row in rows]
                assert [(e.text, repr(e.document)) for e in shared] == _texts_alone(rows)
                for encoded in shared:
                    assert SECRET not in encoded.text and "hunter2-pw" not in encoded.text
                    assert "sk-planted-key-123" not in encoded.text


def test_defaulttests_assertions_and_options_are_converted_once_for_every_test(tmp_path: Path) -> None:
    suite = _suite(tmp_path, default_asserts=DEFAULT_ASSERTS, options=OPTIONS, tests=12)
    memo = new_memo()
    with run_registry():
        rows = [result_to_json(_row(test), memo=memo) for test in suite.tests]
    first = rows[0]
    for before, row in itertools.pairwise(rows):
        for at in range(len(DEFAULT_ASSERTS)):  # a component's form, and the testCase's item
            component = row["gradingResult"]["componentResults"][at]["assertion"]
            assert component is first["gradingResult"]["componentResults"][at]["assertion"]
            assert row["testCase"]["assert"][at] is first["testCase"]["assert"][at]
        if "transform" not in row["testCase"]["options"] and "transform" not in before["testCase"]["options"]:
            assert row["testCase"]["options"] is before["testCase"]["options"]
    assert first["testCase"]["options"]["provider"]["config"]["apiKey"] == MARKER


def test_a_secret_registered_between_tests_is_redacted_in_the_later_tests_forms(tmp_path: Path) -> None:
    late = "late-secret-value-42"
    default_asserts = [{"type": "not-contains", "value": f"no {late} here"}]
    suite = _suite(tmp_path, default_asserts=default_asserts, options={"prefix": f"p {late}"}, tests=3)
    memo = new_memo()
    with run_registry():
        before = result_to_json(_row(suite.tests[0]), memo=memo)
        register(late)
        after = result_to_json(_row(suite.tests[1]), memo=memo)
        text = encode_row(_row(suite.tests[2]), memo).text
    assert before["testCase"]["assert"][0]["value"] == f"no {late} here"
    assert after["testCase"]["assert"][0]["value"] == f"no {MARKER} here"
    assert after["testCase"]["options"]["prefix"] == f"p {MARKER}"
    assert late not in text
