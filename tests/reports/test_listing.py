"""`evalh list` piped: plain text, nothing wrapped, so grep finds whole names and descriptions."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from evalh.assertions.registry import all_assertions
from evalh.cli.app import app
from evalh.providers.registry import PROVIDERS


@pytest.mark.parametrize("what", ["assertions", "providers"])
def test_piped_listing_keeps_every_word_whole(what: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("COLUMNS", raising=False)
    result = CliRunner().invoke(app, ["list", what])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert all(ord(ch) < 0x2500 or ord(ch) > 0x257F for ch in result.stdout)  # ASCII boxes
    entries = (
        [(name, d.description) for name, d in all_assertions().items()]
        if what == "assertions"
        else [(entry.pattern, entry.description) for entry in PROVIDERS]
    )
    for name, description in entries:  # each entry on one line, name and description whole
        assert any(f"| {name} " in line and description in line for line in lines), name
