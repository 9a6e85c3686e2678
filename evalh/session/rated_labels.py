"""``evalh calibrate --labels REF``: the human ratings of a stored run (or of a JSON report exported from
one) as the calibration's labels.

A rating is matched to the row of the calibration's run that has the same identity
(:func:`evalh.store.identity.row_key`: the same test, prompt, provider and repeat), never by position. It
labels that row over the test's ``metadata.label``; a row with neither is unlabelled. A rating judges the
output the person read: a row whose output is not the rated one any more (an uncached model answered
anew) is left out rather than labelled with a verdict on another text. Both are counted and said.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalh.errors import ConfigError
from evalh.model import Suite, TestCase, TestResult
from evalh.reports.codec import result_to_json
from evalh.reports.codec_check import read_report_file
from evalh.reports.codec_read import row_rating, row_response
from evalh.store.identity import row_key
from evalh.store.recording import stored_config_path
from evalh.store.refs import is_report_file
from evalh.store.runs import latest_offset, open_store

__all__ = ["LabelCounts", "RatedRun", "label_rows", "read_rated_run"]

_WHERE = "--labels"
_HOW_TO_RATE = (
    "Rate its rows first: open `evalh view`, choose the run and mark results pass or fail, or run "
    "`evalh runs rate REF ROW_ID --pass|--fail` (ROW_ID: the row's id in `evalh runs show REF --json`)"
)


@dataclass(frozen=True)
class RatedRow:
    """One rated row of the run: the person's verdict, and the output they judged."""

    passed: bool
    output: Any


@dataclass(frozen=True)
class RatedRun:
    """The ratings of one run, by row identity, and the identities of all its rows."""

    name: str  # "run eval-qJ_-2026-11-28T10:49:04" or the report file, for messages
    ratings: Mapping[str, RatedRow]
    keys: frozenset[str]
    ref: str  # the run's id, or the report file: what `evalh runs show` or --labels takes back


@dataclass
class LabelCounts:
    """Where the labels of one calibration run came from (said in the output and its JSON)."""

    run: str  # for the sentence: "run ID" or the report file
    ref: str  # for the JSON: the run's id or the report file, never prose
    rated: int = 0  # rows labelled by a rating
    overridden: int = 0  # of them: rows whose metadata.label the rating replaced
    disagreed: int = 0  # of those: the rating said the other thing
    from_metadata: int = 0  # rows labelled by their test's metadata.label (no rating)
    changed: int = 0  # rated rows whose output is not the rated one: left out
    unlabelled: int = 0  # rows with neither
    unmatched: list[str] = field(default_factory=list)  # rated rows of the run this config lacks (keys)

    def to_json(self) -> dict[str, Any]:
        return {
            "run": self.ref,
            "rated": self.rated,
            "overMetadataLabel": self.overridden,
            "disagreeingWithMetadataLabel": self.disagreed,
            "fromMetadataLabel": self.from_metadata,
            "outputChanged": self.changed,
            "unlabelled": self.unlabelled,
            "ratedRowsNotInConfig": len(self.unmatched),
        }

    def summary(self) -> str:
        """One paragraph: how many rows each source labelled, and what was left out and why."""
        parts = [f"Labels from the ratings of {self.run}: {self.rated} rated row(s)"]
        if self.overridden:
            parts[0] += (
                f" ({self.overridden} over a metadata.label, {self.disagreed} of them with the other verdict)"
            )
        if self.from_metadata:
            parts.append(f"{self.from_metadata} row(s) labelled by metadata.label (not rated)")
        if self.changed:
            parts.append(
                f"{self.changed} rated row(s) left out: the output is not the one rated (the provider "
                "answered anew, or the config's recorded output changed; keep the cache on, or rate this "
                "output)"
            )
        if self.unmatched:
            parts.append(f"{len(self.unmatched)} rated row(s) of the run are not rows of this config")
        if self.unlabelled:
            parts.append(f"{self.unlabelled} row(s) unlabelled (neither rated nor metadata.label), left out")
        return "; ".join(parts) + "."


def read_rated_run(ref: str, suite: Suite) -> RatedRun:
    """The ratings of the run ``ref`` names: a JSON report file (one exported with its ratings), or a
    stored run, ``latest`` / ``latest~N`` counting the runs of this config (its path and description, as
    the store records them) and, when it has none, the runs of any config. ConfigError (exit 2) for an
    unknown run or one without a single rating (saying how to rate)."""
    if is_report_file(ref):
        name, document = str(ref), read_report_file(Path(ref), where=_WHERE)
        run_ref = name
    else:
        run_ref, document = _stored_run(ref, suite)
        name = f"run {run_ref}"
    rows: Sequence[Mapping[str, Any]] = document["results"]["results"]
    ratings = _ratings(rows)
    if not ratings:
        raise ConfigError(
            f"{name} has no rated row ({len(rows)} row(s)), so it gives no labels",
            where=_WHERE,
            hint=_HOW_TO_RATE,
        )
    return RatedRun(name, ratings, frozenset(row_key(row) for row in rows), run_ref)


def _stored_run(ref: str, suite: Suite) -> tuple[str, dict[str, Any]]:
    with open_store() as store:
        back = latest_offset(ref)
        config_path = stored_config_path(suite)
        own = None if back is None else store.latest_of(config_path, suite.description, back)
        try:
            summary = own or store.resolve(ref)
        except ConfigError as error:  # said of the flag that named it
            raise ConfigError(error.message, where=_WHERE, hint=error.hint) from None
        return summary.id, store.load_run(summary.id)


def _ratings(rows: Iterable[Mapping[str, Any]]) -> dict[str, RatedRow]:
    found = {}
    for row in rows:
        rating = row_rating(row)
        if rating is not None:
            found[row_key(row)] = RatedRow(bool(rating["pass"]), row_response(row).get("output"))
    return found


def label_rows(
    results: Sequence[TestResult], rated: RatedRun, metadata_label: Callable[[TestCase], bool | None]
) -> tuple[list[bool | None], LabelCounts]:
    """Each row's label (None: unlabelled or left out) and where the labels came from.
    ``metadata_label(test)`` is the test's own label. ConfigError (exit 2) when no rated row of the run
    is a row of this config: it is another config's run, or the config changed since."""
    counts = LabelCounts(rated.name, rated.ref)
    labels: list[bool | None] = []
    matched: set[str] = set()
    keys = [row_key(result_to_json(result)) for result in results]
    for result, key in zip(results, keys, strict=True):
        rating = rated.ratings.get(key)
        if rating is not None:
            matched.add(key)
        labels.append(_label(result, metadata_label(result.test), rating, counts))
    if not matched:
        raise _no_match(rated, keys)
    counts.unmatched = [key for key in rated.ratings if key not in matched]
    return labels, counts


def _label(result: TestResult, own: bool | None, rating: RatedRow | None, counts: LabelCounts) -> bool | None:
    if rating is None:
        if own is None:
            counts.unlabelled += 1
        else:
            counts.from_metadata += 1
        return own
    if _canonical(rating.output) != _canonical(result.output):
        counts.changed += 1
        return None
    counts.rated += 1
    if own is not None:
        counts.overridden += 1
        counts.disagreed += own != rating.passed
    return rating.passed


def _canonical(output: Any) -> str:
    """The output as JSON text: a report's output (read back from JSON) and a run's compare equal."""
    return json.dumps(output, sort_keys=True, ensure_ascii=False, default=str)


def _no_match(rated: RatedRun, keys: Sequence[str]) -> ConfigError:
    shared = sum(key in rated.keys for key in keys)
    if shared:
        problem = (
            f"none of the {len(rated.ratings)} rated row(s) of {rated.name} is a row of this config "
            f"({shared} of its unrated rows are): the rated tests, prompts or providers changed since"
        )
    else:
        problem = (
            f"no row of {rated.name} is a row of this config: it is another config's run, or this "
            "config's tests, prompts or providers changed since (a row is the same test description "
            "and vars, prompt and provider)"
        )
    return ConfigError(
        problem,
        where=_WHERE,
        hint="Name a run of this config (`evalh runs list`), or run it with `evalh run` and rate that run",
    )
