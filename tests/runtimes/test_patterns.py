"""Patterns from the config run on outputs with a time limit: catastrophic backtracking is an ERROR row
naming the pattern and the limit, not a frozen run."""

from __future__ import annotations

import random

import pytest

from evalh.runtimes import patterns
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


# -- searches whose work has a small proven bound go without the clock (patterns._work_bound) --------

# Shapes the bound does not know: each keeps the time limit, whatever the text.
UNVOUCHED = (
    BACKTRACKING,  # a repeated group
    r"((?:a|aa)+)$",
    r"(a+)+$",
    r"(?:ab)*c",
    r"(\w)\1",  # a backreference
    r"(?P<x>a)(?P=x)",
    r"(?=a)a*b",  # lookarounds
    r"a(?!b)",
    r"(?<=a)b",
    r"(?>a*)b",  # an atomic group
    r"a*+b",  # possessive
    r"a**",
    r"a{2}{3}",
    r"(?i:a*)b",  # a scoped flag, a flag after the start, verbose mode
    r"a(?i)b",
    r"(?x) a* b",
    r"a{e<=1}",  # fuzzy matching
    r"[[:alpha:]]+",  # a nested set
    r"\p{L}+",
    r"[\p{L}]+",
    r"\X",
    r"a{1, 2}",
    "a?" * 20 + "a" * 20,  # more repetitions than any limit can cover
    r"(?(1)a|b)",
)


@pytest.mark.parametrize("pattern", UNVOUCHED)
def test_a_pattern_of_an_unknown_shape_keeps_the_time_limit(pattern: str) -> None:
    assert patterns._shape(pattern) is None
    assert patterns._work_bound(pattern, 1) == float("inf")


@pytest.mark.parametrize(
    ("pattern", "repeats", "bars", "forced"),
    [
        (r"^[A-Z{][^\n]*[.}]$", 1, 0, 0),
        (r"(?i)LETTERS", 0, 0, 0),
        (r"(?i)(?s)^.*?done$", 1, 0, 0),
        (r"\d+\.\d{2}", 1, 0, 3),  # {2}: one count, nothing to try, but two characters; + forces one
        (r"x{,3}y{2,}z{1,4}?", 3, 0, 3),
        (r"\bword\b|other", 0, 1, 0),
        (r"(?P<id>[a-z]+)-(?:\d|x)", 1, 1, 1),
        (r"[]a-]\]\\", 0, 0, 0),
    ],
)
def test_a_pattern_of_single_character_repetitions_has_its_shape_read(
    pattern: str, repeats: int, bars: int, forced: int
) -> None:
    shape = patterns._shape(pattern)
    steps = len(pattern) + forced
    assert shape is not None and (shape.repeats, shape.bars, shape.length) == (repeats, bars, steps)
    assert patterns._work_bound(pattern, 9) == 10 ** (repeats + 1) * 2**bars * (steps + repeats + 1)


@pytest.mark.parametrize("pattern", [r"a{30000}b", r"\w{20000}\d", r"(?i)a{20000}b", r"[a-z]{20000,}[0-9]"])
def test_a_large_count_keeps_the_clock_as_it_is_that_many_steps_from_each_start(pattern: str) -> None:
    # a{m} is one count but m steps from each of the n starts: n * m work, 29 s for a{30000}b on
    # 60,000 a's when it went without the clock (the review of the fast path)
    compiled = compile_pattern(pattern)
    assert not isinstance(compiled, str)
    assert patterns._work_bound(pattern, 60_000) > 1.0 * patterns._WORK_PER_SECOND
    with pytest.raises(PatternTimedOut):
        search(compiled, "a" * 60_000, 0.05)


def test_the_text_length_enters_the_bound_so_a_long_text_keeps_the_limit() -> None:
    # one repetition on a short output: bounded far inside a second; on a long one, O(n^2) work that
    # the limit still stops
    quadratic = compile_pattern(r"[ab]*[bc]$")
    assert not isinstance(quadratic, str)
    assert patterns._work_bound(quadratic.pattern, 60) <= 1.0 * patterns._WORK_PER_SECOND
    assert search(quadratic, "a" * 60 + "!", 1.0) is None
    assert patterns._work_bound(quadratic.pattern, 20_001) > 1.0 * patterns._WORK_PER_SECOND
    with pytest.raises(PatternTimedOut, match=r"timed out after 0\.05 s on a 20,001-character output"):
        search(quadratic, "a" * 20_000 + "!", 0.05)
    with pytest.raises(PatternTimedOut):
        find_all(quadratic, "a" * 20_000 + "!", 0.05)


def test_a_small_time_limit_lowers_what_goes_without_the_clock() -> None:
    bound = patterns._work_bound(r"^[A-Z{][^\n]*[.}]$", 60)
    assert bound <= 1.0 * patterns._WORK_PER_SECOND
    assert bound > 0.001 * patterns._WORK_PER_SECOND  # timeoutMs: 1 searches with the clock


_ATOMS = ("a", "b", ".", "[ab]", "[^a]", r"\d", r"\w", r"\s", r"\.", "x")
_REPETITIONS = ("", "", "*", "+", "?", "{2}", "{1,3}", "*?", "+?", "{,2}")


def _random_pattern(rng: random.Random) -> str:
    parts = []
    for _ in range(rng.randint(1, 6)):
        roll = rng.random()
        if roll < 0.1:
            parts.append(rng.choice(("^", "$", r"\b", "|")))
        elif roll < 0.2:
            parts.append("(" + rng.choice(_ATOMS) + "|" + rng.choice(_ATOMS) + ")")
        else:
            parts.append(rng.choice(_ATOMS) + rng.choice(_REPETITIONS))
    return "".join(parts)


def test_a_search_without_the_clock_finds_what_the_limited_search_finds() -> None:
    rng = random.Random(29)
    vouched = 0
    for _ in range(600):
        compiled = compile_pattern(_random_pattern(rng))
        if isinstance(compiled, str):
            continue
        text = "".join(rng.choice("ab x.1\n") for _ in range(rng.randint(0, 80)))
        vouched += patterns._work_bound(compiled.pattern, len(text)) <= patterns._WORK_PER_SECOND
        found = search(compiled, text, 1.0)
        limited = compiled.search(text, timeout=1.0)
        assert (found and (found.span(), found.groups())) == (limited and (limited.span(), limited.groups()))
        every = [(m.span(), m.groups()) for m in find_all(compiled, text, 1.0)]
        assert every == [(m.span(), m.groups()) for m in compiled.finditer(text, timeout=1.0)]
    assert vouched > 300  # most of these short searches go without the clock
