"""promptfoo's CSV columns for per-assertion settings (``__config:__expected<N>:threshold``) and
list metadata with escaped commas, as promptfoo's config-csv-metadata example writes them."""

from __future__ import annotations

import pytest

from evalh.config.csv_tests import tests_from_csv as read_csv_tests
from evalh.config.tests_files import known_base_types

KNOWN = known_base_types()

HEADER = (
    "topic,__expected1,__expected2,__metadata:tags[],"
    "__config:__expected:threshold,__config:__expected2:threshold\n"
)


def test_a_config_column_sets_the_threshold_of_the_assertion_it_names() -> None:
    text = HEADER + 'ml,"similar: algorithm","rouge-n: quantum","ai,advanced\\,theory, ",0.9,0.8\n'
    tests, problems = read_csv_tests(text, "tests.csv", KNOWN)
    assert problems == []
    test = tests[0][0]
    # __expected is the row's first assertion, __expected2 its second; promptfoo copies them to metadata
    assert [(a["type"], a["threshold"]) for a in test["assert"]] == [("similar", 0.9), ("rouge-n", 0.8)]
    assert test["metadata"] == {"tags": ["ai", "advanced,theory"], "threshold": 0.8}
    assert test["vars"] == {"topic": "ml"}


def test_the_index_counts_the_rows_assertions_not_its_columns() -> None:
    header = "q,__expected1,__expected2,__config:__expected2:threshold\n"
    tests, problems = read_csv_tests(header + 'x,,"similar: b",0.4\n', "tests.csv", KNOWN)
    assert problems == []
    # the empty __expected1 cell makes no assertion, so the second one does not exist: nothing is set
    assert [(a["value"], a["threshold"]) for a in tests[0][0]["assert"]] == [("b", 0.8)]


@pytest.mark.parametrize(
    ("column", "cell", "message"),
    [
        ("__config:__expected:weight", "1", "unknown special column '__config:__expected:weight'"),
        ("__config:__expected0:threshold", "1", "unknown special column '__config:__expected0:threshold'"),
        ("__config:threshold", "1", "unknown special column '__config:threshold'"),
        ("__config:__expected:threshold", "high", "threshold must be a number (got 'high')"),
        ("__config:__expected:threshold", "", "threshold must be a number (got '')"),
    ],
)
def test_a_bad_config_column_or_cell_is_a_located_error(column: str, cell: str, message: str) -> None:
    _, problems = read_csv_tests(f"q,__expected,{column}\nx,similar: y,{cell}\n", "tests.csv", KNOWN)
    assert len(problems) == 1 and message in str(problems[0])
    assert str(problems[0]).startswith("tests.csv:1:3" if "number" not in message else "tests.csv:2:3")
