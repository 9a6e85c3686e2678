"""``evalh cache info`` / ``evalh cache clear``: the embedding and completion cache."""

from __future__ import annotations

import typer

from evalh.cli.output import echo

__all__ = ["HELP", "clear", "info"]

HELP = "Inspect or clear the embedding and completion cache."


def info() -> None:
    """Where the cache is, its size, how long an entry is read (EVALH_CACHE_TTL) and its entries."""
    from evalh.runner.cache import Cache

    details = Cache.open().info()
    echo(f"path: {details['path']}")
    typer.echo(f"size: {details['bytes']:,} bytes")
    typer.echo(
        f"entries are read for {details['ttlSeconds']:,.0f} s after they are written (EVALH_CACHE_TTL)"
    )
    entries = details["entries"] or {"(empty)": 0}
    for namespace, count in entries.items():
        typer.echo(f"{namespace}: {count:,} entries")


def clear() -> None:
    """Delete every cached embedding and completion."""
    from evalh.runner.cache import Cache

    removed = Cache.open().clear()
    typer.echo(f"Cleared {removed:,} cache entries.")
