"""Every test filter lives in runner/filters.py; ``--filter-pattern`` is applied there, not by the loader."""

from __future__ import annotations

import inspect

import pytest

from evalh.config.load import load_suite
from evalh.errors import EXIT_CONFIG, ConfigError
from evalh.model import Suite, TestCase
from evalh.runner.filters import filter_by_description


def _suite(*descriptions: str | None) -> Suite:
    tests = tuple(TestCase(index=i, description=text) for i, text in enumerate(descriptions))
    return Suite(tests=tests)


def test_filter_pattern_keeps_matching_descriptions() -> None:
    suite = filter_by_description(_suite("greets Ada", "greets Bob", None), "Bob$")
    assert [(t.index, t.description) for t in suite.tests] == [(1, "greets Bob")]


def test_no_pattern_keeps_the_suite() -> None:
    suite = _suite("a", None)
    assert filter_by_description(suite, None) is suite


@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        ("^zz", "'^zz' matched none of the 2 tests (descriptions: 'greets Ada')"),
        ("(gr", "invalid regular expression"),
    ],
)
def test_a_pattern_that_selects_nothing_names_the_flag(pattern: str, expected: str) -> None:
    with pytest.raises(ConfigError) as caught:
        filter_by_description(_suite("greets Ada", None), pattern)
    assert caught.value.exit_code == EXIT_CONFIG
    assert caught.value.where == "--filter-pattern" and expected in str(caught.value)


def test_the_loader_does_not_filter() -> None:
    # one home for filtering: the loader returns every test, runner/filters.py selects
    assert "filter_pattern" not in inspect.signature(load_suite).parameters
