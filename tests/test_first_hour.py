"""The first hour with evalh (issue 15): editor completion travels, examples teach, Ctrl-C is quiet."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from evalh.cli import app


def _validate(config: Path) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["validate", str(config)])
    return result.exit_code, result.stderr


def test_init_names_its_schema_relatively_and_validate_warns_when_it_is_gone(tmp_path: Path) -> None:
    assert CliRunner().invoke(app, ["init", str(tmp_path / "suite")]).exit_code == 0
    config = tmp_path / "suite" / "evalh.yaml"
    first_line = config.read_text(encoding="utf-8").splitlines()[0]
    assert first_line == "# yaml-language-server: $schema=evalh.schema.json"  # relative: it travels
    assert _validate(config) == (0, "")  # the schema beside it: nothing to say
    (tmp_path / "suite" / "evalh.schema.json").unlink()
    code, stderr = _validate(config)
    assert code == 0  # a warning: the config itself is still valid
    assert f"{config}:1:" in stderr and "evalh.schema.json does not exist" in stderr
    assert f"evalh schema -o {tmp_path / 'suite' / 'evalh.schema.json'}" in stderr
    strict = CliRunner().invoke(app, ["validate", str(config), "--strict"])
    assert strict.exit_code == 2 and "evalh schema -o" in strict.stderr


def test_schema_comment_further_down_is_located_and_urls_are_left_alone(tmp_path: Path) -> None:
    config = tmp_path / "evalh.yaml"
    body = "tests:\n  - output: hi\n    assert: [{type: equals, value: hi}]\n"
    comment = "#  yaml-language-server: $schema=schemas/gone.json"
    config.write_text(f"# A suite\n{comment}\n{body}", encoding="utf-8")
    code, stderr = _validate(config)
    assert code == 0 and f"{config}:2:" in stderr and "schemas/gone.json does not exist" in stderr
    url = "# yaml-language-server: $schema=https://example.invalid/s.json"
    config.write_text(f"{url}\n{body}", encoding="utf-8")
    assert _validate(config) == (0, "")
