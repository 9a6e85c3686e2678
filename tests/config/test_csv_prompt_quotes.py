"""A CSV prompt file is read with promptfoo's lenient quotes (its csv-prompts example ends a row with
``"Facts" ``), so each row stays a prompt instead of the file falling back to one prompt per line."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.config.test_promptfoo_semantics import run_rows, write

CSV = (
    "prompt,label\n"
    '"Tell me about {{topic}}","Basic Query"\n'
    '"Write a short poem about {{topic}}","Poetry" \n'  # a space after the closing quote
    '"Five facts about ""{{topic}}""", "Facts"\n'  # and one before the opening quote
)


def test_a_space_beside_a_quoted_cell_keeps_the_rows_prompts(tmp_path: Path) -> None:
    write(tmp_path / "prompts.csv", CSV)
    config = write(
        tmp_path / "c.yaml",
        "prompts: [file://prompts.csv]\nproviders: [echo]\ntests: [{vars: {topic: owls}}]\n",
    )
    result, rows = run_rows(config)
    assert result.exit_code == 0, result.stderr
    assert [(row["prompt"]["label"], row["response"]["output"]) for row in rows] == [
        ("Basic Query", "Tell me about owls"),
        ("Poetry", "Write a short poem about owls"),
        ("Facts", 'Five facts about "owls"'),
    ]


def test_promptfoos_strict_switch_reads_such_a_file_line_by_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PROMPTFOO_CSV_STRICT", "true")
    write(tmp_path / "prompts.csv", CSV)
    config = write(
        tmp_path / "c.yaml",
        "prompts: [file://prompts.csv]\nproviders: [echo]\ntests: [{vars: {topic: owls}}]\n",
    )
    result, rows = run_rows(config)
    assert result.exit_code == 0, result.stderr
    assert [row["response"]["output"] for row in rows][:2] == [
        "prompt,label",
        '"Tell me about owls","Basic Query"',
    ]
