"""A run as one self-contained static HTML page: summary figures and a results table.

Rows are tests (and repeats), columns the vars then one per ``[provider] prompt-label``; each result cell
shows the status (coloured), the score, the output and, unless it passed, the reason. Everything is
escaped by Jinja2's autoescape; no script, no external asset.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import jinja2

from evalh.model import RunResult, Status, TestResult
from evalh.reports.textutil import escape_controls, output_text, truncate

__all__ = ["to_html"]

OUTPUT_LIMIT = 4000
REASON_LIMIT = 2000

_TEMPLATE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>evalh report{% if title %}: {{ title }}{% endif %}</title>
<style>
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 1.5rem; color: #1f2328; }
h1 { font-size: 1.4rem; margin: 0 0 .5rem; }
.summary { display: flex; gap: 1.5rem; flex-wrap: wrap; margin: 0 0 1rem; padding: 0; list-style: none; }
.summary b { font-size: 1.1rem; }
table { border-collapse: collapse; width: 100%; font-size: .9rem; }
th, td { border: 1px solid #d0d7de; padding: .35rem .5rem; vertical-align: top; text-align: left; }
th { background: #f6f8fa; position: sticky; top: 0; }
td.PASS { background: #e6f4ea; } td.FAIL { background: #fde8e8; } td.ERROR { background: #fff4e0; }
.status { font-weight: 600; } .PASS .status { color: #1a7f37; } .FAIL .status { color: #cf222e; }
.ERROR .status { color: #9a6700; }
pre { white-space: pre-wrap; word-break: break-word; margin: .25rem 0; font-size: .85rem; }
.reason { color: #57606a; font-size: .85rem; }
</style>
</head>
<body>
<h1>evalh report{% if title %}: {{ title }}{% endif %}</h1>
<ul class="summary">
<li>Tests <b>{{ total }}</b></li><li>Passed <b>{{ passed }}</b></li><li>Failed <b>{{ failed }}</b></li>
<li>Errors <b>{{ errors }}</b></li><li>Pass rate <b>{{ "%.2f"|format(pass_rate) }}%</b></li>
<li>Duration <b>{{ "%.1f"|format(duration_s) }} s</b></li><li>Started <b>{{ started_at }}</b></li>
{% if interrupted %}<li><b>Interrupted by {{ interrupted }}: {{ not_run }} not run</b></li>{% endif %}
</ul>
<table>
<thead><tr><th>#</th>{% if with_description %}<th>Description</th>{% endif %}
{% for name in var_names %}<th>{{ name }}</th>{% endfor %}
{% for name in column_names %}<th>{{ name }}</th>{% endfor %}</tr></thead>
<tbody>
{% for line in lines %}<tr><td>{{ line.number }}</td>
{% if with_description %}<td>{{ line.description }}</td>{% endif %}
{% for value in line.vars %}<td><pre>{{ value }}</pre></td>{% endfor %}
{% for cell in line.cells %}{% if cell %}<td class="{{ cell.status }}">
<span class="status">{{ cell.status }}</span>
 {{ "%.2f"|format(cell.score) }}<pre>{{ cell.output }}</pre>
{% if cell.reason %}<div class="reason">{{ cell.reason }}</div>{% endif %}</td>
{% else %}<td></td>{% endif %}{% endfor %}</tr>
{% endfor %}</tbody>
</table>
</body>
</html>
"""


@dataclass(frozen=True)
class _Cell:
    status: str
    score: float
    output: str
    reason: str


@dataclass(frozen=True)
class _Line:
    number: str
    description: str
    vars: list[str]
    cells: list[_Cell | None]


def _text(value: Any, limit: int) -> str:
    return truncate(escape_controls(output_text(value)), limit)


def _cell(row: TestResult | None) -> _Cell | None:
    if row is None:
        return None
    output = row.output if row.output is not None or row.status is not Status.ERROR else row.error
    reason = "" if row.status is Status.PASS else (row.reason or row.error or "")
    return _Cell(row.status.value, row.score, _text(output, OUTPUT_LIMIT), _text(reason, REASON_LIMIT))


def _environment() -> jinja2.Environment:
    return jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined, trim_blocks=True)


def to_html(run: RunResult) -> str:
    """The HTML page of ``run``."""
    columns = run.aggregates.columns
    grid: dict[tuple[int, int], dict[tuple[int, int], TestResult]] = {}
    for column in columns:
        for row in column.rows:
            grid.setdefault((row.test.index, row.repeat_index), {})[column.key] = row
    first = {key: next(iter(cells.values())).test for key, cells in grid.items()}
    keys = sorted(grid)
    var_names = list(dict.fromkeys(name for key in keys for name in first[key].vars))
    lines = [
        _Line(
            number=f"{key[0] + 1}" + (f".{key[1] + 1}" if key[1] else ""),
            description=_text(first[key].description or "", 500),
            vars=[_text(first[key].vars.get(name, ""), 500) for name in var_names],
            cells=[_cell(grid[key].get(column.key)) for column in columns],
        )
        for key in keys
    ]
    template = _environment().from_string(_TEMPLATE)
    return template.render(
        title=escape_controls(run.suite.description or ""),
        total=len(run.results),
        passed=run.count(Status.PASS),
        failed=run.count(Status.FAIL),
        errors=run.count(Status.ERROR),
        pass_rate=run.pass_rate,
        duration_s=run.duration_ms / 1000.0,
        started_at=run.started_at,
        interrupted=(run.interrupted_by or "SIGINT") if run.interrupted else "",
        not_run=run.not_run,
        with_description=any(first[k].description for k in keys),
        var_names=[escape_controls(n) for n in var_names],
        column_names=[escape_controls(c.name) for c in columns],
        lines=lines,
    )
