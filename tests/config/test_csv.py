"""CSV tests: special columns and every form of the __expected mini-syntax."""

from __future__ import annotations

from typing import Any

import pytest

from evalh.config.csv_tests import MiniSyntaxError, parse_expected
from evalh.config.csv_tests import tests_from_csv as read_csv_tests
from evalh.config.load import load_suite
from evalh.config.tests_files import known_base_types
from tests.config.conftest import WriteFiles

KNOWN = known_base_types()


@pytest.mark.parametrize(
    ("cell", "expected"),
    [
        ("Paris", {"type": "equals", "value": "Paris"}),
        ("Note: a colon", {"type": "equals", "value": "Note: a colon"}),
        ("equals:Note: a colon", {"type": "equals", "value": "Note: a colon"}),
        ("contains:Paris", {"type": "contains", "value": "Paris"}),
        ("not-icontains:error", {"type": "not-icontains", "value": "error"}),
        ('contains-any:a, b,"c, d"', {"type": "contains-any", "value": ["a", "b", "c, d"]}),
        ("icontains-all:x,y", {"type": "icontains-all", "value": ["x", "y"]}),
        (
            "similar:The sky is blue",
            {"type": "similar", "value": "The sky is blue", "threshold": 0.8},
        ),  # CSV: 0.8
        ("similar(0.65):blue sky", {"type": "similar", "value": "blue sky", "threshold": 0.65}),
        ("similar:cosine(0.7):x", {"type": "similar:cosine", "value": "x", "threshold": 0.7}),
        ("similar:euclidean:x", {"type": "similar:euclidean", "value": "x", "threshold": 0.8}),
        ("not-similar(0.5):rude", {"type": "not-similar", "value": "rude", "threshold": 0.5}),
        ("rouge-n:the reference", {"type": "rouge-n", "value": "the reference", "threshold": 0.75}),
        ("levenshtein(3):kitten", {"type": "levenshtein", "value": "kitten", "threshold": 3.0}),
        # promptfoo's CSV default for the other threshold types: 0.75, so this means "identical"
        ("levenshtein:kitten", {"type": "levenshtein", "value": "kitten", "threshold": 0.75}),
        ("latency", {"type": "latency", "threshold": 0.75}),
        ("starts-with:Hi", {"type": "starts-with", "value": "Hi"}),  # no threshold, unlike promptfoo
        ("latency(500)", {"type": "latency", "threshold": 500.0}),
        ("word-count:12", {"type": "word-count", "value": 12}),
        ("is-json", {"type": "is-json"}),
        ("grade:is polite", {"type": "llm-rubric", "value": "is polite"}),
        ("llm-rubric:is short", {"type": "llm-rubric", "value": "is short"}),
        ("not-grade:is rude", {"type": "not-llm-rubric", "value": "is rude"}),
        ("python:len(output) < 50", {"type": "python", "value": "len(output) < 50"}),
        ("file://checks/grade.py:score", {"type": "python", "value": "file://checks/grade.py:score"}),
        ("regex:^\\d+$", {"type": "regex", "value": "^\\d+$"}),
        ("javascript:output.length > 3", {"type": "javascript", "value": "output.length > 3"}),
        ("fn:output.includes('a:b')", {"type": "javascript", "value": "output.includes('a:b')"}),
        ("eval:output === 'x'", {"type": "javascript", "value": "output === 'x'"}),
        ("not-fn:output.length > 99", {"type": "not-javascript", "value": "output.length > 99"}),
        ("file://checks/grade.js:score", {"type": "javascript", "value": "file://checks/grade.js:score"}),
    ],
)
def test_mini_syntax(cell: str, expected: dict[str, Any]) -> None:
    assert parse_expected(cell, KNOWN) == expected


def test_empty_cell_is_no_assertion() -> None:
    assert parse_expected("   ", KNOWN) is None


@pytest.mark.parametrize(
    ("cell", "phrase"),
    [
        ("similar(high):x", "must be a number"),
        ("similar(0.8:x", "missing ')'"),
        ("similar(0.8)x", "expected ':'"),
        ("contians:x", "unknown assertion type 'contians'"),
        ("contanes(0.5):x", "unknown assertion type 'contanes'"),
        ("file://check.rb", "only file://script.py and JavaScript or TypeScript"),
        ("word-count:many", "whole number"),
    ],
)
def test_bad_mini_syntax(cell: str, phrase: str) -> None:
    with pytest.raises(MiniSyntaxError, match=phrase.replace("(", r"\(").replace(")", r"\)")):
        parse_expected(cell, KNOWN)


def test_special_columns() -> None:
    text = (
        "question,__expected,__expected2,__description,__metric,__threshold,__providerOutput,"
        "__metadata:owner,__metadata:tags[]\n"
        'Why?,contains:because,similar:a reason,why test,reasoning,0.5,Because it is.,qa,"a, b"\n'
        "How?,,,,,,,,\n"
    )
    tests, problems = read_csv_tests(text, "t.csv", KNOWN)
    assert problems == []
    (first, origin), (second, _) = tests
    assert first == {
        "description": "why test",
        "threshold": 0.5,
        "output": "Because it is.",
        "vars": {"question": "Why?"},
        "assert": [
            {"type": "contains", "value": "because", "metric": "reasoning"},
            {"type": "similar", "value": "a reason", "threshold": 0.8, "metric": "reasoning"},
        ],
        "metadata": {"owner": "qa", "tags": ["a", "b"]},
    }
    assert origin.locate(("assert", 1)) == "t.csv:2:3"
    assert origin.locate(("vars", "question")) == "t.csv:2:1"
    assert origin.locate(()) == "t.csv:2"
    assert second == {"vars": {"question": "How?"}, "output": "", "description": ""}


def test_multiline_cells_keep_row_numbers() -> None:
    text = 'q,__expected\n"line one\nline two",contains:one\nnext,Note: fine\nlast,bad(1):x\n'
    tests, problems = read_csv_tests(text, "m.csv", KNOWN)
    assert tests[0][0]["vars"] == {"q": "line one\nline two"}
    assert tests[1][0]["assert"] == [{"type": "equals", "value": "Note: fine"}]
    assert tests[1][1].row == 4
    # a type-like head with a (threshold) is a typo, not a literal text
    assert [str(p).split(": ")[0] for p in problems] == ["m.csv:5:2"]


def test_config_columns_set_the_threshold_of_the_rows_nth_assertion() -> None:
    text = (
        "q,__expected1,__expected2,__config:__expected:threshold,__config:__expected2:threshold\n"
        "a,rouge-n:x,levenshtein:y,0.25,3\n"
        "b,,levenshtein:z, 0.5 ,1e0\n"  # promptfoo counts the non-empty cells: levenshtein is the first
    )
    tests, problems = read_csv_tests(text, "c.csv", KNOWN)
    assert problems == []
    (first, _), (second, _) = tests
    assert [(a["type"], a["threshold"]) for a in first["assert"]] == [("rouge-n", 0.25), ("levenshtein", 3.0)]
    assert first["metadata"] == {"threshold": 3.0}  # promptfoo copies each into the test's metadata too
    assert second["assert"] == [{"type": "levenshtein", "value": "z", "threshold": 0.5}]
    assert second["metadata"] == {"threshold": 0.5}


@pytest.mark.parametrize(
    ("header", "cell", "where", "phrase"),
    [
        (
            "__config:__expected:weight",
            "1",
            "c.csv:1:3",
            "unknown special column '__config:__expected:weight'",
        ),
        ("__config:__expected0:threshold", "1", "c.csv:1:3", "N from 1"),
        ("__config:threshold", "1", "c.csv:1:3", "__config:__expectedN:threshold"),
        ("__config:__expected:threshold", "high", "c.csv:2:3", "the threshold must be a number (got 'high')"),
        ("__config:__expected:threshold", "", "c.csv:2:3", "the threshold must be a number"),
    ],
)
def test_bad_config_columns_are_located(header: str, cell: str, where: str, phrase: str) -> None:
    _, problems = read_csv_tests(f"q,__expected,{header}\na,contains:a,{cell}\n", "c.csv", KNOWN)
    assert len(problems) == 1 and str(problems[0]).startswith(where) and phrase in str(problems[0])


def test_metadata_lists_keep_escaped_commas() -> None:
    tests, _ = read_csv_tests('q,__metadata:tags[]\na,"physics,advanced\\,theory"\n', "m.csv", KNOWN)
    assert tests[0][0]["metadata"] == {"tags": ["physics", "advanced,theory"]}


def test_header_problems() -> None:
    _, problems = read_csv_tests("q,q,__expectd,\n1,2,3,4\n", "h.csv", KNOWN)
    messages = [str(p) for p in problems]
    assert any("h.csv:1:2" in m and "duplicate column 'q'" in m for m in messages)
    assert any("h.csv:1:3" in m and "Did you mean '__expected'?" in m for m in messages)
    assert any("h.csv:1:4" in m and "empty column name" in m for m in messages)


def test_csv_suite_end_to_end(project: WriteFiles) -> None:
    config = project(
        "prompts: ['Q: {{question}}']\nproviders: [echo]\ntests: file://cases.csv\n",
        {"cases.csv": "\ufeffquestion,__expected\nWhy?,contains:Why\nHow?,not-contains:Why\n"},
    )
    tests = load_suite(config).tests
    assert [(t.vars["question"], t.asserts[0].full_type) for t in tests] == [
        ("Why?", "contains"),
        ("How?", "not-contains"),
    ]
