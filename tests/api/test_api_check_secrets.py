"""evalh.check's AssertionError (pytest shows it, and writes it to --junitxml) holds no secret value of
the run: the failure text is redacted as every report is."""

from __future__ import annotations

import pytest

import evalh

SECRET = "sk-live-check-0123456789abcdef"


def test_a_failed_check_names_no_secret_value() -> None:
    with pytest.raises(evalh.CheckFailed) as caught:
        evalh.check(
            f"leaked {SECRET} here", [{"type": "equals", "value": "{{apiKey}}"}], vars={"apiKey": SECRET}
        )
    text = str(caught.value)
    assert SECRET not in text
    assert "output: leaked [REDACTED] here" in text
    assert caught.value.row.output == f"leaked {SECRET} here"  # the caller's own row keeps its data
