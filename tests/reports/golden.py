"""Golden-file comparison. Regenerate every golden file with ``UPDATE_GOLDEN=1 pytest tests/reports``."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["GOLDEN_DIR", "assert_golden"]

GOLDEN_DIR = Path(__file__).resolve().parent.parent / "golden"


def assert_golden(name: str, actual: str) -> None:
    """``actual`` must equal ``tests/golden/<name>``; with UPDATE_GOLDEN=1 the file is rewritten instead."""
    path = GOLDEN_DIR / name
    if os.environ.get("UPDATE_GOLDEN") == "1":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(actual, encoding="utf-8", newline="")
        return
    assert path.exists(), f"missing golden file {path}; create it with UPDATE_GOLDEN=1 pytest tests/reports"
    expected = path.read_bytes().decode("utf-8")
    assert actual == expected, (
        f"{name} differs from its golden file; if the change is intended, run UPDATE_GOLDEN=1"
    )
