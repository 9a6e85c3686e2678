"""The examples teach (issue 15): each opens with a comment saying what it shows, how to run it and, when
it runs offline, the exit code it gives; every offline one runs in CI through the CLI and gives that code;
the README's example is one of them, word for word."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from evalh.cli.app import app

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples" / "configs").glob("*.yaml"))
_EXIT_CODE = re.compile(r"\bexit code (\d+)\b")


def _header(example: Path) -> str:
    """The comment the file opens with (the editor's schema line aside)."""
    lines = example.read_text(encoding="utf-8").splitlines()
    comments = []
    for line in lines:
        if not line.startswith("#"):
            break
        if "yaml-language-server:" not in line:
            comments.append(line.lstrip("# "))
    return " ".join(comments)


def _documented_exit_code(example: Path) -> int | None:
    found = _EXIT_CODE.search(_header(example))
    return int(found.group(1)) if found else None


OFFLINE = [path for path in EXAMPLES if _documented_exit_code(path) is not None]


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda path: path.name)
def test_every_example_opens_with_what_it_shows_and_how_to_run_it(example: Path) -> None:
    header = _header(example)
    assert len(header.split()) >= 12, f"{example.name}: say what it shows in its opening comment"
    assert f"evalh run examples/configs/{example.name}" in header
    # offline ones document their exit code (and are run below); the others say what they need
    assert _documented_exit_code(example) is not None or "Needs " in header, example.name


def test_most_examples_run_offline() -> None:
    assert len(OFFLINE) >= 4 and len(OFFLINE) >= len(EXAMPLES) - 1


@pytest.mark.parametrize("example", OFFLINE, ids=lambda path: path.name)
def test_every_offline_example_gives_its_documented_exit_code(example: Path, tmp_path: Path) -> None:
    report = tmp_path / "r.json"
    # --strict: an example teaches nothing that warns (a recorded output beside providers, an undefined var)
    command = ["run", str(example), "--strict", "--no-table", "--no-write", "-o", str(report)]
    result = CliRunner().invoke(app, command)
    assert result.exit_code == _documented_exit_code(example), result.output
    stats = json.loads(report.read_text(encoding="utf-8"))["results"]["stats"]
    assert stats["successes"] > 0 and stats["errors"] == 0


def test_the_readme_example_is_an_example_config_word_for_word() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## A short example", 1)[1]
    block = re.search(r"```yaml\n(.*?)```", section, flags=re.DOTALL)
    assert block is not None
    named = re.search(r"evalh run (examples/configs/\S+\.yaml)", block.group(1))
    assert named is not None, "the README's example says which example file it is"
    assert (ROOT / named.group(1)).read_text(encoding="utf-8") == block.group(1)
