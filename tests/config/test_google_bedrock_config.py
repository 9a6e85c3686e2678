"""The google: and bedrock: provider settings are checked where they are written, before any call."""

from __future__ import annotations

import textwrap
from pathlib import Path

from typer.testing import CliRunner

from evalh.cli.app import app


def test_settings_of_the_wrong_type_are_located_by_validate(tmp_path: Path) -> None:
    config = tmp_path / "c.yaml"
    config.write_text(
        textwrap.dedent(
            """\
            prompts: ["hi {{q}}"]
            providers:
              - id: bedrock:converse:m
                config: {secretAccessKey: 5, accessKeyId: AKIDEXAMPLE, region: us-east-1}
              - id: google:gemini-2.5-flash
                config: {safetySettings: {category: x}, apiKey: k, topK: 0}
            tests:
              - vars: {q: a}
            """
        ),
        encoding="utf-8",
    )
    result = CliRunner().invoke(app, ["validate", str(config)])
    assert result.exit_code == 2
    output = result.output
    assert "c.yaml:4:" in output and "providers[0].config.secretAccessKey: must be a string" in output
    assert "c.yaml:6:" in output and "providers[1].config.safetySettings: must be a list" in output
    assert "providers[1].config.topK" in output
