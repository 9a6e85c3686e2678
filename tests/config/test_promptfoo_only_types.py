"""An assertion type promptfoo 0.123 has and evalh does not run is refused as promptfoo's, with what to
use instead (evalh/assertions/promptfoo_only.py), not with a did-you-mean to an unrelated type."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from evalh.assertions.promptfoo_only import PROMPTFOO_ONLY
from evalh.assertions.registry import all_assertions
from evalh.cli.app import app
from evalh.config.load import load_suite
from evalh.errors import EXIT_CONFIG, ConfigError

CONFIG = """\
prompts: ["Hello {{name}}"]
providers: [echo]
tests:
  - vars: {name: Ada}
    assert:
      - type: contains
        value: Ada
      - type: %s
        value: Ada
"""


def test_the_table_holds_only_types_evalh_lacks() -> None:
    assert set(PROMPTFOO_ONLY).isdisjoint(all_assertions())


@pytest.mark.parametrize("written", ["meteor", "not-moderation", "conversation-relevanc"])
def test_config_names_promptfoos_type_and_the_alternative(written: str, tmp_path: Path) -> None:
    config = tmp_path / "promptfooconfig.yaml"
    config.write_text(CONFIG % written, encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        load_suite(config)
    message = str(caught.value)
    assert caught.value.exit_code == EXIT_CONFIG and "promptfooconfig.yaml:8:" in message
    if written == "conversation-relevanc":  # a misspelling of a type evalh has: the did-you-mean stays
        assert "Did you mean 'conversation-relevance'?" in message
        return
    assert f"assertion type '{written}' is promptfoo's, and evalh does not support it" in message
    advice = PROMPTFOO_ONLY[written.removeprefix("not-")]
    assert f"Use {advice} instead" in " ".join(message.split())


def test_validate_exits_2_with_the_alternative(tmp_path: Path) -> None:
    config = tmp_path / "promptfooconfig.yaml"
    config.write_text(CONFIG % "search-rubric", encoding="utf-8")
    result = CliRunner().invoke(app, ["validate", str(config)])
    assert result.exit_code == EXIT_CONFIG
    assert "'search-rubric' is promptfoo's" in result.stderr and "llm-rubric" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("cell", ["webhook(0.5):http://x", "webhook:http://x"])
def test_a_csv_cell_names_promptfoos_type(cell: str, tmp_path: Path) -> None:
    # without a threshold too: promptfoo reads `webhook:...` as the type, not as a text to equal
    (tmp_path / "tests.csv").write_text(f"name,__expected\nAda,{cell}\n", encoding="utf-8")
    config = tmp_path / "promptfooconfig.yaml"
    config.write_text(
        'prompts: ["Hi {{name}}"]\nproviders: [echo]\ntests: file://tests.csv\n', encoding="utf-8"
    )
    with pytest.raises(ConfigError) as caught:
        load_suite(config)
    assert "'webhook' is promptfoo's" in str(caught.value) and "python assertion" in str(caught.value)
