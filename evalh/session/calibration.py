"""From a config's labelled tests to the samples calibration fits: run the suite (once per embedding
provider given) through the ordinary run path, and gather each scored assertion's measured value
with its test's label.

A test's label is ``metadata.label: pass|fail`` (a CSV column ``__metadata:label``); with ``--labels REF``
a row a person rated in run REF takes its rating instead (:mod:`evalh.session.rated_labels`). Directions come
from the assertion registry; a ``not-`` assertion passes the other way, so its direction flips.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from evalh.assertions.registry import get_assertion
from evalh.config.load import TestKeyWhere, load_suite
from evalh.config.providers import parse_spec
from evalh.errors import ConfigError, Where
from evalh.model import GradedAssertion, ProviderChoice, RunRecord, Suite, TestCase
from evalh.session.rated_labels import LabelCounts, RatedRun, label_rows, read_rated_run
from evalh.session.run import run_quietly

__all__ = [
    "LABEL_KEY",
    "Collected",
    "Panel",
    "Samples",
    "Verdicts",
    "check_labels",
    "collect",
    "label_of",
    "with_embedder",
]

LABEL_KEY = "label"
_LABELS = {"pass": True, "fail": False}
Direction = Literal["higher", "lower"]


@dataclass
class Samples:
    """The measured values of one assertion (type and metric name) under one embedding provider."""

    assertion: str
    provider: str
    direction: Direction
    values: list[float] = field(default_factory=list)
    labels: list[bool] = field(default_factory=list)
    thresholds: Counter[float] = field(default_factory=Counter)  # the config's, per assertion
    errors: int = 0

    @property
    def current_threshold(self) -> float | None:
        """The threshold the config uses now (the most common one when tests differ)."""
        return self.thresholds.most_common(1)[0][0] if self.thresholds else None


@dataclass
class Verdicts:
    """The pass/fail verdicts of one judge (its provider id) on one judged assertion, with the labels."""

    assertion: str
    judge: str
    verdicts: list[bool] = field(default_factory=list)
    labels: list[bool] = field(default_factory=list)
    errors: int = 0


@dataclass
class Panel:
    """Several judges of one assertion (``provider: [a, b, c]``): each test's verdicts, in judge order."""

    assertion: str
    judges: tuple[str, ...]
    rows: list[tuple[bool, ...]] = field(default_factory=list)


@dataclass
class Collected:
    """What a calibration run gathered: scored samples, judges' verdicts, the unlabelled rows (and the
    rows left out as their rated output changed), and, with ``--labels``, where the labels came from."""

    samples: list[Samples]
    verdicts: list[Verdicts]
    panels: list[Panel]
    unlabelled: int
    rated: LabelCounts | None = None


def label_of(test: TestCase) -> bool | None:
    """True for ``pass``, False for ``fail``, None for an unlabelled test; anything else is an error."""
    raw = test.metadata.get(LABEL_KEY)
    if raw is None:
        return None
    label = _LABELS.get(str(raw).strip().lower())
    if label is None:
        raise _bad_label(raw, f"{test.path or 'tests'}.metadata.{LABEL_KEY}")
    return label


def check_labels(suite: Suite, locate: TestKeyWhere) -> None:
    """Every test's label is pass or fail (or none): checked as the config loads, before the first
    provider call, and located where it was written (``tests.yaml:7:14 tests[2].metadata.label``)."""
    for test in suite.tests:
        raw = test.metadata.get(LABEL_KEY)
        if raw is not None and str(raw).strip().lower() not in _LABELS:
            raise _bad_label(raw, locate(test, "metadata", LABEL_KEY))


def _bad_label(raw: object, where: Where) -> ConfigError:
    return ConfigError(
        f"a calibration label is pass or fail (got {raw!r})",
        where=where,
        hint="Write metadata: {label: pass} or {label: fail} (in a CSV, a __metadata:label column)",
    )


def with_embedder(suite: Suite, reference: str) -> Suite:
    """The suite with every embedding assertion scored by the provider ``reference`` names."""
    spec = parse_spec(reference, "--provider")
    choice = ProviderChoice(embedding=spec)

    def swapped(test: TestCase) -> TestCase:
        asserts = tuple(
            dataclasses.replace(a, provider=choice) if _embeds(a.base_type) else a for a in test.asserts
        )
        return dataclasses.replace(test, asserts=asserts)

    return dataclasses.replace(suite, tests=tuple(swapped(t) for t in suite.tests))


def _embeds(assertion_type: str) -> bool:
    definition = get_assertion(assertion_type)
    return definition is not None and "embedding" in definition.needs


def collect(
    config: Path | Sequence[Path], providers: Sequence[str], *, labels: str | None = None
) -> Collected:
    """Every scored assertion's samples, per provider (the configured embedders when none is given),
    every judge's pass/fail verdicts (from the first run: ``--provider`` swaps embedders, not judges),
    and how many result rows had no label. ``labels``: a run reference whose ratings label its rows
    over the tests' ``metadata.label`` (read before the first provider call)."""
    suite = load_suite(config, run_transforms=True, checks=(check_labels,))  # as `evalh run` loads it
    suite = dataclasses.replace(suite, output_paths=())  # calibrating writes none of the run's reports
    rated = None if labels is None else read_rated_run(labels, suite)
    runs = [(p, run_quietly(with_embedder(suite, p)).result) for p in providers]
    runs = runs or [("configured", run_quietly(suite).result)]
    labelled = [(provider, result, *_labels(result, rated)) for provider, result in runs]
    samples: dict[tuple[str, str], Samples] = {}
    for provider, result, row_labels, _ in labelled:
        _gather(result, row_labels, provider, samples)
    verdicts: dict[tuple[str, str], Verdicts] = {}
    panels: dict[str, Panel] = {}
    _, first, first_labels, counts = labelled[0]
    _gather_verdicts(first, first_labels, verdicts, panels)
    unlabelled = sum(label is None for label in first_labels)
    return Collected(
        list(samples.values()), list(verdicts.values()), list(panels.values()), unlabelled, counts
    )


def _labels(result: RunRecord, rated: RatedRun | None) -> tuple[list[bool | None], LabelCounts | None]:
    """Each row's label: its test's ``metadata.label``, or with ``--labels`` its rating over it."""
    if rated is None:
        return [label_of(row.test) for row in result.results], None
    return label_rows(result.results, rated, label_of)


def _gather(
    result: RunRecord, labels: Sequence[bool | None], provider: str, samples: dict[tuple[str, str], Samples]
) -> None:
    for row, label in zip(result.results, labels, strict=True):
        if label is None:
            continue
        for graded in _flattened(row.assertions):
            direction = _direction(graded)
            if direction is None:
                continue
            name = _name(graded)
            entry = samples.setdefault((name, provider), Samples(name, provider, direction))
            if graded.error or graded.value is None:
                entry.errors += 1
                continue
            entry.values.append(graded.value)
            entry.labels.append(label)
            threshold = graded.details.get("threshold")
            if isinstance(threshold, int | float):
                entry.thresholds[float(threshold)] += 1


def _gather_verdicts(
    result: RunRecord,
    labels: Sequence[bool | None],
    verdicts: dict[tuple[str, str], Verdicts],
    panels: dict[str, Panel],
) -> None:
    """Each judged assertion's verdict per judge (several judges: each one's, and a panel row)."""
    for row, label in zip(result.results, labels, strict=True):
        if label is None:
            continue
        for graded in _flattened(row.assertions):
            if not _judged(graded):
                continue
            name = _name(graded)
            judges = graded.details.get("judges")
            if graded.error or not isinstance(judges, list):
                judge = graded.details.get("judge")
                who = str(judge.get("provider")) if isinstance(judge, Mapping) else "grader"
                entry = verdicts.setdefault((name, who), Verdicts(name, who))
                if graded.error:
                    entry.errors += 1
                else:
                    entry.verdicts.append(graded.passed)
                    entry.labels.append(label)
                continue
            # each judge's own pass is of the positive form; a not- assertion passes the other way
            own = [(str(j.get("provider")), bool(j.get("pass")) != graded.spec.negate) for j in judges]
            for who, passed in own:
                entry = verdicts.setdefault((name, who), Verdicts(name, who))
                entry.verdicts.append(passed)
                entry.labels.append(label)
            panel = panels.setdefault(name, Panel(name, tuple(who for who, _ in own)))
            if panel.judges == tuple(who for who, _ in own):
                panel.rows.append(tuple(passed for _, passed in own))


def _judged(graded: GradedAssertion) -> bool:
    definition = get_assertion(graded.spec.base_type)
    return definition is not None and "text" in definition.needs


def _name(graded: GradedAssertion) -> str:
    return graded.spec.type + (f" [{graded.spec.metric}]" if graded.spec.metric else "")


def _flattened(graded: Sequence[GradedAssertion]) -> Iterator[GradedAssertion]:
    for item in graded:
        if item.children:  # assert-set: its members are calibrated one by one
            yield from _flattened(item.children)
        else:
            yield item


def _direction(graded: GradedAssertion) -> Direction | None:
    """The registry's direction, flipped for a ``not-`` assertion; None for a pass/fail check."""
    definition = get_assertion(graded.spec.base_type)
    if definition is None or definition.direction is None:
        return None
    if graded.spec.negate:
        return "lower" if definition.direction == "higher" else "higher"
    return definition.direction
