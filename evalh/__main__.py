"""``python -m evalh`` runs the CLI."""

from evalh.cli.entry import run_program

run_program()
