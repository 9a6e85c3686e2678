"""The .env parser follows dotenv's rules (export, quotes, escapes, comments, multi-line values)."""

from __future__ import annotations

from evalh.common.notices import warnings_to
from evalh.config.dotenv import parse_dotenv


def test_dotenv_rules() -> None:
    text = (
        "# a comment\n"
        "\n"
        "PLAIN=value with spaces   # trailing comment\n"
        "export EXPORTED=yes\n"
        "SINGLE='literal \\n and # kept'\n"
        'DOUBLE="line1\\nline2 \\"q\\" # kept"\n'
        'MULTI="first\n'
        'second"\n'
        "EMPTY=\n"
        "HASH=a#b\n"
        "  SPACED = padded  \n"
    )
    assert parse_dotenv(text, ".env") == {
        "PLAIN": "value with spaces",
        "EXPORTED": "yes",
        "SINGLE": "literal \\n and # kept",
        "DOUBLE": 'line1\nline2 "q" # kept',
        "MULTI": "first\nsecond",
        "EMPTY": "",
        "HASH": "a#b",
        "SPACED": "padded",
    }


def test_a_malformed_line_is_a_located_warning_and_skipped() -> None:
    shown: list[str] = []
    with warnings_to(shown.append):
        values = parse_dotenv('A=1\nMULTI="x\ny"\nnot a pair\nB=2\n', "my.env")
    assert values == {"A": "1", "MULTI": "x\ny", "B": "2"}
    assert len(shown) == 1 and shown[0].startswith("my.env:4: not a KEY=VALUE line")
