"""``python -m evalh`` runs the CLI."""

from evalh.entry import run_program

run_program()
