"""Every broken config in tests/fixtures/broken/cases.yaml fails with a located, helpful ConfigError."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

import evalh.errors
from evalh.cli.app import app
from evalh.common.notices import warnings_to
from evalh.config.load import load_suite
from evalh.errors import EXIT_CONFIG, ConfigError
from evalh.runner.filters import filter_by_description

BROKEN = Path(__file__).resolve().parent.parent / "fixtures" / "broken"
CASES: list[dict[str, Any]] = yaml.safe_load((BROKEN / "cases.yaml").read_text(encoding="utf-8"))["cases"]
HOSTILE: list[dict[str, Any]] = yaml.safe_load((BROKEN / "hostile.yaml").read_text(encoding="utf-8"))["cases"]


def test_there_are_enough_broken_fixtures() -> None:
    assert len(CASES) >= 25
    assert len(HOSTILE) >= 10
    names = [case["fixture"] for case in CASES + HOSTILE]
    assert len(names) == len(set(names))
    for name in names:
        assert (BROKEN / name).is_file(), name


@pytest.mark.parametrize("case", CASES + HOSTILE, ids=[case["fixture"] for case in CASES + HOSTILE])
def test_broken_config_is_reported(case: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("EVALH_FIXTURE_UNSET_VARIABLE", raising=False)
    with pytest.raises(ConfigError) as caught, warnings_to(None, strict="--strict" in case.get("cli", [])):
        options = dict(case.get("options", {}))
        pattern = options.pop("filter_pattern", None)  # a run's filter, applied as session/run.py applies it
        filter_by_description(load_suite(BROKEN / case["fixture"], **options), pattern)
    error = caught.value
    message = str(error)
    assert error.exit_code == EXIT_CONFIG
    assert isinstance(error, getattr(evalh.errors, case["error"])), (type(error).__name__, message)
    for expected in case["expect"]:
        assert expected in message, f"{expected!r} not in:\n{message}"
    assert "Traceback" not in message


def test_hostile_configs_exit_2_through_the_cli(monkeypatch: pytest.MonkeyPatch) -> None:
    # in process (typer's runner), so these cases add no subprocess to the suite
    monkeypatch.chdir(BROKEN.parent.parent.parent)
    runner = CliRunner()
    for case in HOSTILE:
        result = runner.invoke(app, ["validate", str(BROKEN / case["fixture"])])
        assert result.exit_code == EXIT_CONFIG, (case["fixture"], result.output)
        assert result.stderr.startswith("evalh: error: "), result.stderr
        assert "internal error" not in result.stderr and "Traceback" not in result.stderr
        for expected in case["expect"]:
            assert expected in result.stderr, f"{expected!r} not in {result.stderr!r}"


def test_problems_are_capped(tmp_path: Path) -> None:
    tests = "\n".join(
        f"  - vars: {{n: {i}}}\n    assert:\n      - {{type: regex, value: '(bad{i}'}}" for i in range(30)
    )
    config = tmp_path / "evalh.yaml"
    config.write_text(f"prompts: ['{{{{n}}}}']\nproviders: [echo]\ntests:\n{tests}\n", encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        load_suite(config)
    message = str(caught.value)
    assert message.startswith(f"{config.name}: 30 problems") or "30 problems in the config" in message
    assert "and 10 more problem(s)" in message
    assert message.count("invalid regular expression") == 20


def test_bytes_that_are_not_utf8_are_located(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    config = tmp_path / "evalh.yaml"
    # a BOM, then two 2-byte characters before the bad byte: the column counts characters
    config.write_bytes(
        b'\xef\xbb\xbfprompts: [hi]\nproviders: [echo]\ntests: [{vars: {a: "\xc3\xa9\xc3\xa9\xff"}}]\n'
    )
    with pytest.raises(ConfigError) as caught:
        load_suite(config)
    assert str(caught.value) == "evalh.yaml:3:23 is not UTF-8 text (byte 0xff). Save the file as UTF-8"
    (tmp_path / "p.txt").write_bytes(b"line one\nhello \xfe\n")
    config.write_text("prompts: [file://p.txt]\nproviders: [echo]\ntests: [{}]\n", encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        load_suite(config)
    assert str(caught.value).endswith(
        "evalh.yaml:1:11 prompts[0]: p.txt:2:7 is not UTF-8 text (byte 0xfe). Save the file as UTF-8"
    )


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        ("null: 1\nprompts: [hi]\n", "evalh.yaml:1:1 null: unknown key 'null'"),
        ("prompts: [hi]\ntests: [{1.5: x}]\n", "evalh.yaml:2:10 tests[0]['1.5']: unknown key '1.5'"),
        ("prompts: [hi]\nproviders: [{null: {}}]\n", "evalh.yaml:2:13 providers[0]: unknown provider id"),
    ],
)
def test_keys_that_are_not_text_are_named_as_text(
    config: str, expected: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # YAML reads `null:` and `1.5:` as None and a float; as in JSON and promptfoo, keys are text
    monkeypatch.chdir(tmp_path)
    (tmp_path / "evalh.yaml").write_text(config, encoding="utf-8")
    with pytest.raises(ConfigError) as caught, warnings_to(None, strict=True):  # else ignored, with a warning
        load_suite(tmp_path / "evalh.yaml")
    assert str(caught.value).startswith(expected)
