"""``evalh merge``: one run rebuilt from the JSON reports of its shards (``evalh run --shard i/N``).

The reports are all that is needed (not the config, nor its files): each row carries its test as the
run saw it (``testCase``), its graded assertions and its place in the unsharded plan (``testIdx``,
``promptIdx``, ``providerIdx``, ``repeatIdx``); each report carries the prompts of its columns and the
config. The rows are put back in the unsharded run's order (repeat, test, provider, prompt), read back
into results (runner/retrying.py's :func:`result_from_json`, as ``--retry-errors`` reads them) and every
figure is computed again from them (runner/aggregates.py), so the merged report is the one the unsharded
run writes, but for what measures the run itself (timestamps, durations, latencies, ids).

Before anything is merged, the shards must be all the shares of one run: each report has a shard
record, the same N and the same run fingerprint (its tests, prompts, providers and repeat), each share
once and none missing; otherwise ConfigError (exit 2) says which file is wrong.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from evalh.errors import ConfigError
from evalh.limits import MAX_SHARDS
from evalh.model import (
    AssertionSpec,
    CacheMode,
    CacheShare,
    Prompt,
    ProviderSpec,
    ProviderUsage,
    RunResult,
    ShardInfo,
    Suite,
    TestCase,
    TestResult,
    Usage,
)
from evalh.runner.aggregates import compute_aggregates
from evalh.runner.plan import Job
from evalh.runner.retrying import result_from_json
from evalh.runner.sharding import shard_info_from_json

__all__ = ["ShardReport", "check_shards", "merge_shards"]

_HINT = "Merge the JSON reports (-o shard.json) of every shard of one run: evalh run --shard i/N, i = 1..N"
_Cell = tuple[int, int, int, int]  # repeat, test, provider, prompt: the unsharded plan's order
_MISSING_LISTED = 10  # missing shares named in merge's error, the rest counted


@dataclass(frozen=True)
class ShardReport:
    """A shard's JSON report and its shard record."""

    path: str
    data: Mapping[str, Any]
    info: ShardInfo

    @property
    def rows(self) -> list[dict[str, Any]]:
        rows: list[dict[str, Any]] = self.data["results"]["results"]
        return rows

    @property
    def share(self) -> str:
        return f"{self.info.index}/{self.info.total}"

    @property
    def block(self) -> Mapping[str, Any]:
        """The report's ``results.evalh`` (checked to be an object by :func:`_shard_report`)."""
        block: Mapping[str, Any] = self.data["results"].get("evalh") or {}
        return block


@contextmanager
def _reading(path: str) -> Iterator[None]:
    """A shard report is untrusted JSON: a value of the wrong type in it is the report's fault, named
    by its file (exit 2), not a crash of merge."""
    try:
        yield
    except (AttributeError, KeyError, TypeError, ValueError, OverflowError) as error:
        raise ConfigError(
            f"is not a well-formed shard report ({type(error).__name__}: {error})",
            where=path,
            hint="Merge the JSON reports as evalh run --shard i/N -o shard.json wrote them",
        ) from None


def _shard_report(path: str, data: Mapping[str, Any]) -> ShardReport:
    with _reading(path):
        block = data["results"].get("evalh") or {}
        if not isinstance(block, Mapping):
            raise TypeError("results.evalh is not an object")
        record = block.get("shard")
    info = shard_info_from_json(record)
    if info is None and record is not None:
        raise ConfigError(
            f"its shard record (results.evalh.shard) is not one evalh run --shard writes: {record!r:.200}",
            where=path,
            hint=f"A shard record holds index, total (1 <= index <= total <= {MAX_SHARDS}), fingerprint, "
            "tests and runTests; merge the reports as evalh run --shard i/N wrote them",
        )
    if info is None:
        raise ConfigError(
            "this report holds a whole run, not a shard: it has no shard record (results.evalh.shard)",
            where=path,
            hint=_HINT,
        )
    return ShardReport(path, data, info)


def check_shards(reports: Sequence[tuple[str, Mapping[str, Any]]]) -> list[ShardReport]:
    """The reports as the shards of one run, by share; ConfigError naming the file (or the share) that
    does not belong: not a shard, another N, another run, a share given twice or missing."""
    shards = [_shard_report(path, data) for path, data in reports]
    if not shards:
        raise ConfigError("no report to merge", where="evalh merge", hint=_HINT)
    first = shards[0]
    by_share: dict[int, ShardReport] = {}
    for shard in shards:
        if shard.info.total != first.info.total:
            raise ConfigError(
                f"is shard {shard.share} while {first.path} is shard {first.share}: the shards of one run "
                "are shares of the same N",
                where=shard.path,
                hint=_HINT,
            )
        if shard.info.fingerprint != first.info.fingerprint:
            raise ConfigError(
                f"is a shard of another run than {first.path}: its tests, prompts, providers or --repeat "
                f"differ (run fingerprint {shard.info.fingerprint[:12]}, not {first.info.fingerprint[:12]})",
                where=shard.path,
                hint="Run every shard with the same config and flags (filters, --var, --repeat), then merge",
            )
        twin = by_share.get(shard.info.index)
        if twin is not None:
            raise ConfigError(
                f"shard {shard.share} is given twice: {twin.path} and {shard.path}",
                where="evalh merge",
                hint="Give each shard's report once",
            )
        by_share[shard.info.index] = shard
    missing = [f"{k}/{first.info.total}" for k in range(1, first.info.total + 1) if k not in by_share]
    if missing:
        given = ", ".join(f"{shard.share} ({shard.path})" for shard in sorted(shards, key=_share))
        named = ", ".join(missing[:_MISSING_LISTED])
        if len(missing) > _MISSING_LISTED:
            named += f" and {len(missing) - _MISSING_LISTED} more"
        raise ConfigError(
            f"shard{'s' if len(missing) > 1 else ''} {named} missing: given {given}",
            where="evalh merge",
            hint="Pass every shard's report; a shard that failed still writes its report (exit 1)",
        )
    return sorted(shards, key=_share)


def _share(shard: ShardReport) -> int:
    return shard.info.index


def _cell(row: Mapping[str, Any]) -> _Cell:
    return (
        int(row.get("repeatIdx") or 0),
        int(row.get("testIdx") or 0),
        int(row.get("providerIdx") or 0),
        int(row.get("promptIdx") or 0),
    )


_Row = tuple[dict[str, Any], ShardReport]  # a row and the shard report it comes from


def _ordered_rows(shards: Sequence[ShardReport]) -> list[_Row]:
    """Every shard's rows in the unsharded run's order; ConfigError when two shards made one row."""
    owner: dict[_Cell, ShardReport] = {}
    rows: list[tuple[_Cell, _Row]] = []
    for shard in shards:
        for row in shard.rows:
            with _reading(shard.path):
                cell = _cell(row)
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
    then its children's flattened list), walked as runner/retrying.py reads them."""
    specs, position = [], 0
    for item in written:
        raw = item if isinstance(item, Mapping) else {}
        component = components[position] if position < len(components) else {}
        nested = component.get("componentResults") or []
        kids = raw.get("assert") if raw.get("type") == "assert-set" else None
        position += 1 + (len(nested) if kids else 0)
        children = _specs(kids, nested) if isinstance(kids, list) else ()
        specs.append(_spec(raw, component.get("assertion") or raw, children))
    return tuple(specs)


def _test(index: int, row: Mapping[str, Any]) -> TestCase:
    case = row.get("testCase") or {}
    components = (row.get("gradingResult") or {}).get("componentResults") or []
    return TestCase(
        index=index,
        description=case.get("description", row.get("description")),
        vars=dict(case.get("vars") or row.get("vars") or {}),
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
        index = _cell(row)[1]
        if index not in chosen or (row.get("gradingResult") and not chosen[index][0].get("gradingResult")):
            chosen[index] = (row, shard)
    tests = {}
    for index, (row, shard) in sorted(chosen.items()):
        with _reading(shard.path):
            tests[index] = _test(index, row)
    return tests


def _prompts(shards: Sequence[ShardReport]) -> dict[int, Prompt]:
    prompts: dict[int, Prompt] = {}
    for shard in shards:
        with _reading(shard.path):
            for column in shard.data["results"].get("prompts") or []:
                index = int(column.get("promptIdx") or 0)
                raw, label = str(column.get("raw") or ""), str(column.get("label") or "")
                prompts.setdefault(index, Prompt(raw=raw, label=label, id=str(column.get("id") or "")))
    return prompts


def _provider(row: Mapping[str, Any]) -> ProviderSpec:
    shown = row.get("provider") or {}
    provider_id = str(shown.get("id") or "")
    label = shown.get("label")
    return ProviderSpec(id=provider_id, label=str(label) if label and label != provider_id else None)


def _provider_usage(shards: Sequence[ShardReport]) -> tuple[ProviderUsage, ...]:
    """Each provider's usage summed over the shards, in the order they first name it."""
    totals: dict[str, Usage] = {}
    for shard in shards:
        with _reading(shard.path):
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


def _suite(
    shards: Sequence[ShardReport], tests: Mapping[int, TestCase], prompts: Mapping[int, Prompt]
) -> Suite:
    config: Mapping[str, Any] = shards[0].data.get("config") or {}
    with _reading(shards[0].path):
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
        with _reading(shard.path):
            results.append(_result(index, row, tests, prompts))
    return results


def _result(
    index: int, row: Mapping[str, Any], tests: Mapping[int, TestCase], prompts: Mapping[int, Prompt]
) -> TestResult:
    _repeat, test_index, provider_index, prompt_index = _cell(row)
    shown = row.get("prompt") or {}
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
    return result_from_json(row, job)


def merge_shards(shards: Sequence[ShardReport]) -> RunResult:
    """The run the shards (from :func:`check_shards`) are shares of, its figures computed again."""
    rows = _ordered_rows(shards)
    prompts = _prompts(shards)
    suite = _suite(shards, _tests(rows), prompts)
    results = tuple(_results(rows, suite, prompts))
    times = [_times(shard) for shard in shards]
    stopped = [shard.block for shard in shards if shard.block.get("interrupted")]
    by = stopped[0].get("interruptedBy") if stopped else None
    return RunResult(
        suite=suite,
        results=results,
        started_at=min(started for started, _, _ in times),
        # the shards ran side by side: the run took as long as the longest
        duration_ms=max(duration for _, duration, _ in times),
        provider_usage=_provider_usage(shards),
        interrupted=bool(stopped),
        interrupted_by=None if by is None else str(by),
        not_run=sum(not_run for _, _, not_run in times),
        aggregates=compute_aggregates(suite, results),
        cache_mode=_cache_mode(shards),
    )


def _cache_mode(shards: Sequence[ShardReport]) -> CacheMode | None:
    """The shards' cache mode when they all ran with the same one (given the same flags, they do)."""
    shares = [CacheShare.from_json(shard.block.get("cache")) for shard in shards]
    modes = {share.mode if share is not None else None for share in shares}
    return modes.pop() if len(modes) == 1 else None


def _times(shard: ShardReport) -> tuple[str, float, int]:
    """A shard's start, duration and rows not run (interrupted)."""
    with _reading(shard.path):
        results = shard.data["results"]
        return (
            str(results.get("timestamp") or ""),
            float((results.get("stats") or {}).get("durationMs") or 0),
            int(shard.block.get("notRun") or 0),
        )
