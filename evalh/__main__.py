"""``python -m evalh`` runs the CLI."""

from evalh.cli import main

main()
