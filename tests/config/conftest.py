"""Helpers for config tests: write a small project (config + files) into a temporary directory."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

WriteFiles = Callable[..., Path]


@pytest.fixture
def project(tmp_path: Path) -> WriteFiles:
    """``project(config_text, {"data/x.txt": text, ...})`` writes the config and its files into a
    temporary directory and returns the config's path."""

    def write(config: str, files: dict[str, str] | None = None, name: str = "evalh.yaml") -> Path:
        for relative, text in (files or {}).items():
            target = tmp_path / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
        path = tmp_path / name
        path.write_text(config, encoding="utf-8")
        return path

    return write
