"""People's ratings of stored rows: a person marks a row pass or fail, may set a score and a comment
(``evalh runs rate``, the viewer), and the row's verdict is theirs, as promptfoo records a manual rating.

A rating lives in the ``ratings`` table (schema version 6), one per row, beside the row's body, which
stays the graded result: every read of the row applies the rating
(:func:`evalh.reports.codec.rated_row`), and clearing it gives the graded row back exactly. A comment is
data: bounded (:data:`MAX_COMMENT_CHARS`) and redacted of secrets before it is stored.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import math
import re
import sqlite3
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any

from evalh.common.environment import environ, getenv
from evalh.errors import ConfigError, StoreError
from evalh.reports.codec import MAX_COMMENT_CHARS, MAX_REVIEWER_CHARS, rated_row
from evalh.reports.codec_read import ID_PATH
from evalh.secrets import redact_json_text, register_config, run_registry

__all__ = [
    "MAX_COMMENT_CHARS",
    "RATED_COUNTS",
    "Rating",
    "RatingError",
    "UnknownRow",
    "clear",
    "is_text",
    "rated_changes",
    "ratings_by_position",
    "reviewer_name",
    "save",
    "save_at",
]

# Each run's counts as its ratings change them, by run (``rated``), for ``runs`` LEFT JOINed with it:
# a rating turns its row's graded status (``rows.status``) into pass or fail.
RATED_COUNTS = """LEFT JOIN (
    SELECT r.run_seq AS run_seq,
        SUM(r.pass AND w.status != 'pass') - SUM(NOT r.pass AND w.status = 'pass') AS passed,
        SUM(NOT r.pass AND w.status != 'fail') - SUM(r.pass AND w.status = 'fail') AS failed,
        -SUM(w.status = 'error') AS errors
    FROM ratings AS r JOIN rows AS w ON w.run_seq = r.run_seq AND w.position = r.position
    GROUP BY r.run_seq
) AS rated ON rated.run_seq = runs.seq"""
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
_WHO = "Set EVALH_REVIEWER to your name as UTF-8 text"
_COLUMNS = "row_id, pass, score, comment, reviewer, rated_at"
_SAVE = f"INSERT OR REPLACE INTO ratings (run_seq, position, {_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"


class RatingError(ConfigError):
    """A rating that cannot be made: an unknown row, a run still recording, a bad score or comment."""


class UnknownRow(RatingError):
    """The run has no row with this id (nor one it begins): the viewer answers 404, not 400."""


@dataclass(frozen=True)
class Rating:
    """A person's verdict on one row (``row_id``: the row's ``id`` in the JSON report)."""

    row_id: str
    passed: bool
    score: float
    comment: str
    reviewer: str
    rated_at: str

    def to_json(self) -> dict[str, Any]:
        """As a row's ``rating`` holds it (:func:`evalh.reports.codec.rated_row`)."""
        return {
            "pass": self.passed,
            "score": self.score,
            "comment": self.comment,
            "reviewer": self.reviewer,
            "ratedAt": self.rated_at,
        }

    @classmethod
    def of(
        cls, row_id: str, *, passed: bool, score: float | None, comment: str, reviewer: str | None
    ) -> Rating:
        """A new rating, now; RatingError for a score outside 0-1 or a comment over the bound. The
        comment and the reviewer are redacted of secrets (the environment's secret-named values, URL
        credentials, the values the process registered)."""
        if score is None:
            score = 1.0 if passed else 0.0
        if not (isinstance(score, int | float) and math.isfinite(score) and 0.0 <= score <= 1.0):
            raise RatingError(f"a rating's score is between 0 and 1 (got {score!r})", hint="Pass --score 0.8")
        if len(comment) > MAX_COMMENT_CHARS:
            raise RatingError(
                f"the comment has {len(comment):,} characters; a rating's comment has at most "
                f"{MAX_COMMENT_CHARS:,}",
                hint="Shorten the comment",
            )
        who = (reviewer if reviewer is not None else reviewer_name()).strip()[:MAX_REVIEWER_CHARS]
        for name, text, fix in (("comment", comment, "Type it as UTF-8 text"), ("reviewer", who, _WHO)):
            if not is_text(text):
                raise RatingError(f"the rating's {name} holds bytes that are not UTF-8 text", hint=fix)
        now = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
        return cls(row_id, bool(passed), float(score), _redacted(comment), _redacted(who), now)

    @classmethod
    def from_json(cls, row_id: str, data: Mapping[str, Any]) -> Rating:
        """A row's ``rating`` read back from a report (``runs import``; checked by codec_check), its
        comment and reviewer redacted as a new rating's are."""
        score = data.get("score")
        return cls(
            _stored_text(row_id),
            data.get("pass") is True,
            float(score) if isinstance(score, int | float) else (1.0 if data.get("pass") is True else 0.0),
            _redacted(_stored_text(str(data.get("comment") or "")[:MAX_COMMENT_CHARS])),
            _redacted(_stored_text(str(data.get("reviewer") or "")[:MAX_REVIEWER_CHARS])),
            _stored_text(str(data.get("ratedAt") or "")),
        )


def is_text(text: str) -> bool:
    """Whether ``text`` can be stored and shown as text: no lone surrogate (``\\udcff``: a byte that was
    not UTF-8 in a command line or the environment, or a ``\\ud800`` escape in JSON)."""
    return text.isascii() or not _LONE_SURROGATE.search(text)


def _stored_text(text: str) -> str:
    """``text`` with each lone surrogate (a report's JSON may spell one) as its visible escape (``\\ud800``):
    SQLite holds UTF-8 text only."""
    return text if is_text(text) else _LONE_SURROGATE.sub(lambda found: f"\\u{ord(found[0]):04x}", text)


def _redacted(text: str) -> str:
    """``text`` without the secrets this process knows: the ones it registered, and the values of
    the environment's secret-named variables (a key pasted into a comment)."""
    with run_registry():
        register_config(environ())
        return redact_json_text(text) if text else text


def reviewer_name() -> str:
    """Who rates: ``EVALH_REVIEWER``, else the OS user ("unknown" when neither is known)."""
    configured = (getenv("EVALH_REVIEWER") or "").strip()
    if configured:
        return configured
    import getpass  # its terminal modules: only a rating asks who rates

    try:
        return getpass.getuser()
    except (OSError, KeyError):  # no user name in the environment nor the password database
        return "unknown"


def _position(db: sqlite3.Connection, seq: int, run_id: str, row_id: str) -> tuple[int, str]:
    """The stored position and whole id of the row ``row_id`` names: its id, else a unique prefix of it
    (as a run reference may be); RatingError when it names no row or several."""
    # the id's JSON text first (instr scans a body faster than json_extract parses it); every body parsed
    # only when that finds none: an id written with other escapes, or none at all
    sql = "SELECT position FROM rows WHERE run_seq = ? AND {} json_extract(body, ?) = ? ORDER BY position"
    quick = db.execute(
        sql.format("instr(body, ?) > 0 AND"), (seq, json.dumps(row_id, ensure_ascii=False), ID_PATH, row_id)
    )
    found = quick.fetchone() or db.execute(sql.format(""), (seq, ID_PATH, row_id)).fetchone()
    if found is not None:
        return int(found[0]), row_id
    prefixed = _prefixed(db, seq, row_id) if row_id else []
    if len(prefixed) == 1:
        return prefixed[0]
    if not prefixed:
        raise _unknown_row(run_id, row_id)
    shown = ", ".join(whole for _, whole in prefixed[:_SHOWN_MATCHES])
    more = f" and {len(prefixed) - _SHOWN_MATCHES} more" if len(prefixed) > _SHOWN_MATCHES else ""
    raise RatingError(
        f"{row_id!r} begins the id of {len(prefixed)} rows of the run {run_id} ({shown}{more})",
        hint="Give more of the row id",
    )


_SHOWN_MATCHES = 5


def _prefixed(db: sqlite3.Connection, seq: int, prefix: str) -> list[tuple[int, str]]:
    """Each row of the run whose id begins with ``prefix``, as ``(position, id)``, in stored order."""
    sql = (
        "SELECT position, json_extract(body, ?) AS id FROM rows WHERE run_seq = ? "
        "AND typeof(id) = 'text' AND substr(id, 1, length(?)) = ? ORDER BY position"
    )
    found = db.execute(sql, (ID_PATH, seq, prefix, prefix)).fetchall()
    return [(int(at), str(whole)) for at, whole in found]


def _unknown_row(run_id: str, row_id: str) -> UnknownRow:
    return UnknownRow(
        f"the run {run_id} has no row with id {row_id!r}",
        hint=f"A row's id is its `id` in the JSON report: `evalh runs show {run_id} --json` lists them, "
        "and `evalh view` shows it in a result's details",
    )


def _check_rateable(state: str, run_id: str) -> None:
    if state == "running":
        raise RatingError(
            f"the run {run_id} is still recording",
            hint="Rate its rows once it has finished (`evalh runs list` shows its state)",
        )


Transaction = Callable[[], AbstractContextManager[sqlite3.Connection]]


def save(transaction: Transaction, run: tuple[int, str, str], rating: Rating) -> Rating:
    """Store ``rating`` for its row of the run ``(seq, id, state)`` (its ``row_id`` the row's id or a unique
    prefix of it), replacing the row's rating; the rating stored, with the row's whole id."""
    seq, run_id, state = run
    _check_rateable(state, run_id)
    with transaction() as db:
        at, row_id = _position(db, seq, run_id, rating.row_id)
        rating = dataclasses.replace(rating, row_id=row_id)
        db.execute(_SAVE, (seq, at, *_record(rating)))
    return rating


def save_at(transaction: Transaction, seq: int, rated: Iterable[tuple[int, Rating]]) -> None:
    """Store each ``(position, rating)`` of ``rated`` for the run ``seq`` as it is (an imported run's)."""
    with transaction() as db:
        db.executemany(_SAVE, [(seq, at, *_record(rating)) for at, rating in rated])


def _record(rating: Rating) -> tuple[Any, ...]:
    return (rating.row_id, int(rating.passed), rating.score, rating.comment, rating.reviewer, rating.rated_at)


def clear(transaction: Transaction, run: tuple[int, str, str], row_id: str) -> bool:
    """Delete the rating of the row ``row_id`` (its id or a unique prefix of it): its graded verdict is its
    own again; False when it had none. RatingError for an unknown row or an ambiguous prefix."""
    seq, run_id, state = run
    _check_rateable(state, run_id)
    with transaction() as db:
        at, _ = _position(db, seq, run_id, row_id)
        deleted = db.execute("DELETE FROM ratings WHERE run_seq = ? AND position = ?", (seq, at))
    return bool(deleted.rowcount)


def ratings_by_position(db: sqlite3.Connection, seq: int) -> dict[int, Rating]:
    """The run's ratings by the stored position of their rows."""
    sql = f"SELECT position, {_COLUMNS} FROM ratings WHERE run_seq = ? ORDER BY position"
    return {int(found[0]): _stored_rating(found[1:]) for found in db.execute(sql, (seq,)).fetchall()}


def _stored_rating(record: tuple[Any, ...]) -> Rating:
    """A ``ratings`` record as a Rating; StoreError when its values are not a rating's (the file was edited
    by hand or by another program: SQLite does not hold a column to its declared type)."""
    row_id, passed, score, comment, reviewer, rated_at = record
    texts = (row_id, comment, reviewer, rated_at)
    checks = (
        ("pass (0 or 1)", passed in (0, 1)),
        ("score (0 to 1)", isinstance(score, int | float) and 0.0 <= score <= 1.0),
        ("row id, comment, reviewer and time (text)", all(isinstance(text, str) for text in texts)),
    )
    damaged = [name for name, ok in checks if not ok]
    if not damaged:
        return Rating(row_id, bool(passed), float(score), comment, reviewer, rated_at)
    raise StoreError(
        f"the run store's rating of the row {str(row_id)[:80]!r} is damaged: its {damaged[0]} is not "
        f"a rating's (the file was changed by another program)",
        hint=f"Clear it with `evalh runs rate RUN {str(row_id)[:80]} --clear`, then rate the row again",
    )


def rated_changes(
    db: sqlite3.Connection, seq: int, ratings: Mapping[int, Rating]
) -> Iterator[tuple[Mapping[str, Any], Mapping[str, Any]]]:
    """Each rated row of the run as ``(graded, rated)`` (the figures of its report follow them)."""
    sql = "SELECT position, body FROM rows WHERE run_seq = ? AND position IN (SELECT position FROM ratings "
    sql += "WHERE run_seq = ?) ORDER BY position"
    for position, body in db.execute(sql, (seq, seq)).fetchall():
        graded = json.loads(body)
        yield graded, rated_row(graded, ratings[position].to_json())
