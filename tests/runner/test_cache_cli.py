"""A damaged cache through the command line: `cache clear` and `cache info` still work, and a run
warns once, moves the file aside and grades every row."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from evalh.cli.app import app


def damaged_cache() -> Path:
    folder = Path(os.environ["EVALH_CACHE_DIR"])
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "cache.sqlite3"
    path.write_bytes(b"\x00garbage, not SQLite" * 500)
    return path


def test_cache_clear_deletes_a_damaged_cache() -> None:
    path = damaged_cache()
    result = CliRunner().invoke(app, ["cache", "clear"])
    assert result.exit_code == 0, result.output
    assert "Cleared 0 cache entries." in result.stdout
    assert not path.exists()


def test_cache_info_on_a_damaged_cache_moves_it_aside() -> None:
    path = damaged_cache()
    result = CliRunner().invoke(app, ["cache", "info"])
    assert result.exit_code == 0, result.output
    assert f"path: {path}" in result.stdout
    assert len(list(path.parent.glob("cache.sqlite3.corrupt-*"))) == 1


CONFIG = """
tests:
  - output: The capital city of France is Paris.
    assert:
      - {type: similar, value: Paris is the capital of France., threshold: 0.8}
  - output: Bananas are yellow.
    assert:
      - {type: similar, value: Bananas are a yellow fruit., threshold: 0.7}
"""


@pytest.mark.slow
def test_a_run_on_a_damaged_cache_warns_once_and_grades_every_row(tmp_path: Path) -> None:
    path = damaged_cache()
    (tmp_path / "evalh.yaml").write_text(CONFIG, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "evalh", "run", "evalh.yaml", "--no-table", "--no-progress-bar"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stderr.count("evalh: warning: the cache") == 1
    assert f"the cache {path} is damaged (not an SQLite database)" in done.stderr
    assert len(list(path.parent.glob("cache.sqlite3.corrupt-*"))) == 1
    assert path.exists()  # the new cache, filled by this run
