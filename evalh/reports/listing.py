"""``evalh list assertions|providers``: the registries as tables (rich when on a terminal; plain and
unwrapped when piped, so ``evalh list assertions | grep WORD`` finds whole words)."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text

from evalh.assertions.registry import all_assertions
from evalh.providers.registry import PROVIDERS
from evalh.reports.console import make_console, table_box

__all__ = ["print_assertions", "print_providers"]


def print_assertions() -> None:
    """Every assertion type, its family, what it needs and its default threshold."""
    console = make_console()
    table = Table(
        title="Assertion types (prefix any with not- to negate)",
        title_justify="left",
        box=table_box(console),
    )
    for column in ("type", "family", "needs", "default threshold", "description"):
        table.add_column(column, overflow="fold")
    for name, definition in all_assertions().items():
        threshold = "" if definition.default_threshold is None else f"{definition.default_threshold:g}"
        if definition.threshold_meaning and threshold:
            threshold = f"{threshold} ({definition.threshold_meaning})"
        cells = (
            name,
            definition.family,
            ", ".join(definition.needs) or "-",
            threshold,
            definition.description,
        )
        table.add_row(*(Text(cell) for cell in cells))  # text, never rich markup: "[doc-3]" stays
    console.print(table)


def print_providers() -> None:
    """Every provider id or id prefix, with its capabilities and an example."""
    console = make_console()
    table = Table(
        title="Providers (ids ending in ':' take a model, deployment, command or file)",
        title_justify="left",
        box=table_box(console),
    )
    for column in ("id", "capabilities", "example", "description"):
        table.add_column(column, overflow="fold")
    for entry in PROVIDERS:
        cells = (entry.pattern, ", ".join(entry.capabilities), entry.example, entry.description)
        table.add_row(*(Text(cell) for cell in cells))
    console.print(table)
