"""A run's viewer data a page of matrix lines at a time (``GET /api/runs/REF?offset=O&limit=L``).

A page is :func:`~evalh.reports.viewdata.run_view`'s data with only some of its lines, and where they
stand: ``{run, columns, metrics, lines, offset, total}`` (``total``: the run's number of lines; and the
figures over the run's repeats, ``repeats``, when it has repeats; the metadata filter's choices,
``metadata``, when its tests have metadata). Each column's figures and the choices are the whole run's. The
pages of a run, in order, hold exactly ``run_view``'s lines. A stored run is never decoded whole for
it: its :class:`LineIndex` (which rows make which line, its columns and metric names) is read by
SQLite from the stored rows, and a page decodes only the rows of its own lines.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from evalh.reports.codec_read import METADATA_PATH, PLACE_PATHS, SCORES_PATH, VERDICT_PATHS, column_indexes
from evalh.reports.viewdata import Verdict, repeat_figures, run_columns, run_summary, view_lines
from evalh.reports.viewfigures import metadata_choices, metadata_texts, with_column_figures
from evalh.store import RunStore

__all__ = ["FIRST_PAGE_LINES", "MAX_PAGE_LINES", "LineIndex", "index_stored_run", "page_of_view"]

FIRST_PAGE_LINES = 250  # lines a request without ``limit`` gets: the first screens of the matrix
MAX_PAGE_LINES = 5000  # the most lines one request gets (a page's rows are held at once)
_FIELDS = (*PLACE_PATHS, SCORES_PATH, *VERDICT_PATHS, METADATA_PATH)


@dataclass(frozen=True)
class LineIndex:
    """A stored run's matrix without its cells: its summary, columns and metric names, and the stored
    positions of each line's rows, lines in test order."""

    run_id: str
    run: dict[str, Any]
    columns: list[dict[str, Any]]
    metrics: list[str]
    lines: list[list[int]]
    repeats: dict[str, Any] | None = None  # the figures over its repeats (viewdata.repeat_figures)
    metadata: dict[str, list[str]] | None = None  # the metadata filter's choices (viewfigures)

    def page(self, store: RunStore, offset: int, limit: int) -> dict[str, Any]:
        chosen = self.lines[offset : offset + limit]
        rows = store.rows_at(self.run_id, [position for line in chosen for position in line])
        lines = view_lines(list(rows), self.columns, row_ids=True)
        extra = {"repeats": self.repeats, "metadata": self.metadata}
        return _page(self.run, self.columns, self.metrics, lines, offset, len(self.lines), extra)


def index_stored_run(store: RunStore, ref: str) -> LineIndex:
    """The :class:`LineIndex` of the stored run ``ref`` (ConfigError when there is none)."""
    summary = store.resolve(ref)
    head = store.load_head(summary.id)
    lines: dict[tuple[int, int], list[int]] = {}
    first_in_column: dict[tuple[Any, Any], int] = {}
    metrics: dict[str, None] = {}
    verdicts: list[Verdict] = []
    line_metadata: dict[tuple[int, int], dict[str, str]] = {}
    for position, fields in store.row_fields(summary.id, *_FIELDS):
        test, repeat, prompt, provider, scores, success, score, metadata = fields
        line = (int(test or 0), int(repeat or 0))
        if line not in lines and isinstance(metadata, Mapping) and metadata:  # its first row's, as a page's
            line_metadata[line] = metadata_texts(metadata)
        lines.setdefault(line, []).append(position)
        column = (0 if prompt is None else prompt, 0 if provider is None else provider)
        first_in_column.setdefault(column, position)
        if isinstance(scores, Mapping):
            metrics.update(dict.fromkeys(str(name) for name in scores))
        number = float(score) if isinstance(score, int | float) else math.nan
        verdicts.append((line[0], (int(column[0]), int(column[1])), line[1], bool(success), number))
    results = head.get("results") or {}
    listed = {column_indexes(p) for p in results.get("prompts") or ()}
    # a column no prompt of the report lists is labelled from its first row, as run_view labels it
    unlisted = [position for column, position in first_in_column.items() if column not in listed]
    columns = run_columns(results, list(store.rows_at(summary.id, unlisted)))
    # the description is the config's, kept beside the run: the config itself is not read
    run = run_summary(
        {**head, "config": {"description": summary.description}}, summary.id, source=summary.config_path
    )
    ordered = [lines[key] for key in sorted(lines)]
    return LineIndex(
        summary.id,
        run,
        with_column_figures(columns, verdicts),
        sorted(metrics),
        ordered,
        repeat_figures(verdicts, columns),
        metadata_choices(line_metadata.values()) or None,
    )


def page_of_view(view: Mapping[str, Any], offset: int, limit: int) -> dict[str, Any]:
    """A page of a run's whole data (a run read from a report file)."""
    lines: Sequence[Any] = view["lines"]
    chosen = list(lines[offset : offset + limit])
    extra = {key: view.get(key) for key in ("repeats", "metadata")}
    return _page(view["run"], view["columns"], view["metrics"], chosen, offset, len(lines), extra)


def _page(
    run: Any, columns: Any, metrics: Any, lines: list[Any], offset: int, total: int, extra: Mapping[str, Any]
) -> dict[str, Any]:
    """A page; ``extra``'s keys (``repeats``, ``metadata``) only where the run has them."""
    page = {
        "run": run,
        "columns": columns,
        "metrics": metrics,
        "lines": lines,
        "offset": offset,
        "total": total,
    }
    return page | {key: value for key, value in extra.items() if value is not None}
