"""The first hour with evalh (issue 15): the starter's promises hold. Through the CLI in process
(typer's CliRunner), with real exec: programs: a recorded output next to providers is said to win,
the exec: contract the docs state is the one a program receives."""

from __future__ import annotations

import json
import sys
from importlib.resources import files
from pathlib import Path

import pytest

from tests.cli.test_run_guards import _message, evalh, write

RECORDED_WITH_PROVIDER = """
    prompts: ["Say {{word}}"]
    providers: [echo]
    tests:
      - vars: {word: hi}
        output: recorded answer
        assert: [{type: contains, value: recorded}]
      - vars: {word: there}
        assert: [{type: contains, value: there}]
"""


def test_a_recorded_output_next_to_providers_is_a_located_warning(tmp_path: Path) -> None:
    config = write(tmp_path / "c.yaml", RECORDED_WITH_PROVIDER)
    for command in ("validate", "run"):
        result = evalh(command, str(config), *(["--no-table"] if command == "run" else []))
        assert result.exit_code == 0, result.stderr
        message = _message(result)
        assert message.count("evalh: warning:") == 1, message
        assert "c.yaml:6:5" in message  # the first test's output:
        assert "1 test(s) have a recorded output" in message
        assert "providers (echo) are not called" in message
    strict = evalh("validate", "--strict", str(config))  # the warning's error
    assert (strict.exit_code, "recorded output" in _message(strict)) == (2, True)


def test_a_fully_recorded_suite_gets_no_warning(tmp_path: Path) -> None:
    config = write(tmp_path / "c.yaml", "tests: [{output: hi, assert: [{type: equals, value: hi}]}]\n")
    result = evalh("validate", str(config))
    assert result.exit_code == 0 and "warning" not in result.stderr


def test_the_starter_says_to_remove_recorded_outputs_with_a_provider() -> None:
    starter = files("evalh.assets").joinpath("starter.yaml").read_text(encoding="utf-8")
    assert "remove `output:`" in starter
    assert "the prompt is its last argument" not in starter


def test_the_documented_exec_contract_is_what_a_program_receives(tmp_path: Path) -> None:
    listing = evalh("list", "providers")
    assert "argv[1] is the prompt" in " ".join(listing.stdout.split())
    assert "context JSON (the last argument)" in " ".join(listing.stdout.split())
    write(
        tmp_path / "app.py",
        """
        import json, sys
        context = json.loads(sys.argv[-1])
        print(f"{sys.argv[1]} / {context['vars']['word']}")
        """,
    )
    config = write(
        tmp_path / "c.yaml",
        f"""
        prompts: ["Say {{{{word}}}}"]
        providers: ["exec:{sys.executable} {tmp_path / "app.py"}"]
        tests:
          - vars: {{word: hi}}
            assert: [{{type: equals, value: Say hi / hi}}]
        """,
    )
    report = tmp_path / "r.json"
    result = evalh("run", str(config), "--no-table", "--no-cache", "-o", str(report))
    assert result.exit_code == 0, result.stderr + json.dumps(json.loads(report.read_text())["results"])[:800]


RUBRIC = """
    {default}
    tests:
      - output: hi
        assert: [{{type: llm-rubric, value: polite{provider}}}]
      - output: hi
        assert: [{{type: llm-rubric, value: kind{provider}}}]
"""
NON_GRADERS = {
    "--grader": ("", "", ["--grader", "echo"], "(from --grader)"),
    "options.provider": (
        "defaultTest: {options: {provider: echo}}",
        "",
        [],
        "(from defaultTest.options.provider)",
    ),
    "assertion": ("", ", provider: echo", [], "(from tests[0].assert[0].provider)"),
}


@pytest.mark.parametrize("source", sorted(NON_GRADERS))
@pytest.mark.parametrize("command", ["validate", "run"])
def test_echo_is_refused_as_a_grader(tmp_path: Path, source: str, command: str) -> None:
    # it used to pass every llm-rubric: the echoed grading prompt holds the example verdict
    default, provider, flags, origin = NON_GRADERS[source]
    config = write(tmp_path / "c.yaml", RUBRIC.format(default=default, provider=provider))
    report = tmp_path / "r.json"
    extra = ["--no-table", "-o", str(report)] if command == "run" else []
    result = evalh(command, str(config), *flags, *extra)
    assert result.exit_code == 2, result.stderr
    message = _message(result)
    expected = "c.yaml:5:14 tests[0].assert[0]: llm-rubric needs a model to grade, but provider 'echo' "
    assert expected + origin in message
    assert "cannot grade" in message and not report.exists()


MIXED = """
    tests:
      - output: hello
        assert: [{type: equals, value: hello}]
      - output: bye
        assert: [{type: equals, value: hello}]
"""


@pytest.mark.parametrize(
    ("env", "coloured"),
    [
        ({"FORCE_COLOR": "1"}, True),  # the check below can see colour at all
        ({"FORCE_COLOR": "0"}, False),  # rich read any value as "force"
        ({"FORCE_COLOR": "false"}, False),
        ({"FORCE_COLOR": ""}, False),
        ({"FORCE_COLOR": "1", "NO_COLOR": "1"}, False),  # NO_COLOR wins, bold included
        ({"NO_COLOR": "1"}, False),
    ],
)
def test_colour_follows_no_color_and_force_color(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, env: dict[str, str], coloured: bool
) -> None:
    for name in ("FORCE_COLOR", "NO_COLOR", "TTY_COMPATIBLE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("TERM", "xterm-256color")
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    config = write(tmp_path / "c.yaml", MIXED)
    result = evalh("run", str(config), "--no-write")
    assert result.exit_code == 1, result.stderr
    assert "Results" in result.stdout
    assert ("\x1b[" in result.stdout) is coloured, repr(result.stdout[:300])
