"""The shard reports ``evalh merge`` is given, checked to be all the shares of one run before anything
is merged (evalh/session/merge.py merges them).

Each report must have a shard record (``results.evalh.shard``), the same N and the same run fingerprint
(its tests, prompts, providers and repeat), each share once and none missing. Each shard's rows must be
its own: no more tests than its record says it ran, a test's rows all in one shard, and (when every test
of the run has rows) each test in the shard ``--shard`` gives it, the partition computed again from the
rows' test identities (evalh/runner/sharding.py). Otherwise ConfigError (exit 2) says which file is wrong.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from evalh.common.limits import MAX_SHARDS
from evalh.errors import ConfigError
from evalh.model import ShardInfo
from evalh.reports.codec_read import row_cell, row_own_description, row_test_case, row_vars
from evalh.runner.filters import test_identity
from evalh.runner.sharding import assign_shards, shard_info_from_json, shard_keys_of_identities

__all__ = ["Cell", "ShardReport", "cell_of_row", "check_shards", "reading_shard"]

_HINT = "Merge the JSON reports (-o shard.json) of every shard of one run: evalh run --shard i/N, i = 1..N"
Cell = tuple[int, int, int, int]  # repeat, test, provider, prompt: the unsharded plan's order
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
def reading_shard(path: str) -> Iterator[None]:
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
    with reading_shard(path):
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
    _check_rows_belong(shards)
    return sorted(shards, key=_share)


_ROWS_HINT = "Merge the shard reports as evalh run --shard i/N wrote them: rows cannot move between shards"
_TestSeen = tuple[str, ShardReport, int]  # a test's identity, the shard holding its rows, its first row


def _identity(row: Mapping[str, Any]) -> str:
    """The identity --shard gave the row's test (its description and vars, as :func:`_test` reads them)."""
    case = row_test_case(row)
    return test_identity(case.get("description", row_own_description(row)), case.get("vars") or row_vars(row))


def _tests_of_rows(shards: Sequence[ShardReport]) -> tuple[dict[int, _TestSeen], Counter[int]]:
    """Each test of the rows (by ``testIdx``) and its rows in one repeat; ConfigError when a shard holds
    rows of more tests than its record says it ran, or a test's rows are split or disagree on it."""
    tests: dict[int, _TestSeen] = {}
    weights: Counter[int] = Counter()
    for shard in shards:
        own: set[int] = set()
        for position, row in enumerate(shard.rows):
            with reading_shard(shard.path):
                repeat, test, _provider_index, _prompt_index = cell_of_row(row)
                identity = _identity(row)
            seen = tests.setdefault(test, (identity, shard, position))
            _check_same_test(seen, (identity, shard, position), test)
            own.add(test)
            weights[test] += repeat == 0
        if len(own) > shard.info.tests:
            raise ConfigError(
                f"holds rows of {len(own)} tests, but its shard record (results.evalh.shard) says shard "
                f"{shard.share} ran {shard.info.tests}",
                where=shard.path,
                hint=_ROWS_HINT,
            )
    return tests, weights


def _check_same_test(seen: _TestSeen, row: _TestSeen, test: int) -> None:
    """A test's rows are all in one shard, and all say the same description and vars."""
    first, shard = seen[1], row[1]
    if first is not shard:
        raise ConfigError(
            f"the rows of test {test} are in shard {first.share} ({first.path}) and in shard {shard.share} "
            f"({shard.path}): the shards overlap",
            where="evalh merge",
            hint=_ROWS_HINT,
        )
    if seen[0] != row[0]:
        raise ConfigError(
            f"results.results[{row[2]}] is a row of test {test} whose description or vars differ from its "
            f"row results.results[{seen[2]}]",
            where=shard.path,
            hint=_ROWS_HINT,
        )


def _check_rows_belong(shards: Sequence[ShardReport]) -> None:
    """Each row belongs to the shard whose report holds it: when every test of the run has rows, the tests
    are shared out again as --shard shares them and each must be in its own shard's report."""
    tests, weights = _tests_of_rows(shards)
    first = shards[0].info
    if len(tests) > first.run_tests:
        raise ConfigError(
            f"the shards hold rows of {len(tests)} tests, but their shard records (results.evalh.shard) say "
            f"the run has {first.run_tests}",
            where="evalh merge",
            hint=_ROWS_HINT,
        )
    if len(tests) < first.run_tests:
        return  # a test without rows (its prompts filter kept none) or a stopped shard: no partition to redo
    order = sorted(tests)
    keys = shard_keys_of_identities([tests[test][0] for test in order])
    for test, number in zip(
        order, assign_shards(keys, [weights[t] for t in order], first.total), strict=True
    ):
        _identity_text, shard, position = tests[test]
        if number + 1 != shard.info.index:
            raise ConfigError(
                f"results.results[{position}] is a row of test {test}, which --shard "
                f"{number + 1}/{first.total} runs, not this shard ({shard.share})",
                where=shard.path,
                hint=_ROWS_HINT,
            )


def _share(shard: ShardReport) -> int:
    return shard.info.index


def cell_of_row(row: Mapping[str, Any]) -> Cell:
    cell = row_cell(row)
    return (cell.repeat, cell.test, cell.provider, cell.prompt)
