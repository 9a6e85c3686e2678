"""The usage lines of ``evalh runs ...`` and ``evalh diff`` name their arguments as the docs do (REF,
ROW_ID; BASELINE, CURRENT), not by the Python parameter's name or a bare letter."""

from __future__ import annotations

import pytest

from tests.store.helpers import evalh


@pytest.mark.parametrize(
    ("command", "usage"),
    [
        (["runs", "rate"], "Usage: evalh runs rate [OPTIONS] {REF} {ROW_ID}"),
        (["runs", "show"], "Usage: evalh runs show [OPTIONS] {REF}"),
        (["diff"], "Usage: evalh diff [OPTIONS] {BASELINE} {CURRENT}"),
    ],
)
def test_a_usage_line_names_each_argument_as_the_docs_do(command: list[str], usage: str) -> None:
    shown = evalh(*command, "--help")
    assert shown.exit_code == 0, shown.output
    assert usage in " ".join(shown.output.split())
