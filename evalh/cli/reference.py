"""``evalh schema`` and ``evalh list``: what this evalh knows (the config's JSON Schema, the assertion
types and provider ids of its registries)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated

import typer

from evalh.cli.output import echo
from evalh.errors import ConfigError

__all__ = ["list_", "schema"]


def schema(
    report: Annotated[bool, typer.Option("--report", help="Print the JSON report's schema instead.")] = False,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write it to this file instead of printing it.")
    ] = None,
) -> None:
    """Print the JSON Schema of the config, every assertion type included (for editors:
    `evalh schema -o evalh.schema.json`, then `# yaml-language-server: $schema=evalh.schema.json`)."""
    from evalh.config.schema import schema_text, write_schema

    name = "report.schema.json" if report else "evalh.schema.json"
    if output is None:
        typer.echo(schema_text(name), nl=False)
    else:
        echo(f"wrote {write_schema(output, name)}")


def list_(what: Annotated[str, typer.Argument(help="assertions or providers")]) -> None:
    """List the assertion types or provider ids evalh knows (from its registries)."""
    from evalh.reports.listing import print_assertions, print_providers

    printers: dict[str, Callable[[], None]] = {
        "assertions": print_assertions,
        "providers": print_providers,
    }
    if what not in printers:
        raise ConfigError(
            f"cannot list {what!r}", hint="Use `evalh list assertions` or `evalh list providers`"
        )
    printers[what]()
