"""``evalh list assertions|providers``: the registries as tables (rich when on a terminal)."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from evalh.assertions.registry import all_assertions
from evalh.providers.registry import PROVIDERS

__all__ = ["print_assertions", "print_providers"]


def _console() -> Console:
    return Console(soft_wrap=False, highlight=False)


def print_assertions() -> None:
    """Every assertion type, its family, what it needs and its default threshold."""
    table = Table(title="Assertion types (prefix any with not- to negate)", show_lines=False)
    for column in ("type", "family", "needs", "default threshold", "description"):
        table.add_column(column, overflow="fold")
    for name, definition in all_assertions().items():
        threshold = "" if definition.default_threshold is None else f"{definition.default_threshold:g}"
        if definition.threshold_meaning and threshold:
            threshold = f"{threshold} ({definition.threshold_meaning})"
        table.add_row(
            name, definition.family, ", ".join(definition.needs) or "-", threshold, definition.description
        )
    _console().print(table)


def print_providers() -> None:
    """Every provider id or id prefix, with its capabilities and an example."""
    table = Table(title="Providers (ids ending in ':' take a model, deployment, command or file)")
    for column in ("id", "capabilities", "example", "description"):
        table.add_column(column, overflow="fold")
    for entry in PROVIDERS:
        table.add_row(entry.pattern, ", ".join(entry.capabilities), entry.example, entry.description)
    _console().print(table)
