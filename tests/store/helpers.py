"""Configs and CLI runs shared by the run-store tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from typer.testing import CliRunner, Result

from evalh.cli.app import app


def write_config(directory: Path, answers: dict[str, str], *, name: str = "evalh.yaml") -> Path:
    """A suite of recorded answers: one test per question, passing when the answer contains 'yes'."""
    tests = [
        {
            "description": question,
            "vars": {"q": question},
            "output": answer,
            "assert": [{"type": "icontains", "value": "yes"}],
        }
        for question, answer in answers.items()
    ]
    path = directory / name
    path.write_text(json.dumps({"description": "store test", "tests": tests}), encoding="utf-8")
    return path


def echo_config(directory: Path, count: int) -> Path:
    """``count`` tests through the echo provider (real provider calls)."""
    tests = [{"vars": {"n": str(i)}, "assert": [{"type": "contains", "value": "say"}]} for i in range(count)]
    config = {"prompts": ["say {{ n }}"], "providers": ["echo"], "tests": tests}
    path = directory / "echo.yaml"
    path.write_text(json.dumps(config), encoding="utf-8")
    return path


def evalh(*args: str) -> Result:
    return CliRunner().invoke(app, [str(arg) for arg in args])


def report(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))  # type: ignore[no-any-return]
