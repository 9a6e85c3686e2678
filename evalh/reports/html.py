"""The viewer's page: served by ``evalh view``, or, as the ``.html`` report, one self-contained file.

The file is the same app as the server's (the hand-written scripts and stylesheet in
``evalh/assets/viewer``, inlined) with the run's data inlined as JSON in a
``<script type="application/json">``; so a CI artifact filters, sorts, searches and shows a cell's
details with no server and no network. The scripts set every piece of data as text, never as markup,
and a Content-Security-Policy lets only these exact scripts and styles run (their sha256 hashes): an
output that slipped through as markup could still not run anything. A ``<noscript>`` summary keeps the
figures readable where scripts are off. The part of the app that draws a run's repeats (``repeats.js``,
``repeats.css``) is in the file only when the run has repeats, and the part that draws a result's trace
as a timeline (``trace.js``, ``trace.css``) only when a row has one, and the part that shows a result's
rating (``rating.js``, ``rating.css``) only when a row is rated: a run without them gets the same file as
before they existed. The report can never write: only the page ``evalh view`` serves carries the token
its writes need (``<meta name="evalh-token">``), and the rating controls are drawn only where it is.
"""

from __future__ import annotations

import base64
import hashlib
import html
import importlib.resources
import json
import uuid
from collections.abc import Iterator, Mapping
from functools import cache
from typing import Any

from evalh.reports.serialize import dumps
from evalh.reports.viewdata import run_view

__all__ = [
    "RATING_SCRIPT",
    "RATING_STYLESHEET",
    "REPEAT_SCRIPT",
    "REPEAT_STYLESHEET",
    "SCRIPTS",
    "STYLESHEET",
    "TRACE_SCRIPT",
    "TRACE_STYLESHEET",
    "asset",
    "html_chunks",
    "script_bundle",
    "server_page",
    "stylesheet",
    "to_html",
]

# urlstate.js after detail.js, whose openDetail and closeDetail it extends (the open result in the URL)
SCRIPTS = ("util.js", "history.js", "run.js", "detail.js", "urlstate.js", "compare.js", "app.js")
STYLESHEET = "app.css"
REPEAT_SCRIPT = "repeats.js"  # after run.js, whose functions it extends, before app.js starts the app
REPEAT_STYLESHEET = "repeats.css"
TRACE_SCRIPT = "trace.js"  # after detail.js, whose openDetail it extends, before app.js starts the app
TRACE_STYLESHEET = "trace.css"
RATING_SCRIPT = "rating.js"  # after run.js and detail.js, whose functions it extends, before app.js
RATING_STYLESHEET = "rating.css"

_PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="icon" href="data:,">
{csp}{meta}<title>{title}</title>
{style}
</head>
<body>
<header class="top"><a href="#/" id="brand">evalh</a><nav id="nav"></nav></header>
<main id="app">{noscript}</main>
<aside id="detail" hidden aria-label="Result details"></aside>
{data}{scripts}
</body>
</html>
"""


@cache
def asset(name: str) -> str:
    """The text of one of the viewer's static files (package data shipped in the wheel)."""
    return (importlib.resources.files("evalh") / "assets" / "viewer" / name).read_text(encoding="utf-8")


@cache
def script_bundle(*, repeats: bool, traces: bool = False, ratings: bool = False) -> str:
    """The viewer's scripts as one text, in order: inlined by the HTML report (``repeats``: with the
    part that draws repeats; ``traces``: with the one that draws traces; ``ratings``: with the one that
    shows ratings), served as ``/static/evalh.js`` by ``evalh view`` (one request, not seven)."""
    extra = (REPEAT_SCRIPT,) * repeats + (TRACE_SCRIPT,) * traces + (RATING_SCRIPT,) * ratings
    return "\n".join(asset(name) for name in (*SCRIPTS[:-1], *extra, SCRIPTS[-1]))


@cache
def stylesheet(*, repeats: bool, traces: bool = False, ratings: bool = False) -> str:
    """The viewer's styles as one text (``repeats``, ``traces``, ``ratings``: with those of the parts
    that draw them)."""
    extra = (REPEAT_STYLESHEET,) * repeats + (TRACE_STYLESHEET,) * traces + (RATING_STYLESHEET,) * ratings
    return "\n".join(asset(name) for name in (STYLESHEET, *extra))


def server_page(
    *, token: str | None = None, read_only: str | None = None, reviewer: str | None = None
) -> str:
    """The page ``evalh view`` serves: the assets by URL, the data from its API; ``token``: the one its
    writes carry (None: the viewer takes no writes, and ``read_only`` says why); ``reviewer``: the name
    its ratings are recorded as (shown on the rating form, as text)."""
    scripts = '<script src="/static/evalh.js"></script>\n'
    meta = "".join(
        f'<meta name="{name}" content="{html.escape(value)}">\n'
        for name, value in (
            ("evalh-token", token),
            ("evalh-read-only", read_only),
            ("evalh-reviewer", reviewer),
        )
        if value is not None
    )
    return _PAGE.format(
        csp="",  # the server sends its policy as a header
        meta=meta,
        title="evalh",
        style=f'<link rel="stylesheet" href="/static/{STYLESHEET}">',
        noscript="<noscript>The evalh viewer needs JavaScript.</noscript>",
        data="",
        scripts=scripts,
    )


def _sha256(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii") + "'"


def _inline_json(value: Any) -> str:
    """JSON that cannot end its ``<script>`` element: every ``<`` as ``\\u003c`` (so no ``</script``, no
    ``<!--``); lone surrogates stay ``\\udcxx`` escapes in the UTF-8 encoding (see serialize.encode_json)."""
    return dumps(value).replace("<", "\\u003c")


def _noscript(summary: Mapping[str, Any]) -> str:
    figures = (
        f"Rows {summary['rows']}, passed {summary['passed']}, failed {summary['failed']}, "
        f"errors {summary['errors']}, pass rate {summary['passRate']:.2f}%."
    )
    if summary["interrupted"]:
        figures += f" Interrupted by {summary['interruptedBy'] or 'SIGINT'}: {summary['notRun']} not run."
    return (
        f"<noscript><h1>{html.escape(summary['description'] or 'evalh report')}</h1>"
        f"<p>{html.escape(figures)}</p><p>Turn on JavaScript to see the results table.</p></noscript>"
    )


def to_html(report: Mapping[str, Any]) -> str:
    """The ``.html`` report of a run, from its JSON report (``reports.json.to_promptfoo_json``)."""
    return "".join(html_chunks(report))


def html_chunks(report: Mapping[str, Any]) -> Iterator[str]:
    """:func:`to_html` in pieces: the page around its data, and the data a matrix line at a time (a
    50,000-row run's data is 80 MB of JSON, never made as one text). ``report``'s rows may come from a
    generator: they are read once."""
    view = run_view(report, ref=str(report.get("evalId") or "run"))
    cells = [cell for line in view["lines"] for cell in line["cells"] if cell is not None]
    traces = any("trace" in cell for cell in cells)
    ratings = any("rating" in cell for cell in cells)
    script = script_bundle(repeats="repeats" in view, traces=traces, ratings=ratings)
    style = stylesheet(repeats="repeats" in view, traces=traces, ratings=ratings)
    policy = (
        f"default-src 'none'; script-src {_sha256(script)}; style-src {_sha256(style)}; "
        "img-src data:; base-uri 'none'; form-action 'none'"
    )
    description = view["run"]["description"]
    mark = f"evalh-data-{uuid.uuid4().hex}"  # no page holds it
    page = _PAGE.format(
        csp=f'<meta http-equiv="Content-Security-Policy" content="{html.escape(policy)}">\n',
        meta="",
        title=html.escape(f"evalh report: {description}" if description else "evalh report"),
        style=f"<style>{style}</style>",
        noscript=_noscript(view["run"]),
        data=mark,
        scripts=f"<script>{script}</script>",
    )
    before, after = page.split(mark, 1)
    yield before + '<script type="application/json" id="evalh-data">'
    lines = view["lines"]
    head, tail = _inline_json({"view": {**view, "lines": [mark]}}).split(json.dumps(mark), 1)
    yield head
    for position, line in enumerate(lines):  # compact JSON separates list items with ", "
        yield (", " if position else "") + _inline_json(line)
    yield tail + "</script>\n" + after
