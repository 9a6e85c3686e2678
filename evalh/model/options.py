"""How a run goes: :class:`RunOptions`, the one object the config's ``evaluateOptions``, ``evalh run``'s
flags, :func:`evalh.evaluate`'s keywords and the pytest plugin's options all fill.

Each option's default is written once, as its field's default here; the command line's help and the
Python API's ``Options`` are tested against these fields (tests/model/test_run_options.py), and the bounds
of the numbers live in :data:`evalh.common.limits.RUN_OPTION_BOUNDS`. Precedence, decided in
:meth:`RunOptions.over` alone: a flag (or keyword) given over ``evaluateOptions`` over the default.

Adding a run option: a field here (with ``config_key`` when ``evaluateOptions`` may set it too), the
code that reads it, its flag in evalh/cli/run.py, a test, docs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import MISSING, Field, dataclass, field, fields, replace
from pathlib import Path
from typing import Any

__all__ = ["DEFAULT_ALPHA", "Filters", "RunOptions", "Shard"]

DEFAULT_ALPHA = 0.05  # --alpha of `run --baseline` and `diff`: a comparison's family-wise error


@dataclass(frozen=True)
class Filters:
    """The filters of the command line (None / empty: not given)."""

    metadata: tuple[tuple[str, str], ...] = ()
    first_n: int | None = None
    sample: int | None = None
    prompts: str | None = None
    providers: str | None = None

    def __bool__(self) -> bool:
        return bool(self.metadata) or any(
            value is not None for value in (self.first_n, self.sample, self.prompts, self.providers)
        )


@dataclass(frozen=True)
class Shard:
    """The ``i/N`` of ``--shard``: ``index`` counts from 1."""

    index: int
    total: int

    def __str__(self) -> str:
        return f"{self.index}/{self.total}"


def _config_key(name: str) -> Any:
    """Metadata of a field that the config's ``evaluateOptions`` may set, under the key ``name``."""
    return {"config_key": name}


@dataclass(frozen=True)
class RunOptions:
    """Every option of a run, with its default. The comment names its flag and ``evaluateOptions`` key."""

    # -- also in evaluateOptions
    max_concurrency: int = field(default=4, metadata=_config_key("maxConcurrency"))  # -j
    repeat: int = field(default=1, metadata=_config_key("repeat"))  # --repeat
    # --repeat-pass-rate: with repeats, a test passes when this share of its repeats passed (1.0: all)
    repeat_pass_rate: float = field(default=1.0, metadata=_config_key("repeatPassRate"))
    cache: bool = field(default=True, metadata=_config_key("cache"))  # --no-cache turns it off
    timeout_ms: int = field(default=0, metadata=_config_key("timeoutMs"))  # no flag; 0: no timeout
    strict: bool = field(default=False, metadata=_config_key("strict"))  # warnings are errors (as --strict)
    delay_ms: int = field(default=0, metadata=_config_key("delay"))  # --delay, after each uncached call
    # -- flags only
    outputs: tuple[str, ...] = ()  # -o: the reports to write (else the config's outputPath)
    grader: str | None = None  # --grader: the provider of model-graded assertions
    vars: Mapping[str, str] = field(default_factory=dict)  # --var: data, never rendered as a template
    filter_pattern: str | None = None  # --filter-pattern: a regex on test descriptions
    filter_failing: Path | None = None  # --filter-failing REPORT.json
    filter_errors_only: Path | None = None  # --filter-errors-only REPORT.json
    retry_errors: bool = False  # --retry-errors: re-run the first .json report's ERROR rows, merged in
    filters: Filters = field(default_factory=Filters)  # --filter-metadata, -n, --filter-sample, ...
    shard: Shard | None = None  # --shard i/N: run only this share of the tests
    description: str | None = None  # --description: the run's, instead of the config's
    record: bool = False  # in the run store ($EVALH_HOME); `evalh run` records unless --no-write
    baseline: str | None = None  # --baseline: a stored run or a JSON report to compare the run with
    fail_under: float | None = None  # --fail-under PCT: the pass rate a run needs to pass
    fail_on_regressions: bool = False  # --fail-on regressions: only new failures since the baseline fail
    alpha: float = DEFAULT_ALPHA  # --alpha: the family-wise error of the per-test comparison with repeats
    # the names set by the config or a face, which :meth:`over` lets win; when not said, the names whose
    # value is not the default (``RunOptions(repeat=3)`` sets repeat)
    given: frozenset[str] | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        if self.given is None:
            changed = (item.name for item in fields(self) if item.name != "given" and _changed(self, item))
            object.__setattr__(self, "given", frozenset(changed))

    @classmethod
    def given_as(cls, **values: Any) -> RunOptions:
        """Options from flags or keywords: a value of None is one not given (the default stays)."""
        chosen = {name: value for name, value in values.items() if value is not None}
        return cls(**chosen, given=frozenset(chosen))

    @classmethod
    def from_evaluate_options(cls, config: Mapping[str, Any]) -> RunOptions:
        """The options a config's (validated) ``evaluateOptions`` mapping sets."""
        keys = {item.metadata["config_key"]: item.name for item in fields(cls) if item.metadata}
        return cls.given_as(**{keys[key]: value for key, value in config.items() if key in keys})

    def over(self, config: RunOptions) -> RunOptions:
        """These options (a face's) over the ``config``'s (``evaluateOptions``) over the defaults:
        what the run uses. ``--no-cache`` only ever turns the cache off, and a delay between calls
        means one call at a time (promptfoo)."""
        mine, theirs = self.given or frozenset(), config.given or frozenset()
        merged = replace(config, **{name: getattr(self, name) for name in mine})
        return replace(
            merged,
            cache=config.cache and self.cache,
            max_concurrency=1 if merged.delay_ms else merged.max_concurrency,
            given=theirs | mine,
        )


def _changed(options: RunOptions, item: Field[Any]) -> bool:
    """Whether ``options`` holds another value than the default of the field ``item``."""
    default = item.default if item.default_factory is MISSING else item.default_factory()
    return bool(getattr(options, item.name) != default)
