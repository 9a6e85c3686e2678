"""``evalh`` builds only the sub-command it runs (evalh.cli.app.command_group), and says exactly what typer's
fully built group says: help texts, usage errors, unknown commands and options, exit codes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import typer.main

from evalh.cli.app import LazyCommands, app, command_group

_RUN = (
    "import sys\nsys.argv = ['evalh', *{argv!r}]\n"
    "from evalh.cli import app as cli\nimport typer.main\n"
    "{call}\n"
)
_LAZY = "cli.main()"  # the console script's way
_TYPER = "typer.main.get_command(cli.app)()"  # typer's own way: every command built first


def _outcome(argv: list[str], call: str, cwd: Path) -> tuple[int, str, str]:
    env = {**os.environ, "COLUMNS": "100", "NO_COLOR": "1", "EVALH_HOME": str(cwd / "home")}
    code = _RUN.format(argv=argv, call=call)
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=cwd, env=env, timeout=120
    )
    return done.returncode, done.stdout, done.stderr


def _every_help() -> list[list[str]]:
    full = typer.main.get_command(app)
    asked: list[list[str]] = [["--help"]]
    for name, command in full.commands.items():  # type: ignore[attr-defined]
        asked.append([name, "--help"])
        for sub in getattr(command, "commands", {}):
            asked.append([name, sub, "--help"])
    return asked


MISTAKES = [
    [],
    ["evl"],
    ["runz", "list"],
    ["eval", "--bogus"],
    ["eval", "--max-concurrency", "many"],
    ["validate", "--no-such-flag", "x.yaml"],
    ["runs"],
    ["runs", "lst"],
    ["cache", "purge"],
    ["eval", "--share"],
    ["--version"],
    ["--verison"],
]


@pytest.mark.parametrize("argv", [*_every_help(), *MISTAKES], ids=" ".join)
def test_the_lazy_group_says_what_typers_full_group_says(argv: list[str], tmp_path: Path) -> None:
    lazy = _outcome(argv, _LAZY, tmp_path)
    assert lazy == _outcome(argv, _TYPER, tmp_path)
    assert lazy[1] or lazy[2]  # something was said


def test_the_root_help_lists_every_command_in_typers_order() -> None:
    full = typer.main.get_command(app)
    lazy = command_group()
    assert list(lazy.commands) == list(full.commands)  # type: ignore[attr-defined]
    assert [lazy.commands[name].name for name in lazy.commands] == list(full.commands)  # type: ignore[attr-defined]


def test_a_command_is_built_only_when_asked_for() -> None:
    group = command_group()
    commands = group.commands
    assert isinstance(commands, LazyCommands)
    assert commands.built() == []
    assert "runs" in commands and "nope" not in commands  # names only: nothing built
    eval_command = group.get_command(None, "eval")  # type: ignore[arg-type]
    assert eval_command is not None and eval_command.name == "eval"
    assert commands.built() == ["eval"]
    assert group.get_command(None, "eval") is eval_command  # type: ignore[arg-type]
    assert group.get_command(None, "nope") is None  # type: ignore[arg-type]
    assert commands.built() == ["eval"]
    full = typer.main.get_command(app).commands["eval"]  # type: ignore[attr-defined]
    assert [param.opts for param in eval_command.params] == [param.opts for param in full.params]
