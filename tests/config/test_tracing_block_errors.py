"""A tracing: block the schema refuses is the one problem said about tracing: no second message that the
config "does not trace" (a user who misspelt `enabled` has turned tracing on, and is told only the typo)."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalh.common.notices import warnings_to
from evalh.config.load import load_suite
from evalh.errors import ConfigError
from tests.config.test_tracing_config import UNTRACED, config


@pytest.mark.parametrize(
    ("block", "said"),
    [
        ("tracing: {enabeld: true}\n", "tracing.enabeld: unknown key 'enabeld'. Did you mean 'enabled'?"),
        ("tracing: true\n", "tracing: must be a mapping"),
        ("tracing: {enabled: true, otlp: {http: {port: abc}}}\n", "tracing.otlp.http.port: must be"),
    ],
)
def test_a_refused_tracing_block_is_not_also_said_to_be_missing(
    tmp_path: Path, block: str, said: str
) -> None:
    shown: list[str] = []
    with warnings_to(shown.append), pytest.raises(ConfigError) as refused:
        load_suite(config(tmp_path, block + UNTRACED))
    assert said in str(refused.value)
    assert "does not trace" not in str(refused.value) and not any("does not trace" in s for s in shown)


@pytest.mark.parametrize("value", ["true", "false"])
def test_a_bare_boolean_says_how_to_write_the_block(tmp_path: Path, value: str) -> None:
    with pytest.raises(ConfigError) as refused:
        load_suite(config(tmp_path, f"tracing: {value}\n" + UNTRACED))
    assert "tracing: must be a mapping" in str(refused.value)
    assert f"Write `tracing: {{enabled: {value}}}`" in str(refused.value)
