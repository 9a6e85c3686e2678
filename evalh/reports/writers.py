"""Write report files, the format chosen by the file name's extension (promptfoo's ``-o``).

=============== ===================================================================================
``.json``       promptfoo's output file (:func:`evalh.reports.json.to_promptfoo_json`), indented up to
                :data:`PRETTY_JSON_MAX_ROWS` rows, compact beyond; written row by row from the rows'
                texts (:mod:`evalh.reports.streamed`), never whole in memory
``.jsonl``      one promptfoo ``EvaluateResult`` per line (:class:`JsonlStream` writes it as rows finish)
``.xml``        JUnit XML (``.junit.xml`` too), for CI test reporters
``.csv``        promptfoo's web-UI export layout
``.yaml/.yml``  YAML dump of the JSON object; ``.txt`` the same, like promptfoo
``.html``       the viewer (``evalh view``) as one self-contained file, the run inlined
``.md``         a Markdown summary for CI job summaries and PR comments (:mod:`evalh.reports.markdown`)
=============== ===================================================================================

Every path is checked before the run's first provider call (:func:`check_report_paths`): a known
extension, a directory that exists or can be created and is writable, no two reports on one file, and
never a file the run reads (the config, its tests, prompts and vars files, the ``--filter-failing``
report). Files are written to a temporary sibling then renamed, so a failed or interrupted write never
leaves half a report; a report path that is a symbolic link writes the link's target and keeps the link.
Every byte written goes through :func:`~evalh.secrets.redact_bytes` (secret values of the run).
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, TextIO

from evalh.common import gc_policy
from evalh.errors import ConfigError, ReportError
from evalh.model import RunRecord, TestResult
from evalh.reports.codec import new_memo, result_to_json
from evalh.reports.serialize import dumps, encode_json
from evalh.reports.streamed import ConfigEcho, ReportFrame, RowSpool, encode_row
from evalh.secrets import redact_bytes

__all__ = [
    "PRETTY_JSON_MAX_ROWS",
    "WRITE_BLOCK",
    "JsonlStream",
    "check_report_paths",
    "combine_report_errors",
    "report_format",
    "supported_extensions",
    "write_each_report",
    "write_json_file",
    "write_reports",
    "write_text_file",
]

# Indented JSON goes through the pure-Python encoder (4x slower); bigger reports are written compact.
PRETTY_JSON_MAX_ROWS = 2000

# A JSON report's pieces (a row each) are joined into blocks of this many characters before they are
# encoded, redacted and written: a call of each per row cost more than the bytes.
WRITE_BLOCK = 1 << 20

_Texts = Callable[[], Iterator[str]]  # the rows' JSON texts, in the run's order, each time it is called

_FORMATS = {
    ".junit.xml": "junit",
    ".json": "json",
    ".jsonl": "jsonl",
    ".xml": "junit",
    ".csv": "csv",
    ".yaml": "yaml",
    ".yml": "yaml",
    ".txt": "yaml",
    ".html": "html",
    ".md": "markdown",
}


def supported_extensions() -> tuple[str, ...]:
    """The file extensions :func:`write_reports` understands."""
    return tuple(_FORMATS)


def report_format(path: str | Path) -> str:
    """The format of a report path (``json``, ``jsonl``, ``junit``, ``csv``, ``yaml``, ``html``).

    Raises ConfigError (exit 2) naming the supported extensions when the extension is unknown.
    """
    name = Path(path).name.lower()
    for extension, fmt in _FORMATS.items():
        if name.endswith(extension) and len(name) > len(extension):
            return fmt
    raise ConfigError(
        "unsupported report format",
        where=str(path),
        hint=f"Use one of the extensions {', '.join(supported_extensions())}",
    )


def _same_file_key(path: str | Path) -> str:
    """One key per file, whatever the spelling: absolute, symbolic links followed, case as given."""
    return os.path.realpath(os.path.abspath(os.path.expanduser(path)))


def _writable_problem(path: Path) -> str | None:
    """Why ``path`` cannot be written (None when it can): checked without creating anything."""
    target = Path(_same_file_key(path))
    if target.is_dir():
        return "is a directory"
    ancestor = target.parent
    while not ancestor.exists():  # the missing directories are created when the report is written
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        return f"{ancestor} is not a directory"
    if not os.access(ancestor, os.W_OK | os.X_OK):
        return f"the directory {ancestor} is not writable"
    return None


def check_report_paths(paths: Sequence[str | Path], inputs: Sequence[str | Path] = ()) -> dict[str, str]:
    """Each report path with its format, once every path is known to be writable: a known extension
    (ConfigError otherwise, exit 2), a writable place, not the same file as another report nor as any
    of ``inputs`` (the files the run reads). Every problem is named in one ConfigError."""
    formats = {str(path): report_format(path) for path in paths}
    read = {_same_file_key(path) for path in inputs}
    seen: dict[str, str] = {}
    problems: list[str] = []
    for path in formats:
        key = _same_file_key(path)
        if key in read:
            problems.append(f"{path}: is a file the run reads; writing the report would overwrite it")
        elif key in seen:
            problems.append(f"{path}: is the same file as the report {seen[key]}")
        elif (problem := _writable_problem(Path(path))) is not None:
            problems.append(f"{path}: {problem}")
        seen.setdefault(key, path)
    if problems:
        raise ConfigError(
            f"cannot write the report{'s' if len(problems) > 1 else ''}: {'; '.join(problems)}",
            hint="Choose another path for each (no report is written and no provider is called)",
        )
    return formats


def _write_atomically(path: Path, chunks: Iterable[bytes]) -> None:
    target = Path(_same_file_key(path))  # through a symbolic link: its target, and the link stays
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
        try:
            with tmp.open("wb") as file:
                for chunk in chunks:
                    file.write(redact_bytes(chunk))
            os.replace(tmp, target)
        finally:
            tmp.unlink(missing_ok=True)
    except OSError as exc:
        raise _report_error(path, exc) from exc


_WRITE_HINT = (
    "Check that the path is not a directory and that its directory exists or can be created and is "
    "writable, or choose another path"
)


def _report_error(path: Path, exc: OSError) -> ReportError:
    reason = exc.strerror or str(exc)
    if exc.filename is not None and Path(exc.filename) in path.parents:  # e.g. a file where a dir goes
        reason = f"{reason}: {exc.filename}"
    return ReportError(f"cannot write the report: {reason}", where=str(path), hint=_WRITE_HINT)


def combine_report_errors(failures: Sequence[ReportError]) -> ReportError:
    """One error (one paragraph) naming every report that could not be written."""
    if len(failures) == 1:
        return failures[0]
    listed = "; ".join(f"{failure.where}: {failure.message}" for failure in failures)
    return ReportError(f"{len(failures)} reports could not be written: {listed}", hint=_WRITE_HINT)


def _render(
    fmt: str,
    run: RunRecord,
    frame: Callable[[], ReportFrame],
    texts: _Texts,
    summary: Callable[[], str],
    row_dicts: Callable[[], Iterator[dict[str, Any]]],
) -> Iterator[bytes]:
    """The report's bytes in pieces: a big JSON or JSONL report is never whole in memory."""
    if fmt == "json":
        indent = 2 if len(run.results) <= PRETTY_JSON_MAX_ROWS else None
        yield from _joined(itertools.chain(frame().chunks(texts(), indent=indent), ["\n"]))
    elif fmt == "jsonl":
        yield from _joined(text + "\n" for text in texts())
    elif fmt == "junit":  # each format's module loads when a report of it is written
        from evalh.reports.junit import to_junit_xml

        yield to_junit_xml(run)
    elif fmt == "csv":
        from evalh.reports.csv import to_csv_text

        yield to_csv_text(run).encode("utf-8", errors="backslashreplace")
    elif fmt == "yaml":
        from evalh.reports.yamltext import to_yaml_chunks

        head = frame().with_rows([])
        yield from (block.encode("utf-8") for block in _blocks(to_yaml_chunks(head, row_dicts())))
    elif fmt == "markdown":
        yield summary().encode("utf-8", errors="backslashreplace")
    else:
        from evalh.reports.html import html_chunks

        pieces = html_chunks(frame().with_rows(row_dicts()))
        yield from (block.encode("utf-8", errors="backslashreplace") for block in _blocks(pieces))


def _joined(pieces: Iterable[str]) -> Iterator[bytes]:
    """``pieces`` as UTF-8 bytes (:func:`encode_json`) in blocks of about :data:`WRITE_BLOCK` characters."""
    return (encode_json(block) for block in _blocks(pieces))


def _blocks(pieces: Iterable[str]) -> Iterator[str]:
    """``pieces`` joined into blocks of about :data:`WRITE_BLOCK` characters (a piece is never cut:
    each block then encodes as its pieces would)."""
    block: list[str] = []
    size = 0
    for piece in pieces:
        block.append(piece)
        size += len(piece)
        if size >= WRITE_BLOCK:
            yield "".join(block)
            block, size = [], 0
    if block:
        yield "".join(block)


def _row_dicts(run: RunRecord) -> Iterator[dict[str, Any]]:
    """The rows as JSON report dicts, made one at a time (YAML and HTML read each once)."""
    memo = new_memo()
    return (result_to_json(row, memo=memo) for row in run.results)


def write_json_file(path: str | Path, value: Any) -> None:
    """Write ``value`` as indented JSON (atomically, secret values redacted); ReportError if it fails."""
    _write_atomically(Path(path), [encode_json(dumps(value, indent=2) + "\n")])


def write_text_file(path: str | Path, text: str) -> None:
    """Write ``text`` (an SVG, ...) atomically, secret values redacted; ReportError if it fails."""
    _write_atomically(Path(path), [text.encode("utf-8", errors="backslashreplace")])


def write_reports(run: RunRecord, paths: Sequence[str | Path]) -> list[Path]:
    """Write ``run`` to every path, the format chosen by its extension; returns the paths written.

    Every extension is checked before anything is written (unknown: ConfigError, exit 2). Parent
    directories are created. A file that cannot be written does not stop the others: once every path
    was tried, one ReportError names each that failed.
    """
    failures = write_each_report(run, paths)
    if failures:
        raise combine_report_errors(failures)
    return [Path(p) for p in paths]


def write_each_report(
    run: RunRecord,
    paths: Sequence[str | Path],
    *,
    eval_id: str | None = None,
    comparison: Mapping[str, Any] | None = None,
    spool: RowSpool | None = None,
    echo: ConfigEcho | None = None,
) -> list[ReportError]:
    """:func:`write_reports`, returning the failures (one per path not written) instead of raising.
    ``eval_id``: the run's id in the run store, so the reports carry it as their ``evalId``;
    ``comparison``: the run compared with ``--baseline`` (its JSON), for the Markdown summary;
    ``spool``: the rows' texts, encoded as they finished (rows it lacks are encoded here); ``echo``:
    the run's config as the run store took it."""
    formats = [(Path(p), report_format(p)) for p in paths]
    # one evalId and exportedAt for every file of this call
    frame = functools.cache(lambda: ReportFrame(run, eval_id=eval_id, echo=echo))

    def texts() -> Iterator[str]:
        if spool is not None:
            return spool.texts(run.results)
        memo = new_memo()
        return (encode_row(row, memo).text for row in run.results)

    def summary() -> str:
        from evalh.reports.markdown import to_markdown

        return to_markdown(run, eval_id=eval_id, comparison=comparison)

    failures: list[ReportError] = []
    with gc_policy.paused():
        for path, fmt in formats:
            try:
                _write_atomically(path, _render(fmt, run, frame, texts, summary, lambda: _row_dicts(run)))
            except ReportError as error:
                failures.append(error)
    return failures


class JsonlStream:
    """A ``.jsonl`` report written row by row as results arrive (each line flushed at once)."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        if report_format(self.path) != "jsonl":
            raise ConfigError("a streamed report must be a .jsonl file", where=str(self.path))
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._file: TextIO | None = self.path.open(
                "w", encoding="utf-8", errors="backslashreplace", newline="\n"
            )
        except OSError as exc:
            raise _report_error(self.path, exc) from exc
        self._memo = new_memo()

    def write(self, row: TestResult) -> None:
        """Append one row as a line of JSON (see :meth:`write_text`)."""
        self.write_text(encode_row(row, self._memo).text)

    def write_text(self, text: str) -> None:
        """Append one row's :func:`~evalh.reports.streamed.row_text` as a line. A failed write closes
        the stream (closing it again does nothing) and raises ReportError."""
        if self._file is None:
            raise ReportError("the JSONL stream is already closed", where=str(self.path))
        try:
            self._file.write(text + "\n")
            self._file.flush()
        except OSError as exc:
            file, self._file = self._file, None
            with contextlib.suppress(OSError):  # the line that could not be flushed fails again
                file.close()
            raise _report_error(self.path, exc) from exc

    def close(self) -> None:
        """Close the file; calling it again does nothing."""
        if self._file is not None:
            file, self._file = self._file, None
            try:
                file.close()
            except OSError as exc:
                raise _report_error(self.path, exc) from exc

    def __enter__(self) -> JsonlStream:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
