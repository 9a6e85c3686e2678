"""docs/metrics.md's table lists every metric type with the default threshold the registry holds."""

from __future__ import annotations

import re
from pathlib import Path

from evalh.assertions.registry import all_assertions

DOC = Path(__file__).resolve().parents[2] / "docs" / "metrics.md"
FAMILIES = ("lexical", "retrieval", "ordinal", "citation")
ROW = re.compile(
    r"^\| `(?P<type>[a-z0-9-]+)` \|.*\| (?P<default>[0-9.]+|none \([^)]*\)) \|[^|]*\|$", re.MULTILINE
)


def test_docs_table_matches_the_registry() -> None:
    documented = {
        match["type"]: None if match["default"].startswith("none") else float(match["default"])
        for match in ROW.finditer(DOC.read_text(encoding="utf-8"))
    }
    registered = {
        name: definition.default_threshold
        for name, definition in all_assertions().items()
        if definition.family in FAMILIES
    }
    assert len(registered) == 15
    assert documented == registered
