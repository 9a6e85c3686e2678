"""``derivedMetrics``: promptfoo's metrics computed after the run from the named scores (the values
themselves: runner/aggregates.py). Each expression is parsed here, so a typo is a located config error
before any call; a name that no assertion's ``metric`` (nor an earlier derived metric) defines is a
located warning, since promptfoo then leaves the metric at 0."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from evalh.common.notices import is_strict, warn
from evalh.config.files import LoadContext
from evalh.config.locate import Document
from evalh.errors import ConfigError, Where
from evalh.model import AssertionSpec, TestCase
from evalh.runtimes.math_expressions import expression_names, expression_problem

__all__ = ["load_derived_metrics"]

_COUNT = "__count"  # the column's number of rows, as promptfoo's


def _metric_names(specs: Iterable[AssertionSpec]) -> Iterator[str]:
    for spec in specs:
        if spec.metric:
            yield spec.metric
        yield from _metric_names(spec.children)


def load_derived_metrics(
    value: Any, document: Document, ctx: LoadContext, tests: Sequence[TestCase]
) -> tuple[tuple[str, str], ...]:
    """The (name, expression) pairs, checked; problems go to ``ctx.problems``."""
    known = {_COUNT, *(name for test in tests for name in _metric_names(test.asserts))}
    metrics: list[tuple[str, str]] = []
    for index, item in enumerate(value or []):
        name, expression = str(item["name"]), str(item["value"])
        where = document.place(("derivedMetrics", index, "value"))
        problem = expression_problem(expression)
        if problem is not None:
            ctx.problems.add(
                f"derived metric {name!r}: {problem}",
                where=where,
                hint="Write a math expression over metric names and __count, e.g. correct / __count",
            )
            continue
        unknown = sorted(expression_names(expression) - known)
        if unknown:
            _unknown_names(name, unknown, sorted(known - {_COUNT}), where, ctx)
        metrics.append((name, expression))
        known.add(name)
    return tuple(metrics)


def _unknown_names(name: str, unknown: list[str], known: list[str], where: Where, ctx: LoadContext) -> None:
    error = ConfigError(
        f"derived metric {name!r} uses {', '.join(map(repr, unknown))}, which no assertion's metric: "
        "names (nor an earlier derived metric) defines; promptfoo then leaves it at 0",
        where=where,
        hint=f"Metric names in this config: {', '.join(known) or 'none'} (and __count, the rows)",
    )
    if is_strict():
        ctx.problems.add_exception(error)
    else:
        warn(error, where=where, subject="derived metric")
