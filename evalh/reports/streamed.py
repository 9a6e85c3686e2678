"""Rows encoded once, as they finish, and the JSON report written around them row by row.

A finished row becomes promptfoo's ``EvaluateResult`` dict and its compact JSON text once
(:func:`encode_row`): the ``.jsonl`` stream, the run store and the ``.json`` report all take that text.
:class:`RowSpool` keeps the texts of a run in a temporary file, so neither every row's dict nor the
report's whole text is held in memory; the ``.json`` report is then written in pieces
(:meth:`ReportFrame.chunks`): its frame (everything but the rows, with the aggregates only known at
the end) around the spooled rows, in plan order. The bytes are those of :func:`row_text` of the whole
document (:func:`~evalh.reports.json.to_promptfoo_json`): the compact form (orjson's,
:func:`~evalh.reports.serialize.compact`) separates list items with ``","``, which is how the rows are
joined. The config the report echoes is encoded once for the
report and the run store too (:class:`ConfigEcho`).
"""

from __future__ import annotations

import codecs
import contextlib
import json
import tempfile
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import IO, Any, NamedTuple, Self

from evalh.model import RunRecord, TestResult
from evalh.reports.codec import new_memo, result_to_json
from evalh.reports.json import report_document
from evalh.reports.serialize import compact, dumps, encode_json
from evalh.secrets import RedactedConfig, redact_config, redact_text, registered

__all__ = ["ConfigEcho", "EncodedConfig", "EncodedRow", "ReportFrame", "RowSpool", "encode_row", "row_text"]

_BUFFER = 1 << 18  # bytes: the spool is written in pieces of a few dozen rows, not a few KB
_READ = 1 << 18  # bytes of the kept config text read back per block (by the store and the report)


class EncodedRow(NamedTuple):
    """A finished row as the reports write it: the ``EvaluateResult`` dict (for the fields a consumer
    reads: the store's test identity) and its compact JSON text (see :func:`row_text`)."""

    document: dict[str, Any]
    text: str


def row_text(document: Any, *, indent: int | None = None) -> str:
    """JSON text of a report value as every report and the store write it (compact unless
    ``indent``): NaN as null, lone surrogates as ``\\udcff`` escapes, registered secret values redacted."""
    if indent is None:
        return redact_text(compact(document))  # valid UTF-8 already
    text = dumps(document, indent=indent)
    if not text.isascii():  # a lone surrogate (only possible in a JSON string) becomes its escape
        text = encode_json(text).decode("utf-8")
    return redact_text(text)


def encode_row(row: TestResult, memo: Any = None) -> EncodedRow:
    """``row`` as an :class:`EncodedRow`; ``memo`` (:func:`~evalh.reports.codec.new_memo`) shares the
    conversion of tests and specs between the rows of a run."""
    document = result_to_json(row, memo=memo)
    return EncodedRow(document, row_text(document))


class _KeptFile:
    """A temporary file kept until :meth:`close` deletes it (closing again does nothing); used as a
    context manager, closed on the way out."""

    _file: IO[bytes] | None = None

    def close(self) -> None:
        if self._file is not None:
            file, self._file = self._file, None
            with contextlib.suppress(OSError):  # nothing of it is needed any more
                file.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


class RowSpool(_KeptFile):
    """The encoded text of each finished row of a run, in a temporary file (deleted on close).

    Rows finish in any order; :meth:`texts` reads them back in the order asked (the run's plan order).
    A row never added (the earlier rows of a ``--retry-errors`` run), or added when no temporary file
    could be made or written, is encoded again when it is read.
    """

    def __init__(self) -> None:
        with contextlib.suppress(OSError):  # no temporary file: rows are encoded again when written
            self._file = tempfile.TemporaryFile(prefix="evalh-rows-", buffering=_BUFFER)  # noqa: SIM115
        self._end = 0
        self._at_end = True  # no read since the last write: the next write needs no seek
        # by id(row); the row is kept beside its place so an id is never reused while spooled
        self._places: dict[int, tuple[TestResult, int, int]] = {}
        self._memo = new_memo()

    def add(self, row: TestResult) -> EncodedRow:
        """Encode ``row`` once, keep its text, and return it for the other consumers."""
        encoded = encode_row(row, self._memo)
        if self._file is not None:
            data = encoded.text.encode("utf-8")
            try:
                if not self._at_end:  # a seek flushes the write buffer: only after a read moved away
                    self._file.seek(self._end)
                    self._at_end = True
                self._file.write(data)
            except OSError:  # a full disk: the rows are encoded again when written
                self.close()
                return encoded
            self._places[id(row)] = (row, self._end, len(data))
            self._end += len(data)
        return encoded

    def text_of(self, row: TestResult) -> str:
        """The row's text: the spooled one, else encoded now."""
        place = self._places.get(id(row))
        if place is None or place[0] is not row or self._file is None:
            return encode_row(row, self._memo).text
        try:
            self._at_end = False
            self._file.seek(place[1])
            return self._file.read(place[2]).decode("utf-8")
        except OSError:
            self.close()
            return encode_row(row, self._memo).text

    def texts(self, rows: Iterable[TestResult]) -> Iterator[str]:
        return (self.text_of(row) for row in rows)

    def close(self) -> None:
        """Delete the file; calling it again does nothing (rows are then encoded when read)."""
        self._places.clear()
        super().close()


class ReportFrame:
    """The JSON report of a run without its rows, built once per set of files (one ``evalId`` and
    ``exportedAt`` for all of them): the rows' texts are written into it (:meth:`chunks`), or their
    dicts put in (:meth:`with_rows`). The config (every test of the suite) is written piece by piece
    too, never copied whole."""

    def __init__(self, run: RunRecord, *, eval_id: str | None = None, echo: ConfigEcho | None = None) -> None:
        token = uuid.uuid4().hex  # markers no report holds
        self._rows, self._config = f"evalh-rows-{token}", f"evalh-config-{token}"
        self._raw_config = run.suite.raw_config
        # the run's config as the store took it; a run whose config is another (a merged retry) has its own
        self._echo = (
            echo if echo is not None and echo.config is self._raw_config else ConfigEcho(self._raw_config)
        )
        self.document = report_document(run, [self._rows], eval_id=eval_id, config=self._config)

    def chunks(self, texts: Iterable[str], *, indent: int | None = None) -> Iterator[str]:
        """The report's text in pieces whose concatenation is :func:`row_text` of the whole document
        (``texts``: the rows' :func:`row_text`, in the run's order). Indented reports are small (see
        writers' ``PRETTY_JSON_MAX_ROWS``) and are made whole."""
        if indent is not None:
            yield row_text(self.with_rows([json.loads(text) for text in texts]), indent=indent)
            return
        head, rest = row_text(self.document).split(json.dumps(self._rows), 1)
        middle, tail = rest.split(json.dumps(self._config), 1)
        yield head
        for position, text in enumerate(texts):
            yield f",{text}" if position else text
        yield middle
        yield from self._echo.chunks()
        yield tail

    def with_rows(self, rows: Iterable[Any]) -> dict[str, Any]:
        """The whole document with ``rows`` (for YAML and HTML, and the small indented report; the HTML
        report reads them from a generator, one at a time)."""
        results = {**self.document["results"], "results": rows}
        return {**self.document, "results": results, "config": redact_config(self._raw_config)}


def _config_chunks(config: Any, *, redact: bool = True) -> Iterator[str]:
    """:func:`row_text` of ``redact_config(config)`` in pieces: each item of a top-level list (the
    tests) on its own. Each piece is redacted by ``redact_config`` itself, so its rules stay in one
    place: a key whose empty list it keeps as a list is a key whose items it redacts one by one. Not
    ``redact``: :func:`row_text` of ``config`` itself (taken as redacted), in the same pieces."""
    if not isinstance(config, Mapping) or not config:
        yield row_text(redact_config(config) if redact else config)
        return
    if not redact and any(type(key) is not str for key in config):
        yield row_text(config)  # JSON spells such a key its own way (True: "true"); a config seldom has one
        return
    for position, (key, value) in enumerate(config.items()):
        name = key if type(key) is str else str(key)
        yield ("{" if position == 0 else ",") + row_text(name) + ":"
        if isinstance(value, list | tuple) and value and (not redact or _redacts_items(name)):
            for index, item in enumerate(value):
                yield ("[" if index == 0 else ",") + row_text(redact_config([item])[0] if redact else item)
            yield "]"
        else:
            yield row_text(redact_config({name: value})[name] if redact else value)
    yield "}"


def _redacts_items(name: str) -> bool:
    """Whether ``redact_config`` redacts a list under the key ``name`` item by item (not whole)."""
    return isinstance(redact_config({name: []})[name], list)


class EncodedConfig(NamedTuple):
    """The config's JSON text for the run store, as UTF-8 bytes: ``size`` of them, read from the
    start in blocks by each call of ``blocks`` (the store writes them in place, never the whole)."""

    size: int
    blocks: Callable[[], Iterator[bytes]]

    @classmethod
    def of_text(cls, text: str) -> EncodedConfig:
        """A text held whole (an imported report's config, or no temporary file to spool it to)."""
        data = text.encode("utf-8")  # row_text escaped any lone surrogate
        return cls(len(data), lambda: iter((data,)))


class ConfigEcho(_KeptFile):
    """The run's config as the JSON report and the run store echo it: :func:`row_text` of
    ``redact_config(config)``, redacted and encoded once. The store takes it when the run finishes
    (:meth:`encoded`), piece by piece through a temporary file, never as one text (a 50,000-test
    config is 43 MB); the report, written next, reads the file back (:meth:`chunks`). Redaction stays
    :mod:`evalh.secrets`': the kept text is only reused while no secret value was registered after it
    was made.

    A :class:`~evalh.secrets.RedactedConfig` (``Suite.raw_config`` as the load makes it) is a copy
    ``redact_config`` made already, so it is not walked again: its keys named for secrets, ``env`` maps
    and URLs are redacted, and the values registered since (an HTTP provider's ``Bearer`` header) are
    replaced in its text, as :func:`row_text` replaces them in every text (the same result: every form of
    a value is looked for as it appears in JSON text)."""

    def __init__(self, config: Any, *, keep: bool = True) -> None:
        self.config = config
        self._keep = keep  # False: no JSON report will read it back
        self._redacted = isinstance(config, RedactedConfig)
        self._redacted_with: frozenset[str] = frozenset()

    @contextmanager
    def encoded(self) -> Iterator[EncodedConfig]:
        """The text for the store, spooled to a temporary file (no file, or a full disk: made whole);
        kept for :meth:`chunks` after the block when a report will read it, else deleted. Not to be
        kept, the config is taken as redacted (by key name at load, as the store always did): its walk
        is the report's, and a suite made otherwise is walked when its report is written."""
        self.close()
        forms = registered()  # before the walk: a value registered meanwhile makes the text stale
        walk = self._keep and not self._redacted
        spooled = _spooled(_config_chunks(self.config, redact=walk))
        if spooled is None:
            yield EncodedConfig.of_text("".join(_config_chunks(self.config, redact=walk)))
            return
        file, size = spooled
        self._file, self._redacted_with = file, forms
        try:
            yield EncodedConfig(size, lambda: _blocks(file))
        finally:
            if not self._keep:
                self.close()

    def chunks(self) -> Iterator[str]:
        """:func:`_config_chunks` of the config: the kept text while it is still redacted with every
        registered value (the registry only grows), else encoded now."""
        if self._file is None or not self._keep or registered() != self._redacted_with:
            yield from _config_chunks(self.config, redact=not self._redacted)
            return
        # an OSError reading it back fails the report's write (a ReportError)
        yield from _decoded(_blocks(self._file))


def _spooled(pieces: Iterable[str]) -> tuple[IO[bytes], int] | None:
    """``pieces`` as UTF-8 in a new temporary file, and its size in bytes; None when no temporary
    file can be made or written."""
    try:
        file = tempfile.TemporaryFile(prefix="evalh-config-", buffering=_BUFFER)  # noqa: SIM115 (kept)
    except OSError:
        return None
    size = 0
    try:
        for piece in pieces:
            size += file.write(piece.encode("utf-8"))  # row_text escaped any lone surrogate
        file.flush()
    except OSError:
        with contextlib.suppress(OSError):
            file.close()
        return None
    return file, size


def _blocks(file: IO[bytes]) -> Iterator[bytes]:
    file.seek(0)
    while block := file.read(_READ):
        yield block


def _decoded(blocks: Iterable[bytes]) -> Iterator[str]:
    decoder = codecs.getincrementaldecoder("utf-8")()
    for block in blocks:
        yield decoder.decode(block)
    yield decoder.decode(b"", final=True)
