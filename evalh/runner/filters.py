"""Which tests, prompts and providers a run keeps: promptfoo's ``--filter-*`` flags, in one place.

After the config is loaded: ``--filter-pattern`` on descriptions, then ``--filter-failing`` /
``--filter-errors-only`` (an earlier report, read in ``session/filters.py``: the runner reads no report),
then promptfoo's order: metadata, the first N, a random
sample; prompts and providers by regex on their label or id. A filter that keeps nothing is an error
naming the flag (exit 2), never a run that passes by running nothing.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from evalh.errors import ConfigError
from evalh.model import Filters, Suite, TestCase

__all__ = [
    "apply_filters",
    "filter_by_description",
    "parse_metadata_filters",
    "test_identity",
]

_LIST_LIMIT = 10


def parse_metadata_filters(pairs: Sequence[str]) -> tuple[tuple[str, str], ...]:
    """``key=value`` pairs of ``--filter-metadata``. Raises ConfigError for another shape."""
    parsed: list[tuple[str, str]] = []
    for pair in pairs:
        key, _, value = pair.partition("=")
        if not key.strip() or not value:
            raise ConfigError(
                f"--filter-metadata expects key=value, got {pair!r}",
                where="--filter-metadata",
                hint="Example: --filter-metadata area=billing (repeat the flag for several: all must match)",
            )
        parsed.append((key.strip(), value))
    return tuple(parsed)


def apply_filters(
    suite: Suite, filters: Filters, rng: random.Random | None = None
) -> tuple[Suite, list[str]]:
    """The suite with every filter applied, and a note per filter on what it kept."""
    notes: list[str] = []
    tests = list(suite.tests)
    if filters.metadata:
        tests = _keep(
            tests, _metadata_matches(filters.metadata), "--filter-metadata", _metadata_shown(filters)
        )
    if filters.first_n is not None:
        tests = _nonempty(tests[: filters.first_n], "-n/--filter-first-n", f"{filters.first_n}")
    if filters.sample is not None and filters.sample < len(tests):
        chosen = sorted((rng or random.Random()).sample(range(len(tests)), filters.sample))
        tests = _nonempty([tests[i] for i in chosen], "--filter-sample", f"{filters.sample}")
    if len(tests) != len(suite.tests):
        notes.append(f"filters kept {len(tests)} of {len(suite.tests)} test(s)")
    prompts = _by_name(suite.prompts, filters.prompts, "--filter-prompts", lambda p: (p.label, p.path))
    providers = _by_name(
        suite.providers, filters.providers, "--filter-providers", lambda p: (p.label, p.id, p.named_id)
    )
    return replace(suite, tests=tuple(tests), prompts=prompts, providers=providers), notes


def filter_by_description(suite: Suite, pattern: str | None) -> Suite:
    """The tests whose description matches ``--filter-pattern`` (a Python regex, searched)."""
    if pattern is None:
        return suite
    regex = _compile(pattern, "--filter-pattern", "Tests whose description matches the pattern are kept")
    kept = tuple(test for test in suite.tests if test.description and regex.search(test.description))
    if not kept:
        raise _no_description_matched(regex, suite.tests)
    return replace(suite, tests=kept)


def _no_description_matched(regex: re.Pattern[str], tests: tuple[TestCase, ...]) -> ConfigError:
    """A filter that keeps no test is a mistake (a typo), not a run that passes by doing nothing."""
    described = [test.description for test in tests if test.description]
    shown = ", ".join(repr(text) for text in described[:_LIST_LIMIT])
    more = f" and {len(described) - _LIST_LIMIT} more" if len(described) > _LIST_LIMIT else ""
    listing = f"descriptions: {shown}{more}" if described else "none of them has a description"
    return ConfigError(
        f"{regex.pattern!r} matched none of the {len(tests)} tests ({listing})",
        where="--filter-pattern",
        hint="The pattern is a Python regex searched in each test's description; fix it or drop the flag",
    )


def _compile(pattern: str, flag: str, hint: str | None = None) -> re.Pattern[str]:
    try:
        return re.compile(pattern)
    except re.error as error:
        raise ConfigError(
            f"invalid regular expression {pattern!r}: {error}",
            where=flag,
            hint=hint and f"{hint} (Python re syntax)",
        ) from None


def _metadata_matches(pairs: tuple[tuple[str, str], ...]) -> Callable[[TestCase], bool]:
    """promptfoo's rule: every key's value (or an item of a list value) contains the text."""

    def matches(test: TestCase) -> bool:
        for key, text in pairs:
            value = test.metadata.get(key)
            items = value if isinstance(value, list) else [] if value is None else [value]
            if not any(text in _text(item) for item in items):
                return False
        return True

    return matches


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _metadata_shown(filters: Filters) -> str:
    return " ".join(f"{key}={value}" for key, value in filters.metadata)


def _keep(tests: list[TestCase], keep: Callable[[TestCase], bool], flag: str, shown: str) -> list[TestCase]:
    return _nonempty([test for test in tests if keep(test)], flag, shown, total=len(tests))


def _nonempty(kept: list[TestCase], flag: str, shown: str, total: int | None = None) -> list[TestCase]:
    if kept:
        return kept
    among = f" of the {total} tests" if total is not None else ""
    raise ConfigError(
        f"{flag} {shown} selected none{among}, so there is nothing to run",
        where=flag,
        hint="Fix the filter or drop the flag",
    )


def _by_name(
    items: tuple[Any, ...], pattern: str | None, flag: str, names: Callable[[Any], tuple[str | None, ...]]
) -> tuple[Any, ...]:
    """Prompts or providers whose label or id matches the regex (promptfoo's --filter-prompts/-providers)."""
    if pattern is None:
        return items
    regex = _compile(pattern, flag)
    kept = tuple(item for item in items if any(name and regex.search(name) for name in names(item)))
    if not kept:
        shown = ", ".join(repr(name) for item in items for name in names(item)[:1] if name)
        raise ConfigError(
            f"{pattern!r} matched none of the {len(items)} {flag.removeprefix('--filter-')} ({shown})",
            where=flag,
            hint="The pattern is a Python regex searched in each label and id; fix it or drop the flag",
        )
    return kept


def test_identity(description: Any, variables: Any) -> str:
    """A test's identity: its description and vars, what matches a test of the config to a report's rows
    (``--filter-failing``, ``--retry-errors``, ``--shard``, ``evalh merge``). A row's identity across two
    runs (with its prompt, provider and repeat) is :func:`evalh.store.identity.row_key`."""
    return json.dumps({"d": description or None, "v": variables or {}}, sort_keys=True, default=str)
