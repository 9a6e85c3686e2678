"""reports/textutil.py: the XML-safe text keeps exactly the characters XML 1.0 allows, escaping the rest
visibly, with its pattern compiled by the first use rather than by every run that imports the module."""

from __future__ import annotations

import random
import subprocess
import sys

from evalh.reports.textutil import xml_safe


def _allowed_in_xml(char: str) -> bool:
    """XML 1.0's Char production, written out."""
    code = ord(char)
    return (
        code in (0x9, 0xA, 0xD)
        or 0x20 <= code <= 0xD7FF
        or 0xE000 <= code <= 0xFFFD
        or 0x10000 <= code <= 0x10FFFF
    )


def _escaped(char: str) -> str:
    code = ord(char)
    if code == 0x0A:
        return "\\n"
    if code == 0x09:
        return "\\t"
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def test_every_character_is_kept_when_xml_allows_it_and_escaped_when_not() -> None:
    every = [chr(code) for code in range(0x110000)]
    assert xml_safe("".join(every)) == "".join(c if _allowed_in_xml(c) else _escaped(c) for c in every)


def test_random_texts_mixing_allowed_and_forbidden_characters() -> None:
    rng = random.Random(29)
    pool = ["a", "é", "\t", "\n", "\r", "\x00", "\x1b", "\x7f", "\ud800", "\udfff", "\ufffe", "\uffff", "😀"]
    for _ in range(500):
        text = "".join(rng.choice(pool) for _ in range(rng.randrange(0, 20)))
        assert xml_safe(text) == "".join(c if _allowed_in_xml(c) else _escaped(c) for c in text)


def test_importing_the_module_compiles_no_xml_pattern() -> None:
    code = (
        "from evalh.reports import textutil\n"
        "before = textutil._xml_illegal.cache_info().currsize\n"
        "textutil.xml_safe('a\\x00')\n"
        "print(before, textutil._xml_illegal.cache_info().currsize)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["0", "1"]
