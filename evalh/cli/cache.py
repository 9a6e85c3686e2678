"""``evalh cache info`` / ``evalh cache clear``: the embedding and completion cache, and the compiled
TypeScript / ES module files kept beside it."""

from __future__ import annotations

import typer

from evalh.cli.output import echo

__all__ = ["HELP", "clear", "info"]

HELP = "Inspect or clear the embedding and completion cache."


def info() -> None:
    """Where the cache is, its size, how long an entry is read (EVALH_CACHE_TTL) and its entries."""
    from evalh.runner.cache import Cache
    from evalh.runtimes.typescript import compiled_files

    details = Cache.open().info()
    echo(f"path: {details['path']}")
    typer.echo(f"size: {details['bytes']:,} bytes")
    typer.echo(
        f"entries are read for {details['ttlSeconds']:,.0f} s after they are written (EVALH_CACHE_TTL)"
    )
    entries = details["entries"] or {"(empty)": 0}
    for namespace, count in entries.items():
        typer.echo(f"{namespace}: {count:,} entries")
    compiled = compiled_files()
    if compiled:
        size = sum(path.stat().st_size for path in compiled)
        typer.echo(f"compiled TypeScript / ES module files: {len(compiled):,} ({size:,} bytes)")


def clear() -> None:
    """Delete every cached embedding and completion, the compiled TypeScript files, the schema shapes
    known valid and the large configs' parsed data."""
    from evalh.config.parse_cache import clear_parsed
    from evalh.config.shape_cache import clear_known_shapes
    from evalh.runner.cache import Cache
    from evalh.runtimes.typescript import clear_compiled

    removed = Cache.open().clear()
    typer.echo(f"Cleared {removed:,} cache entries.")
    compiled = clear_compiled()
    if compiled:
        typer.echo(f"Deleted {compiled:,} compiled TypeScript / ES module files.")
    if clear_known_shapes():
        typer.echo("Deleted the schema shapes known valid (the next run validates every config in full).")
    if clear_parsed():
        typer.echo("Deleted the parsed data of large configs (the next run reads them again).")
