"""``evalh init``: write a commented starter config that runs offline."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from evalh.cli.output import echo

__all__ = ["init"]


def init(
    directory: Annotated[Path, typer.Argument(help="Where to write evalh.yaml.")] = Path("."),
    force: Annotated[bool, typer.Option("--force", help="Overwrite an existing evalh.yaml.")] = False,
) -> None:
    """Write a commented starter config that runs offline (evalh run in that directory)."""
    from evalh.session.run import write_starter

    path = write_starter(directory, force=force)
    echo(f"Wrote {path}. Run it with: evalh run {path}")
