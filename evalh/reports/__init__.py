"""Reports of a run: JSON (promptfoo's output-file shape), JSONL, JUnit XML, CSV, YAML, HTML, console.

Entry points: :func:`evalh.reports.writers.write_reports` for files,
:class:`evalh.reports.writers.JsonlStream` for rows streamed as they finish, and
:func:`evalh.reports.table.print_summary` for the console (the one module that imports ``rich``).
This package imports nothing heavy on purpose.
"""

__all__: list[str] = []
