"""The command-line face: the Typer app (app.py) and one module per sub-command.

Thin by rule: flags become run options, a library call does the work, and this package alone turns an
:class:`evalh.errors.EvalhError` into an exit code and a one-paragraph message (docs/architecture.md).
"""
