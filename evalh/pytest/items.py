"""The pytest nodes of an evalh config: a file collects one item per row of its plan; an item runs
its row (provider call, grading) when pytest runs it, so ``-k``, ``-x``, ``--lf`` and xdist's ``-n``
choose rows the ordinary way. A failed or errored row fails its item with every assertion's result."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from evalh.api import failure_text
from evalh.errors import EvalhError
from evalh.model import RunOptions, Status, Suite, TestResult
from evalh.pytest import CACHED_PROPERTY, SHARED_A_CONFIG
from evalh.runner.plan import Job
from evalh.runner.sharding import parse_shard
from evalh.session.run import load_for_run, plan_for_run, run_jobs

__all__ = ["EvalhFile", "EvalhItem", "RowFailed"]

_LABEL_LIMIT = 40  # characters of a prompt's label in an item's name


class RowFailed(Exception):
    """A row that did not pass; its report lists every assertion's verdict."""

    def __init__(self, row: TestResult) -> None:
        self.row = row
        super().__init__(row.reason)


def _name(job: Job, repeats: bool) -> str:
    test = job.test.description or f"test {job.index}"
    suffix = f" #{job.repeat_index}" if repeats else ""
    return _plain(f"{test} ({_short(job.prompt.label)} | {job.provider.label or job.provider.id}){suffix}")


def _short(label: str) -> str:
    words = " ".join(label.split())
    return words if len(words) <= _LABEL_LIMIT else words[: _LABEL_LIMIT - 1] + "…"


def _plain(name: str) -> str:
    """pytest reads ``[...]`` in a node id as parameters and ``::`` as a separator (``--lf`` would
    then not find the item again): neither is left in a name."""
    return " ".join(name.split()).replace("::", ":").replace("[", "(").replace("]", ")")


class EvalhFile(pytest.File):
    """An evalh config; its rows are planned (every prompt rendered) at collection."""

    def collect(self) -> Iterator[pytest.Item]:
        shard = self.config.getoption("evalh_shard")
        options = RunOptions.given_as(
            shard=None if shard is None else parse_shard(shard, "--evalh-shard"),
            cache=not self.config.getoption("evalh_no_cache"),
        )
        suite, _notes = load_for_run(self.path, options)
        jobs = plan_for_run(suite, options)
        if shard is not None:
            self.config.stash[SHARED_A_CONFIG] = True
        repeats = any(job.repeat_index for job in jobs)
        seen: dict[str, int] = {}
        for job in jobs:
            name = _name(job, repeats)
            seen[name] = seen.get(name, 0) + 1
            if seen[name] > 1:  # two tests of the same description: names must stay unique
                name = f"{name} ({seen[name]})"
            yield EvalhItem.from_parent(self, name=name, suite=suite, job=job, options=options)

    def repr_failure(  # type: ignore[override]  # pytest.Collector's takes no style
        self, excinfo: pytest.ExceptionInfo[BaseException]
    ) -> str | Any:
        if isinstance(excinfo.value, EvalhError):  # a bad config: its message, not a traceback
            return excinfo.value.render()
        return super().repr_failure(excinfo)


class EvalhItem(pytest.Item):
    """One row: run it and pass when evalh's verdict is PASS."""

    def __init__(self, *, suite: Suite, job: Job, options: RunOptions, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.suite = suite
        self.job = job
        self.options = options

    def runtest(self) -> None:
        result = run_jobs(self.suite, [self.job], self.options)
        if not result.results:  # stopped before the row finished (Ctrl-C)
            raise KeyboardInterrupt
        row = result.results[0]
        self.user_properties.append(("evalh_score", row.score))
        if row.asked_provider:  # for the session's cache sentence (user properties cross xdist)
            self.user_properties.append((CACHED_PROPERTY, row.cached))
        if row.status is not Status.PASS:
            raise RowFailed(row)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str | Any:
        if isinstance(excinfo.value, RowFailed):
            return failure_text(excinfo.value.row)
        if isinstance(excinfo.value, EvalhError):
            return excinfo.value.render()
        return super().repr_failure(excinfo, style)

    def reportinfo(self) -> tuple[Any, int | None, str]:
        return self.path, None, f"evalh: {self.name}"
