"""Patterns from the config run on outputs with a time limit: catastrophic backtracking is an ERROR row
naming the pattern and the limit, not a frozen run."""

from __future__ import annotations

import pytest

from evalh.runtimes.patterns import PatternTimedOut, compile_pattern, find_all, search
from tests.assertions.helpers import definition_of, grade, make_context

BACKTRACKING = r"(a|aa)+$"
LONG_OUTPUT = "a" * 5000 + "!"


def test_a_backtracking_regex_assertion_is_an_error_naming_the_timeout() -> None:
    ctx = make_context("regex", value=BACKTRACKING, output=LONG_OUTPUT, config={"timeoutMs": 200})
    result = grade(ctx)
    assert result.error and not result.passed
    assert result.reason.startswith(
        "the regular expression /(a|aa)+$/ timed out after 0.2 s on a 5,001-character output"
    )
    assert "config.timeoutMs" in result.reason


def test_the_same_pattern_still_matches_where_it_can() -> None:
    result = grade(make_context("regex", value=BACKTRACKING, output="aaaa", config={"timeoutMs": 200}))
    assert result.passed and not result.error


def test_a_bad_regex_timeout_fails_validation() -> None:
    definition = definition_of("regex")
    assert definition.check is not None
    assert definition.check(r"\d", {"timeoutMs": -1}) == "config.timeoutMs must be a positive number (got -1)"
    assert definition.check(r"\d", {"timeoutMs": 50}) is None


def test_a_citation_pattern_that_backtracks_is_an_error() -> None:
    ctx = make_context(
        "citation-groundedness",
        value=["first passage", "second passage"],
        output=LONG_OUTPUT,
        config={"pattern": r"((?:a|aa)+)$"},
    )
    result = grade(ctx)
    assert result.error and not result.passed
    assert "timed out after 1 s" in result.reason


def test_search_and_find_all_raise_pattern_timed_out() -> None:
    compiled = compile_pattern(BACKTRACKING)
    assert not isinstance(compiled, str)
    with pytest.raises(PatternTimedOut, match=r"timed out after 0\.1 s"):
        search(compiled, LONG_OUTPUT, 0.1)
    with pytest.raises(PatternTimedOut):
        find_all(compiled, LONG_OUTPUT, 0.1)
    found = search(compiled, "xaa", 0.1)
    assert found is not None and found.span() == (1, 3)
