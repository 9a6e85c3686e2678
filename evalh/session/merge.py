"""``evalh merge``: one run rebuilt from the JSON reports of its shards (``evalh run --shard i/N``).

The reports are all that is needed (not the config, nor its files): each row carries its test as the
run saw it (``testCase``), its graded assertions and its place in the unsharded plan (``testIdx``,
``promptIdx``, ``providerIdx``, ``repeatIdx``); each report carries the prompts of its columns and the
config. The rows are put back in the unsharded run's order (repeat, test, provider, prompt), read back
into results (:func:`evalh.reports.codec_read.result_from_row`, as ``--retry-errors`` reads them) and
every figure is computed again from them (runner/aggregates.py), so the merged report is the one the unsharded
run writes, but for what measures the run itself (timestamps, durations, latencies, ids).

Before anything is merged, evalh/session/shard_reports.py checks that the shards are all the shares of
one run, and each shard's rows its own.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from evalh.errors import ConfigError
from evalh.model import (
    AssertionSpec,
    CacheMode,
    CacheShare,
    Prompt,
    ProviderSpec,
    ProviderUsage,
    RunRecord,
    ShardInfo,
    Suite,
    TestCase,
    TestResult,
    Usage,
)
from evalh.reports.codec_read import (
    column_indexes,
    component_children,
    repeats_from_json,
    result_from_row,
    row_components,
    row_has_grading,
    row_own_description,
    row_prompt,
    row_provider,
    row_test_case,
    row_vars,
)
from evalh.runner.aggregates import compute_aggregates
from evalh.runner.plan import Job
from evalh.session.shard_reports import Cell, ShardReport, cell_of_row, reading_shard

__all__ = ["merge_shards", "run_of_report"]


_Row = tuple[dict[str, Any], ShardReport]  # a row and the shard report it comes from


def _ordered_rows(shards: Sequence[ShardReport]) -> list[_Row]:
    """Every shard's rows in the unsharded run's order; ConfigError when two shards made one row."""
    owner: dict[Cell, ShardReport] = {}
    rows: list[tuple[Cell, _Row]] = []
    for shard in shards:
        for row in shard.rows:
            with reading_shard(shard.path):
                cell = cell_of_row(row)
            if cell in owner:
                raise ConfigError(
                    f"the row of test {cell[1]} (prompt {cell[3]}, provider {cell[2]}, repeat {cell[0]}) "
                    f"is in shard {owner[cell].share} ({owner[cell].path}) and in shard {shard.share} "
                    f"({shard.path}): the shards overlap",
                    where="evalh merge",
                    hint="Merge the reports of one sharded run, each written by evalh run --shard i/N",
                )
            owner[cell] = shard
            rows.append((cell, (row, shard)))
    return [row for _, row in sorted(rows, key=lambda item: item[0])]


def _spec(
    written: Mapping[str, Any], shown: Mapping[str, Any], children: tuple[AssertionSpec, ...]
) -> AssertionSpec:
    """An assertion as the report shows it: ``written`` as the config wrote it (``testCase.assert``),
    ``shown`` as it was graded (its component's ``assertion``: value rendered, threshold, weight)."""
    full = str(shown.get("type") or written.get("type") or "")
    weight = shown.get("weight")
    return AssertionSpec(
        type=full,  # a "not-" type is negated by AssertionSpec itself
        value=shown.get("value"),
        threshold=shown.get("threshold"),
        weight=1.0 if weight is None else float(weight),
        metric=shown.get("metric"),
        children=children,
        raw=dict(written),
    )


def _specs(written: Sequence[Any], components: Sequence[Mapping[str, Any]]) -> tuple[AssertionSpec, ...]:
    """A test's assertions from its written ones and promptfoo's flattened components (an assert-set,
    then its children's flattened list), walked as session/retry.py reads them."""
    specs, position = [], 0
    for item in written:
        raw = item if isinstance(item, Mapping) else {}
        component = components[position] if position < len(components) else {}
        nested = component_children(component)
        kids = raw.get("assert") if raw.get("type") == "assert-set" else None
        position += 1 + (len(nested) if kids else 0)
        children = _specs(kids, nested) if isinstance(kids, list) else ()
        specs.append(_spec(raw, component.get("assertion") or raw, children))
    return tuple(specs)


def _test(index: int, row: Mapping[str, Any]) -> TestCase:
    case = row_test_case(row)
    components = row_components(row)
    return TestCase(
        index=index,
        description=case.get("description", row_own_description(row)),
        vars=dict(case.get("vars") or row_vars(row) or {}),
        asserts=_specs(case.get("assert") or [], components),
        threshold=case.get("threshold"),
        options=dict(case.get("options") or {}),
        metadata=dict(case.get("metadata") or {}),
        output=case.get("output"),
        has_output="output" in case,
    )


def _tests(rows: Sequence[_Row]) -> dict[int, TestCase]:
    """Each test from its first row with graded assertions (an ERROR row may have none)."""
    chosen: dict[int, _Row] = {}
    for row, shard in rows:
        index = cell_of_row(row)[1]
        if index not in chosen or (row_has_grading(row) and not row_has_grading(chosen[index][0])):
            chosen[index] = (row, shard)
    tests = {}
    for index, (row, shard) in sorted(chosen.items()):
        with reading_shard(shard.path):
            tests[index] = _test(index, row)
    return tests


def _prompts(shards: Sequence[ShardReport]) -> dict[int, Prompt]:
    prompts: dict[int, Prompt] = {}
    for shard in shards:
        with reading_shard(shard.path):
            for column in shard.data["results"].get("prompts") or []:
                index = column_indexes(column)[0]
                raw, label = str(column.get("raw") or ""), str(column.get("label") or "")
                prompts.setdefault(index, Prompt(raw=raw, label=label, id=str(column.get("id") or "")))
    return prompts


def _provider(row: Mapping[str, Any]) -> ProviderSpec:
    shown = row_provider(row) or {}
    provider_id = str(shown.get("id") or "")
    label = shown.get("label")
    return ProviderSpec(id=provider_id, label=str(label) if label and label != provider_id else None)


def _provider_usage(shards: Sequence[ShardReport]) -> tuple[ProviderUsage, ...]:
    """Each provider's usage summed over the shards, in the order they first name it."""
    totals: dict[str, Usage] = {}
    for shard in shards:
        with reading_shard(shard.path):
            _add_usage(totals, shard.block.get("providerUsage") or [])
    return tuple(ProviderUsage(name, usage) for name, usage in totals.items())


def _add_usage(totals: dict[str, Usage], items: Sequence[Mapping[str, Any]]) -> None:
    for item in items:
        tokens = item.get("tokens") or {}
        usage = Usage(
            prompt_tokens=int(tokens.get("prompt") or 0),
            completion_tokens=int(tokens.get("completion") or 0),
            total_tokens=int(tokens.get("total") or 0),
            requests=int(item.get("requests") or 0),
            cached=int(item.get("cacheHits") or 0),
            texts=int(item.get("texts") or 0),
            cost=float(item.get("cost") or 0.0),
            latency_ms=float(item.get("latencyMs") or 0.0),
        )
        name = str(item.get("provider"))
        totals[name] = totals.get(name, Usage()) + usage


def _repeat_pass_rate(shards: Sequence[ShardReport]) -> float | None:
    """The ``--repeat-pass-rate`` the shards ran with (None: they have no repeats, the default holds)."""
    for shard in shards:
        repeats = repeats_from_json(shard.block.get("repeats"))
        if repeats is not None:
            return repeats.required_pass_rate
    return None


def _suite(
    shards: Sequence[ShardReport], tests: Mapping[int, TestCase], prompts: Mapping[int, Prompt]
) -> Suite:
    config: Mapping[str, Any] = shards[0].data.get("config") or {}
    with reading_shard(shards[0].path):
        derived = tuple(
            (str(item["name"]), str(item["value"]))
            for item in config.get("derivedMetrics") or []
            if isinstance(item, Mapping) and "name" in item and "value" in item
        )
        description = config.get("description")
    return Suite(
        tests=tuple(tests.values()),
        prompts=tuple(prompts[index] for index in sorted(prompts)),
        description=str(description) if description is not None else None,
        raw_config=config,
        derived_metrics=derived,
    )


def _results(rows: Sequence[_Row], suite: Suite, prompts: Mapping[int, Prompt]) -> list[TestResult]:
    tests = {test.index: test for test in suite.tests}
    results = []
    for index, (row, shard) in enumerate(rows):
        with reading_shard(shard.path):
            results.append(_result(index, row, tests, prompts))
    return results


def _result(
    index: int, row: Mapping[str, Any], tests: Mapping[int, TestCase], prompts: Mapping[int, Prompt]
) -> TestResult:
    _repeat, test_index, provider_index, prompt_index = cell_of_row(row)
    shown = row_prompt(row) or {}
    prompt = prompts.get(prompt_index) or Prompt(raw="", label=str(shown.get("label") or ""))
    job = Job(
        index=index,
        test=tests[test_index],
        prompt=prompt,
        provider=_provider(row),
        prompt_index=prompt_index,
        provider_index=provider_index,
        repeat_index=_repeat,
        rendered_prompt=shown.get("raw", ""),
    )
    return result_from_row(row, job)


def merge_shards(shards: Sequence[ShardReport]) -> RunRecord:
    """The run the shards (from :func:`check_shards`) are shares of, its figures computed again."""
    rows = _ordered_rows(shards)
    prompts = _prompts(shards)
    suite = _suite(shards, _tests(rows), prompts)
    results = tuple(_results(rows, suite, prompts))
    times = [_times(shard) for shard in shards]
    stopped = [shard.block for shard in shards if shard.block.get("interrupted")]
    by = stopped[0].get("interruptedBy") if stopped else None
    return RunRecord(
        suite=suite,
        results=results,
        started_at=min(started for started, _, _ in times),
        # the shards ran side by side: the run took as long as the longest
        duration_ms=max(duration for _, duration, _ in times),
        provider_usage=_provider_usage(shards),
        interrupted=bool(stopped),
        interrupted_by=None if by is None else str(by),
        not_run=sum(not_run for _, _, not_run in times),
        aggregates=compute_aggregates(suite, results, repeat_pass_rate=_repeat_pass_rate(shards)),
        cache_mode=_cache_mode(shards),
    )


def run_of_report(name: str, document: Mapping[str, Any]) -> RunRecord:
    """A whole run's JSON report (a stored run: ``evalh runs show REF -o FILE``) read back as its run,
    as one shard that is the whole run, so every report writer ``merge`` uses writes it. ``name``: what
    an error calls the report."""
    tests = len({cell_of_row(row)[1] for row in document["results"]["results"]})
    return merge_shards([ShardReport(name, document, ShardInfo(1, 1, "", tests, tests))])


def _cache_mode(shards: Sequence[ShardReport]) -> CacheMode | None:
    """The shards' cache mode when they all ran with the same one (given the same flags, they do)."""
    shares = [CacheShare.from_json(shard.block.get("cache")) for shard in shards]
    modes = {share.mode if share is not None else None for share in shares}
    return modes.pop() if len(modes) == 1 else None


def _times(shard: ShardReport) -> tuple[str, float, int]:
    """A shard's start, duration and rows not run (interrupted)."""
    with reading_shard(shard.path):
        results = shard.data["results"]
        return (
            str(results.get("timestamp") or ""),
            float((results.get("stats") or {}).get("durationMs") or 0),
            int(shard.block.get("notRun") or 0),
        )
