"""Suite-level aggregates of a run: pass rate, mean scores per named metric and per assertion type,
macro-F1 for classification suites, and a side-by-side view of every provider × prompt column.

:func:`compute_aggregates` is pure and runs once: the runner stores its typed result
(:class:`evalh.model.Aggregates`) in ``RunRecord.aggregates``, and every report formats it (the columns
of the CSV, JUnit, HTML and JSON reports, the console's tables). ``reports/json.py`` writes it under
``results.aggregates`` in this shape (camelCase keys like the rest of the JSON report; rates are
percentages 0-100 like ``stats`` and ``RunRecord.pass_rate``, scores are fractions 0-1; a mean over
nothing is ``null``)::

    {
      "passRate": 83.33,          # % of rows that passed; ERROR rows count against; 100.0 with no rows
      "meanScore": 0.87,          # mean row score over the rows that are not ERROR (null if none)
      "counts": {"rows": 12, "passed": 10, "failed": 1, "errors": 1},
      "namedScores": {            # per `metric` name, over the non-ERROR rows that carry it
        "accuracy": {"mean": 0.8, "min": 0.5, "max": 1.0, "count": 10}
      },
      "assertionTypes": {         # per full type (`not-contains` apart from `contains`), every graded
        "rouge-n": {              # assertion including assert-set children
          "count": 12, "passed": 9, "errors": 1,
          "passRate": 75.0,       # % of these assertions that passed (errors count against)
          "meanScore": 0.81       # over the ones that ran (errors excluded); null if none ran
        }
      },
      "columns": [                # side by side: one record per provider × prompt, by provider then prompt
        {"provider": "openai:gpt-4o-mini", "prompt": "qa", "providerIndex": 0, "promptIndex": 0,
         "rows": 6, "passed": 5, "failed": 1, "errors": 0, "passRate": 83.33, "meanScore": 0.9,
         "namedScores": {"accuracy": 0.8},       # mean per metric name in this column
         "macroF1": 0.75, "accuracy": 0.8}       # only when the suite has labelled tests
      ],
      "classification": [         # [] unless some test has metadata.label; one record per column
        {"provider": "...", "prompt": "...", "providerIndex": 0, "promptIndex": 0,
         "rows": 5,               # labelled rows of the column
         "accuracy": 0.8, "macroF1": 0.75,
         "unknownPredictions": 1, # predictions that are none of the gold labels
         "perClass": {"positive": {"precision": 1.0, "recall": 0.5, "f1": 0.667, "support": 2}}}
      ],
      "derivedMetrics": [         # only when the config has derivedMetrics; one record per column
        {"provider": "...", "prompt": "...", "providerIndex": 0, "promptIndex": 0,
         "precision": 0.75}       # each derived metric's value (null when not finite, e.g. 1/0)
      ]
    }

Derived metrics (promptfoo's ``derivedMetrics``): per column, each ``value`` expression (mathjs syntax,
see ``evalh.runtimes.math_expressions``) over the column's summed named scores (``namedScores`` of
``results.prompts[].metrics``, every row) and ``__count`` (its rows), in the order written, each
result usable by the next. The JSON report also writes them into that ``namedScores``, as promptfoo.

Classification labels: the gold label of a row is its test's ``metadata.label``; rows without one are
left out. The predicted label is the output's ``label`` field when the output is a JSON object that has
one, else the output text. Both are trimmed of whitespace, surrounding quotes and trailing punctuation
and case-folded. A row without output (a provider error) counts as a wrong prediction. Per column, for
each gold label c: precision = TP / predicted c, recall = TP / gold c, F1 their harmonic mean (0 when
undefined); macro-F1 is the unweighted mean over the gold labels (a prediction outside them lowers
recall, not the mean's denominator), as scikit-learn's
``f1_score(average="macro", labels=gold_labels, zero_division=0)``.
"""

from __future__ import annotations

import json
import math
import unicodedata
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from evalh.model import (
    Aggregates,
    Column,
    GradedAssertion,
    NamedTotal,
    RepeatSummary,
    RowFigures,
    ScoreStats,
    Status,
    Suite,
    TestRepeats,
    TestResult,
    TypeFigures,
    Usage,
)
from evalh.model.verdict import pass_rate
from evalh.runtimes.math_expressions import ExpressionFailed, evaluate
from evalh.stats.repeats import RepeatStats, repeat_stats_by_key, suite_pass_rate_interval

__all__ = [
    "classification_report",
    "compute_aggregates",
    "derived_metrics",
    "label_of",
    "predicted_label",
    "repeat_figures",
]

_TRIM = " \t\r\n\"'`“”‘’.,;:!?"


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def label_of(value: Any) -> str | None:
    """A label as compared: trimmed, NFC-normalised, case-folded; None for no label."""
    if value is None or isinstance(value, Mapping | list):
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    text = unicodedata.normalize("NFC", " ".join(str(value).strip(_TRIM).split())).casefold()
    return text or None


def predicted_label(output: Any) -> str | None:
    """The label an output predicts: its JSON ``label`` field if it has one, else its text."""
    if output is None:
        return None
    parsed = output
    if isinstance(output, str):
        try:
            parsed = json.loads(output)
        except json.JSONDecodeError:
            return label_of(output)
    if isinstance(parsed, Mapping):
        return label_of(parsed.get("label"))
    return label_of(output if isinstance(output, str) else json.dumps(output, ensure_ascii=False))


def classification_report(pairs: Sequence[tuple[str, str | None]]) -> dict[str, Any]:
    """Accuracy, macro-F1 and per-class figures from (gold, predicted) pairs (predicted None: no answer)."""
    classes = sorted({gold for gold, _ in pairs})
    gold_count = Counter(gold for gold, _ in pairs)
    predicted_count = Counter(predicted for _, predicted in pairs)
    correct = Counter(gold for gold, predicted in pairs if gold == predicted)
    per_class: dict[str, dict[str, float]] = {}
    for label in classes:
        precision = correct[label] / predicted_count[label] if predicted_count[label] else 0.0
        recall = correct[label] / gold_count[label]
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        per_class[label] = {"precision": precision, "recall": recall, "f1": f1, "support": gold_count[label]}
    return {
        "rows": len(pairs),
        "accuracy": sum(correct.values()) / len(pairs) if pairs else None,
        "macroF1": _mean([figures["f1"] for figures in per_class.values()]),
        "unknownPredictions": sum(1 for _, predicted in pairs if predicted not in gold_count),
        "perClass": per_class,
    }


def _flatten(graded: Sequence[GradedAssertion]) -> Sequence[GradedAssertion]:
    """``graded`` with each assert-set's children after it, depth first: the row's own tuple when it
    has no set (nearly every row: no list, no generator step per assertion)."""
    for item in graded:
        if item.children:
            flat: list[GradedAssertion] = []
            _flatten_into(graded, flat)
            return flat
    return graded


def _flatten_into(graded: Sequence[GradedAssertion], flat: list[GradedAssertion]) -> None:
    for item in graded:
        flat.append(item)
        if item.children:
            _flatten_into(item.children, flat)


# Per full type (``not-contains`` apart from ``contains``): its assertions that applied, those that passed
# without an error, and the scores of those that ran (not errors), in row order.
_TypeTally = tuple[int, int, list[float]]
_ColumnKey = tuple[int, int]  # a column's (provider index, prompt index)


def _assertion_types(tallies: Mapping[str, _TypeTally]) -> dict[str, TypeFigures]:
    summary: dict[str, TypeFigures] = {}
    for name in sorted(tallies):
        count, passed, ran = tallies[name]
        summary[name] = TypeFigures(
            count=count,
            passed=passed,
            errors=count - len(ran),
            pass_rate=pass_rate(passed, count),
            mean_score=_mean(ran),
        )
    return summary


def _tallies(rows: Sequence[TestResult]) -> tuple[dict[str, _TypeTally], dict[_ColumnKey, tuple[int, int]]]:
    """One pass over every graded assertion (children of sets included) that applied: the tally of each
    type, and each column's assertions that passed and that did not (30,000 in a 5,000-row run)."""
    tallies: dict[str, list[Any]] = {}
    columns: dict[_ColumnKey, tuple[int, int]] = {}
    for row in rows:
        passed = failed = 0
        for item in _flatten(row.assertions):
            if item.skipped:  # did not apply: neither a pass nor a score of the type
                continue
            tally = tallies.get(item.spec.type)  # the type as written: its full_type
            if tally is None:
                tally = tallies[item.spec.type] = [0, 0, []]
            tally[0] += 1
            if item.passed:
                passed += 1
            else:
                failed += 1
            if not item.error:
                tally[2].append(item.score)
                tally[1] += item.passed
        key = (row.provider_index, row.prompt_index)
        before = columns.get(key, (0, 0))
        columns[key] = (before[0] + passed, before[1] + failed)
    return {name: (tally[0], tally[1], tally[2]) for name, tally in tallies.items()}, columns


def _named_scores(rows: Sequence[TestResult]) -> dict[str, ScoreStats]:
    values: dict[str, list[float]] = defaultdict(list)
    for row in rows:
        if row.status is not Status.ERROR:
            for name, score in row.named_scores.items():
                values[name].append(score)
    return {
        name: ScoreStats(mean=sum(scores) / len(scores), min=min(scores), max=max(scores), count=len(scores))
        for name, scores in sorted(values.items())
    }


def _figures(rows: Sequence[TestResult]) -> RowFigures:
    counts = Counter(row.status for row in rows)
    return RowFigures(
        rows=len(rows),
        passed=counts[Status.PASS],
        failed=counts[Status.FAIL],
        errors=counts[Status.ERROR],
        pass_rate=pass_rate(counts[Status.PASS], len(rows)),
        mean_score=_mean([row.score for row in rows if row.status is not Status.ERROR]),
    )


def _labelled_pairs(rows: Sequence[TestResult]) -> list[tuple[str, str | None]]:
    pairs: list[tuple[str, str | None]] = []
    for row in rows:
        gold = label_of(row.test.metadata.get("label"))
        if gold is not None:
            pairs.append((gold, predicted_label(row.output)))
    return pairs


def _named_totals(rows: Sequence[TestResult]) -> dict[str, NamedTotal]:
    """Sums over every row, ERROR rows included, as promptfoo's per-prompt metrics
    (``accumulateNamedMetric``): a row adds its weighted mean times its summed weight (so the column
    sums score x weight), the number of assertions carrying the name (at least 1) and that weight."""
    totals: dict[str, NamedTotal] = {}
    for row in rows:
        if not row.named_scores:
            continue
        contributing = Counter(item.spec.metric for item in _flatten(row.assertions) if item.spec.metric)
        for name, value in row.named_scores.items():
            weight = row.named_score_weights.get(name)
            old = totals.get(name, NamedTotal())
            totals[name] = NamedTotal(
                old.total + (value * weight if weight is not None else value),
                old.count + max(contributing[name], 1),
                old.weight + (weight if weight is not None else max(contributing[name], 1)),
            )
    return totals


def derived_metrics(
    metrics: Sequence[tuple[str, str]], totals: Mapping[str, NamedTotal], rows: int
) -> dict[str, float | None]:
    """promptfoo's ``derivedMetrics`` of one column: each expression over the column's summed named
    scores and ``__count`` (its rows), in order, each result visible to the next. As in promptfoo, a
    metric that cannot be evaluated (an unknown name) is 0; a non-finite one (1/0) is None (null)."""
    names: dict[str, float] = {name: total.total for name, total in totals.items()}
    names["__count"] = float(rows)
    derived: dict[str, float | None] = {}
    for name, expression in metrics:
        try:
            value = evaluate(expression, names)
        except ExpressionFailed:
            value = names.get(name, 0.0)
        derived[name] = value if math.isfinite(value) else None
        names[name] = value
    return derived


def _column(
    first: TestResult, rows: Sequence[TestResult], labelled: bool, suite: Suite, assertions: tuple[int, int]
) -> Column:
    """A column of ``rows``; ``assertions``: the counts of its assertions that passed and that did not."""
    passed, failed = assertions
    totals = _named_totals(rows)
    return Column(
        prompt=first.prompt,
        provider=first.provider,
        prompt_index=first.prompt_index,
        provider_index=first.provider_index,
        rows=tuple(rows),
        figures=_figures(rows),
        named_scores=_named_scores(rows),
        named_totals=totals,
        assertions_passed=passed,
        assertions_failed=failed,
        score_total=sum(row.score for row in rows),
        latency_ms=sum(row.latency_ms or 0.0 for row in rows),
        cost=sum(row.cost or 0.0 for row in rows),
        usage=sum((row.usage for row in rows), Usage()),
        classification=classification_report(_labelled_pairs(rows)) if labelled else None,
        derived=derived_metrics(suite.derived_metrics, totals, len(rows)) if suite.derived_metrics else {},
    )


def _columns(
    suite: Suite,
    results: Sequence[TestResult],
    labelled: bool,
    assertions: Mapping[_ColumnKey, tuple[int, int]],
) -> tuple[Column, ...]:
    """Every provider x prompt column, by provider then prompt. The rows decide which columns exist
    (a provider may be limited to some prompts); a run without rows lists the suite's providers x
    prompts."""
    groups: dict[tuple[int, int], list[TestResult]] = defaultdict(list)
    for row in results:
        groups[(row.provider_index, row.prompt_index)].append(row)
    if not results:
        return tuple(
            Column(prompt, provider, qi, pi)
            for pi, provider in enumerate(suite.providers)
            for qi, prompt in enumerate(suite.prompts)
        )
    return tuple(
        _column(rows[0], rows, labelled, suite, assertions[key]) for key, rows in sorted(groups.items())
    )


Cell = tuple[int, int, int]  # a test for repeat statistics: test, prompt and provider index


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None


def _cell(row: TestResult) -> Cell:
    return (row.test.index, row.prompt_index, row.provider_index)


def _test_repeats(cell: Cell, stats: RepeatStats, required: float) -> TestRepeats:
    low, high = stats.mean_score_interval
    finite = math.isfinite(low) and math.isfinite(high)
    return TestRepeats(
        test_index=cell[0],
        prompt_index=cell[1],
        provider_index=cell[2],
        runs=stats.runs,
        passes=stats.passes,
        pass_rate=stats.pass_rate,
        pass_rate_interval=stats.pass_rate_interval,
        pass_all=stats.pass_all,
        pass_any=stats.pass_any,
        flaky=stats.flaky,
        mean_score=_finite(stats.mean_score),
        mean_score_interval=(low, high) if finite else None,
        passed=stats.passed_at(required),
    )


def repeat_figures(
    results: Sequence[TestResult], required_pass_rate: float = 1.0
) -> tuple[tuple[float, float], RepeatSummary | None]:
    """The suite's pass rate interval (tests as the unit) and, when some test ran more than once, each
    test's figures over its repeats with its verdict at ``required_pass_rate``: one pass over the rows.
    An ERROR row counts as a draw that failed; its score is left out of the mean."""
    count = 1 + max((row.repeat_index for row in results), default=0)
    if count < 2 and len({_cell(row) for row in results}) == len(results):
        # one row per test: its (passes, runs) is (passed, 1), no per-test figures to build
        return suite_pass_rate_interval([(int(row.status is Status.PASS), 1) for row in results]), None
    by_cell = repeat_stats_by_key(
        (
            _cell(row),
            row.status is Status.PASS,
            math.nan if row.status is Status.ERROR else row.score,
        )
        for row in results
    )
    interval = suite_pass_rate_interval([(stats.passes, stats.runs) for stats in by_cell.values()])
    if count < 2:
        return interval, None
    tests = tuple(_test_repeats(cell, stats, required_pass_rate) for cell, stats in sorted(by_cell.items()))
    return interval, RepeatSummary(count=count, required_pass_rate=required_pass_rate, tests=tests)


def compute_aggregates(
    suite: Suite, results: Sequence[TestResult], *, repeat_pass_rate: float | None = None
) -> Aggregates:
    """The run's aggregates; pure, results in any order (rows keep their order within a column).
    ``repeat_pass_rate``: the run's ``--repeat-pass-rate`` (None: the config's)."""
    labelled = any(label_of(row.test.metadata.get("label")) is not None for row in results)
    required = suite.evaluate_options.repeat_pass_rate if repeat_pass_rate is None else repeat_pass_rate
    interval, repeats = repeat_figures(results, required)
    types, columns = _tallies(results)
    return Aggregates(
        figures=_figures(results),
        named_scores=_named_scores(results),
        assertion_types=_assertion_types(types),
        columns=_columns(suite, results, labelled, columns),
        labelled=labelled,
        pass_rate_interval=interval,
        repeats=repeats,
    )
