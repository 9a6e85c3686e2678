"""yaml_rs (fastyaml.read_fast) against libyaml's readers (plainyaml, then the full loader): every
document yaml_rs reads gets the same values, types included, and every other one takes libyaml's
path, so errors keep their words and places.

Inputs: every YAML file of the repository (tests, examples, benchmarks/compat), a table of tricky
scalars and documents, every short token of number characters in three places, generated and
edited documents, and documents past evalh's bounds.
"""

from __future__ import annotations

import itertools
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

from evalh.config.fastyaml import MAX_FAST_CHARS, UNSURE, read_fast
from evalh.config.locate import _parse_with_libyaml, parse_document
from evalh.config.plainyaml import load_plain
from evalh.config.safeload import MAX_DEPTH
from evalh.errors import ConfigError
from tests.config.test_plainyaml_differential import ROOT, YAML_FILES, _typed, edited_documents


def _outcome(read: Any, text: str) -> tuple[str, Any]:
    try:
        return "data", _typed(read(text, "f.yaml").data)
    except ConfigError as error:
        return "error", error.render()


def assert_reads_as_libyaml(text: str) -> bool:
    """True when yaml_rs read ``text``; either way the values, or the error, are libyaml's."""
    fast = read_fast(text)
    today = _outcome(_parse_with_libyaml, text)
    assert _outcome(parse_document, text) == today, text
    if fast is UNSURE:
        return False
    assert today == ("data", _typed(fast)), text
    # a message still finds its line and column: libyaml's events read the document too
    assert load_plain(text, located=True) is not None, text
    return True


@pytest.mark.parametrize("path", YAML_FILES, ids=lambda path: str(path.relative_to(ROOT)))
def test_every_yaml_file_of_the_repository_reads_as_libyaml_reads_it(path: Path) -> None:
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError:
        pytest.skip("not UTF-8: refused before any YAML is read")
    assert_reads_as_libyaml(text)


def test_most_repository_files_and_the_benchmark_suites_take_yaml_rs() -> None:
    # the comparison above would pass vacuously if yaml_rs were never used
    texts = [path.read_text(encoding="utf-8-sig") for path in YAML_FILES if path.parent.name != "broken"]
    compat = [path for path in YAML_FILES if "compat" in path.parts]
    fast = sum(assert_reads_as_libyaml(text) for text in texts)
    # (most of them write a flow collection somewhere, which takes libyaml's path)
    assert len(texts) > 40 and len(compat) > 5 and fast >= 20


def _suite(tests: int) -> str:
    """A suite shaped as the benchmark suites are (gen_configs.py)."""
    lines = ["description: a suite", "prompts:", "- '{{answer}}'", "providers:", "- echo", "tests:"]
    for index in range(tests):
        lines += [
            f"- description: t{index} pair{index * 7} exact",
            "  vars:",
            f"    answer: The robot delivered {index} letters.",
            f'    expected: \'{{"id": {index}, "text": "x"}}\'',
            "  assert:",
            "  - type: equals",
            "    value: '{{expected}}'",
            "  - type: regex",
            "    value: ^[A-Z{][^\\n]*[.}]$",
            "  - type: levenshtein",
            "    value: '{{expected}}'",
            f"    threshold: {index % 3 + 0.5}",
        ]
    return "\n".join(lines) + "\n"


def test_a_suite_takes_yaml_rs_and_shares_its_repeated_texts() -> None:
    text = _suite(50)
    assert assert_reads_as_libyaml(text)
    data = read_fast(text)
    first, second = data["tests"][0]["assert"][1], data["tests"][1]["assert"][1]
    # one copy of each repeated key and text, as libyaml's reader keeps them (memory of 50,000 tests)
    assert next(iter(first)) is next(iter(second)) and first["value"] is second["value"]


TRICKY = [
    "a: [true, True, TRUE, false, yes, no, on, off, y, n, tRue]",
    "a: [~, null, Null, NULL, nULL, '', ]\nb:\n",
    "a: [1_000, 0o17, 0x1F, 0b101, +12, -0, 012, 0_1, 1__0, 1_, 0x_1, +0x10, -0b11, 0xFFFFFFFFFFFFFFFFFFFF]",
    "a: [0O17, 0X1f, 0B1]",
    "a: [99999999999999999999999, 1:20, 190:20:30.15]",
    "a: [.5, +.5, -.5, 1e3, 1E-3, 1.5e+3, 1., .inf, -.Inf, +.INF, .nan, .NaN, 1_0.5, 6.8523015e+5, .5e3]",
    "a: [.iNf, -.InF, .nAn, +.nan, .NAn]",
    "a: [1e3_, 1e1_0, _1, _1.5, ._5, +_1, -_1.5e3, 1_e3]",
    "a: [1e400, -1e400, 1e-400, 0.1, 123456789012345678901234567890.5, -0.0, 0.]",
    "a: [inf, nan, Infinity, -inf, 0777, 08, 09.5, 1e, e3, 1.0e+]",
    "a: 2024-05-01\nb: 2001-12-14t21:59:43.10-05:00\nc: 2001-12-14 21:59:43.10 -5\nd: 12:30:45",
    "1: a\n1.5: b\ntrue: c\nnull: d\n0x10: f\n-1: g\n1e3: h",
    "~: e\n",
    ": x\n",
    "a: 1\na: 2",
    "x:\n  a: 1\n  a: 2",
    "1: a\n'1': b",
    "1: a\n01: b",
    "True: a\ntrue: b",
    "1.0: a\n1: b",
    "true: a\n'true': b",
    "? [1, 2]\n: x",
    "? a\n: x",
    "{[1]: x}",
    "base: &b {x: 1, y: 2}\nother: &o {y: 3, z: 4}\nm:\n  <<: [*b, *o]\n  x: 9",
    "m:\n  <<: {x: 1}\n  y: 2",
    "m:\n  '<<': 1",
    "a: [<<]",
    "a: &x [1, 2]\nb: *x",
    "a: &x 1\nb: &x 2\nc: *x",
    "b: *x",
    "a: !!str 1\nb: !!int '3'",
    "c: !custom x",
    "d: ! 12",
    "a: !!set {x, y}",
    "a: !!omap [x: 1, y: 2]",
    "\ufeffa: 1",
    "a: 1\r\nb:\r\n  - x\r\n  - y\r\nc: |\r\n  l1\r\n  l2\r\n",
    "a: 1\rb: 2\r",
    'a:\t1\nb: "x\ty"',
    "a:\n\t- 1",
    "a: 1\n---\nb: 2",
    "---\na: 1\n...\n",
    "# a comment\n---\na: 1\n",
    "--- x\n",
    "---\n",
    "...\n",
    "",
    "# only a comment\n",
    "hello",
    "12",
    "9" * 4001,
    "%YAML 1.1\n---\na: yes",
    "%TAG !e! tag:example.com,2000:\n---\na: !e!foo 1",
    'a: "x\\0y"',
    "a: x\x00y",
    "a: x\x07y",
    "a: x\x7fy",
    'a: "\\ud800"',
    "a: x\u2028y",
    "a: x\x85y",
    "a: x\x9fy",
    "a: x\ufeffy",
    "a: x\ufffey",
    "a: \u00a0x\nb: caf\u00e9 \U0001f600",
    'a: "\\u00e9\\U0001F600\\x41\\N\\_\\L\\P\\e\\a\\/\\ "',
    'a: "one\n  two\n\n  three"',
    "a: 'it''s\n  folded\n\n  here'",
    "a: plain\n  folded\n\n  text\nb: next",
    "a: |\n  x\n   y\n\n  z\n\n\nb: >-\n  p\n  q\n\n   r\n  s\n",
    "a: |+\n  kept\n\n\nb: |-\n  stripped\n\n",
    "a: |2\n    indented\n   less\n",
    "a: >\n\n  leading blank\n",
    "- |\n  in a list\n- >\n  folded\n  list\n",
    "a: [1, 2",
    "a:\n  b: 1\n c: 2",
    "a: -\nb: - x",
    "a: @x",
    "a: `x",
    "a" * 1100 + ": 1",
    "{" + "a" * 1100 + ": 1}",
    '{"a": [1, 2.5, "x", null, true], "b": {"c": -1e-3}}',
    '{"a":1, "b":[2,3]}',
    '{"a":*x}',
    "a: b:c\nd: http://x\ne: x #comment\nf: x#not",
    "a: {}\nb: []\nc: [[], {}]",
    "- - a\n  - b\n- c",
    "- a: 1\n  b: 2\n- - x",
    'a: "true"\nb: \'1.5\'\nc: "null"',
    "a: x   \nb: 'y '",
    "a: [a, b]: c",
    "a: {b, c: d}",
    "a: [b: c, d]",
    "? complex\n",
    "a: 50%\nb: ?x\nc: x!y\nd: x&y\ne: x*y\nf: Q & A\ng: '*bold*'",
    "text: see **this** and * that\n",
    "key with spaces: 1\n'quoted key': 2\n\"dq key\": 3",
    "a: 'single'\nb: \"double\"\n'c': d\n",
    "[1, 2, 3]",
    "- 1\n- [2, {3: 4}]",
    # yaml_rs reads these otherwise than libyaml: flow collections, block scalars at the edges
    "{a\n  b: x}\n",
    "[>]\n",
    "[|]\n",
    "{>: 1}\n",
    "a: [a, >b]\n",
    "{?&a  '' : null}\n",
    "a: |\n",
    "a: >\n  \n",
    "? |\n",
    "a: |\n  x",
    "a: >\n  x",
    "a:\n  - |\n    x",
    "a: |\n  x\n  ",
    "|\n  top\n",
    "|+\n|\n\n",
    "  >\n#c{  \n",
    "a: |\n  x\n\nb: |+\n  y\n\nc: 1\n",
    # escapes of UTF-16 surrogates: yaml_rs joins a pair into one character, libyaml refuses them
    'k: "\\ud83d\\ude00"\n',
    'k: "\\uDBFF\\uDFFF"\n',
    'k: "\\udc00"\n',
    'k: "\\U0000D83D"\n',
    'k: "caf\\u00e9"\n',
]


@pytest.mark.parametrize("text", TRICKY)
def test_tricky_documents_read_as_libyaml_reads_them(text: str) -> None:
    assert_reads_as_libyaml(text)


def test_yaml_rs_reads_the_plain_documents_of_the_table() -> None:
    # the table above must exercise yaml_rs itself, not only its refusals
    assert sum(read_fast(text) is not UNSURE for text in TRICKY) > 20


_NUMBER_ALPHABET = "019_.eExXoObBaf+-"


def _tokens() -> list[str]:
    shorts = [
        "".join(chars) for size in (1, 2, 3) for chars in itertools.product(_NUMBER_ALPHABET, repeat=size)
    ]
    spellings = ["".join(cased) for cased in itertools.product("iI", "nN", "fF")]
    spellings += ["".join(cased) for cased in itertools.product("nN", "aA", "nN")]
    specials = [sign + "." + word for sign in ("", "+", "-") for word in spellings]
    return shorts + specials + ["0x1F", "0X1F", "0o17", "0O17", "0b11", "0B11", "1_0", "1e1_0", "1_.5e3"]


def test_every_short_number_token_reads_as_libyaml_reads_it() -> None:
    # as a value, an item of a flow sequence and a key: whatever yaml_rs reads must equal libyaml's
    for token in _tokens():
        for text in (f"a: {token}\n", f"a: [{token}, x]\n", f"{token}: x\n"):
            assert_reads_as_libyaml(text)


@settings(
    max_examples=int(os.environ.get("EVALH_FUZZ_EXAMPLES", "400")),
    derandomize="EVALH_FUZZ_EXAMPLES" not in os.environ,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(text=edited_documents())
def test_generated_documents_read_as_libyaml_reads_them(text: str) -> None:
    assert_reads_as_libyaml(text)


def _nested(levels: int) -> str:
    return "a: " + "[" * (levels - 1) + "]" * (levels - 1) + "\n"


@pytest.mark.parametrize(
    "text",
    [
        _nested(MAX_DEPTH),
        _nested(MAX_DEPTH + 1),
        "".join("  " * level + "- \n" for level in range(MAX_DEPTH + 5)),
        "- " * (MAX_DEPTH + 1) + "x\n",
        "- " * 50_000 + "x\n",  # yaml_rs's stack overflows (the process dies) past ~10,000 levels
        "a: " + "[" * 300 + "]" * 300,
        "a: " + "9" * 4000,
        "a: " + "9" * 4001,
        "a: -" + "9" * 4001,
        "a: 0x" + "f" * 3330,
        "a: 0x" + "f" * 3500,
        "a: " + "7" * 200_000,  # yaml_rs takes quadratic time over a number's digits
        'a: &a ["x","x","x","x","x","x","x","x","x"]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\n'
        "c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\nd: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]\n"
        "e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]\nf: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]\n"
        "g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]\n",
        "a: &a [1, *a]\n",
    ],
    ids=[
        "depth-100",
        "depth-101",
        "block-depth-105",
        "compact-depth-101",
        "compact-depth-50000",
        "flow-depth-300",
        "int-4000-digits",
        "int-4001-digits",
        "negative-int-4001-digits",
        "hex-int-below-the-bound",
        "hex-int-past-the-bound",
        "int-200000-digits",
        "billion-laughs",
        "alias-cycle",
    ],
)
def test_documents_at_and_past_the_bounds_keep_their_values_and_messages(text: str) -> None:
    assert_reads_as_libyaml(text)


def test_an_alias_stays_the_anchored_value_itself() -> None:
    # yaml_rs copies an alias; libyaml's reader shares it, and so does every config evalh reads
    data = parse_document("a: &a {x: [1]}\nb: *a\n", "f.yaml").data
    assert data["b"] is data["a"]


def test_a_text_past_the_size_yaml_rs_may_read_is_read_as_before() -> None:
    # yaml_rs's peak memory is about ten times the text's size more than libyaml's reader's
    text = "a: " + "x" * MAX_FAST_CHARS + "\nb: [1, 2]\n"
    assert read_fast(text) is UNSURE
    assert parse_document(text, "f.yaml").data == {"a": "x" * MAX_FAST_CHARS, "b": [1, 2]}
    assert read_fast(text[: MAX_FAST_CHARS - 100] + "\n") == {"a": "x" * (MAX_FAST_CHARS - 103)}


def test_the_quick_look_for_unsure_characters_finds_what_the_pattern_finds() -> None:
    # the substring searches that gate the pattern must let through every character it matches
    from evalh.config.fastyaml import _UNSURE_NON_ASCII, _unsure_non_ascii

    ranges = [range(0x80, 0x800), range(0x2000, 0x2100), range(0xFE00, 0x10000), range(0x1F600, 0x1F610)]
    for code in itertools.chain(*ranges):
        if 0xD800 <= code <= 0xDFFF:
            continue
        data = f"a: x{chr(code)}y\n".encode()
        assert _unsure_non_ascii(data) == bool(_UNSURE_NON_ASCII.search(data)), hex(code)
