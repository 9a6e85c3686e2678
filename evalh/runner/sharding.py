"""``evalh run --shard i/N``: the share of a run one CI machine makes, chosen by test identity.

Each test's key is the sha256 of its identity (description and vars, as ``--filter-failing`` and
``--retry-errors`` match tests) and of its position among the tests of the same identity, so it does
not depend on where the test sits in the config. The tests are sorted by key and the sorted list is
cut into N consecutive runs of (nearly) equal rows: test by test, the midpoint of its rows along the
sorted list says which cut it falls in. Hence:

- deterministic: every machine computes the same partition, whatever the order of the tests;
- disjoint and complete: each test is in exactly one shard, with all its rows (prompts x providers x
  repeats), so a test's repeats and columns stay together;
- balanced: shards differ by less than one test's rows (by at most one test when every test makes the
  same rows);
- stable: adding or removing a test moves only tests next to a cut to another shard (at most N - 1
  when every test makes the same rows), reordering tests moves none. No partition can be both exactly
  balanced and never move a test when one is appended (that is plain ``hash mod N``, whose shards
  differ by chance: with 10 tests and 3 shards, one is empty 5% of the time); this one keeps the
  balance and moves as few as it can.

Shards partition the tests that the other filters kept (``--filter-pattern``, ``-n``, metadata,
``--filter-failing``...), so N shards run with the same filters make the unsharded filtered run. The
tests' fingerprint, recorded in each shard's report, lets ``evalh merge`` refuse shards of different runs.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from evalh.common.limits import MAX_SHARDS
from evalh.errors import ConfigError
from evalh.model import (
    AssertionSpec,
    ProviderSpec,
    Shard,
    ShardInfo,
    Suite,
    TestCase,
    narrows_matrix,
    runs_prompt,
)
from evalh.runner.filters import test_identity
from evalh.runner.plan import run_matrix
from evalh.runner.sequence import runs_in_sequence
from evalh.secrets import redact_config, redact_text

__all__ = [
    "Shard",
    "assign_shards",
    "parse_shard",
    "run_fingerprint",
    "select_shard",
    "shard_info_from_json",
    "shard_keys",
    "shard_keys_of_identities",
    "shard_of_report",
]

_SHAPE = re.compile(r"\s*(\d+)\s*/\s*(\d+)\s*")
_HINT = (
    "Give the share to run as i/N, counted from 1 (--shard 2/3 runs the second of three shares), "
    "as pytest-split and jest's --shard do"
)


def parse_shard(text: str, flag: str = "--shard") -> Shard:
    """``--shard``'s value (or ``flag``'s: pytest's ``--evalh-shard``); ConfigError (exit 2) unless it is
    ``i/N`` with 1 <= i <= N <= MAX_SHARDS."""
    match = _SHAPE.fullmatch(text)
    if match is None:
        raise ConfigError(f"expects i/N, got {text!r}", where=flag, hint=_HINT)
    index, total = int(match.group(1)), int(match.group(2))
    if total > MAX_SHARDS:
        raise ConfigError(
            f"{text.strip()!r} splits the run into {total} shares; at most {MAX_SHARDS} are allowed",
            where=flag,
            hint=_HINT,
        )
    if total < 1 or not 1 <= index <= total:
        within = f"from 1 to {total}" if total else "from 1 to N, and N at least 1"
        raise ConfigError(
            f"{text.strip()!r} names share {index} of {total}; it must be {within}",
            where=flag,
            hint=_HINT,
        )
    return Shard(index, total)


def shard_keys(tests: Sequence[TestCase]) -> list[str]:
    """Each test's key: sha256 of its identity and its position among the tests of that identity."""
    return shard_keys_of_identities([test_identity(test.description, dict(test.vars)) for test in tests])


def shard_keys_of_identities(identities: Sequence[str]) -> list[str]:
    """:func:`shard_keys` of tests given by their identities (:func:`test_identity`), in the run's order."""
    seen: Counter[str] = Counter()
    keys = []
    for identity in identities:
        keys.append(hashlib.sha256(f"{identity}\0{seen[identity]}".encode(errors="replace")).hexdigest())
        seen[identity] += 1
    return keys


def assign_shards(keys: Sequence[str], weights: Sequence[int], total: int) -> list[int]:
    """The 0-based shard of each item: the items sorted by key, cut into ``total`` consecutive runs of
    nearly equal weight (an item goes where the midpoint of its weight falls). Integer arithmetic, so
    every machine cuts at the same place."""
    if not any(weights):
        weights = [1] * len(keys)
    whole = sum(weights)
    shards = [0] * len(keys)
    before = 0
    for item in sorted(range(len(keys)), key=lambda i: (keys[i], i)):
        midpoint_twice = 2 * before + weights[item]
        shards[item] = min(total - 1, midpoint_twice * total // (2 * whole))
        before += weights[item]
    return shards


def _rows_of(suite: Suite, test: TestCase) -> int:
    """The rows ``test`` makes in one repeat: its prompts x providers."""
    prompts, providers = run_matrix(suite)
    if not narrows_matrix(test) and all(provider.prompts is None for provider in providers):
        return len(prompts) * len(providers)
    return sum(runs_prompt(test, provider, prompt) for provider in providers for prompt in prompts)


def _spec(spec: AssertionSpec) -> list[Any]:
    value = redact_config(spec.value) if isinstance(spec.value, (dict, list)) else spec.value
    children = [_spec(child) for child in spec.children]
    return [spec.full_type, value, spec.threshold, spec.weight, spec.metric, children]


def _test(test: TestCase) -> list[Any]:
    asserts = [_spec(spec) for spec in test.asserts]
    output = test.output if test.has_output else None
    shared = [test.description, test.vars, test.metadata, asserts, test.threshold, output, test.prompts]
    if test.stand_in is not None:  # only then: every other suite keeps the fingerprint it had
        shared.append(_provider(test.stand_in))
    if test.providers is not None:  # likewise
        shared.append(["providers", *test.providers])
    return shared


def _provider(spec: ProviderSpec) -> list[Any]:
    """A provider as the fingerprint holds it, secrets replaced; a provider in its config (the simulated
    user's ``userProvider``) the same way."""
    config = {
        key: _provider(value) if isinstance(value, ProviderSpec) else value
        for key, value in spec.config.items()
    }
    return [spec.id, spec.label, redact_config(config)]


def run_fingerprint(suite: Suite, repeat: int) -> str:
    """sha256 of what the shards of one run share: its tests (in order), prompts, providers, repeat and
    derived metrics. Secret values are replaced before hashing, so none reaches a report even hashed."""
    prompts, providers = run_matrix(suite)
    content = {
        "tests": [_test(test) for test in suite.tests],
        "prompts": [[prompt.label, prompt.raw] for prompt in prompts],
        "providers": [_provider(p) for p in providers],
        "repeat": max(1, repeat),
        "derived": suite.derived_metrics,
    }
    text = redact_text(json.dumps(content, sort_keys=True, default=str, ensure_ascii=False))
    return hashlib.sha256(text.encode(errors="replace")).hexdigest()


def _refuse_sequence(suite: Suite, shard: Shard) -> None:
    if runs_in_sequence(suite):
        raise ConfigError(
            f"--shard {shard}: this suite's rows depend on earlier rows (a test's options.storeOutputAs or "
            "a prompt reading _conversation), so its tests cannot run on separate machines",
            where="--shard",
            hint="Run this suite in one job, without --shard",
        )


def select_shard(suite: Suite, shard: Shard, repeat: int, *, sampled: bool = False) -> tuple[Suite, str]:
    """The suite with the tests of ``shard`` only (and its :class:`ShardInfo`), and a note on what it
    kept. A shard may be empty (fewer tests than shards): it runs nothing and passes. ``sampled``: the
    tests were chosen by --filter-sample, at random on each machine, which shards cannot share."""
    if sampled:
        raise ConfigError(
            f"--shard {shard} with --filter-sample: each shard would draw its own random sample, so the "
            "shards would neither cover one sample nor avoid each other",
            where="--shard",
            hint="Choose the tests with a deterministic filter (-n/--filter-first-n, --filter-pattern, "
            "--filter-metadata) or drop --filter-sample",
        )
    _refuse_sequence(suite, shard)
    keys = shard_keys(suite.tests)
    shards = assign_shards(keys, [_rows_of(suite, test) for test in suite.tests], shard.total)
    kept = tuple(test for test, number in zip(suite.tests, shards, strict=True) if number == shard.index - 1)
    info = ShardInfo(shard.index, shard.total, run_fingerprint(suite, repeat), len(kept), len(suite.tests))
    note = f"--shard {shard}: {len(kept)} of {len(suite.tests)} test(s)"
    return replace(suite, tests=kept, shard=info), note


def shard_info_from_json(data: Any) -> ShardInfo | None:
    """A report's ``results.evalh.shard`` record (None when absent or not one: a share ``index`` of
    ``total`` that ``--shard`` cannot write is not one)."""
    if not isinstance(data, dict):
        return None
    try:
        info = ShardInfo(
            index=int(data["index"]),
            total=int(data["total"]),
            fingerprint=str(data["fingerprint"]),
            tests=int(data["tests"]),
            run_tests=int(data["runTests"]),
        )
    except (KeyError, TypeError, ValueError, OverflowError):
        return None
    return info if 1 <= info.index <= info.total <= MAX_SHARDS else None


def shard_of_report(report: dict[str, Any], shard: Shard | None, *, where: str) -> ShardInfo | None:
    """The shard a report records (``--retry-errors`` rewrites it as the same shard). ConfigError when
    ``shard`` (--shard) is given and the report is not that shard's."""
    info = shard_info_from_json((report.get("results", {}).get("evalh") or {}).get("shard"))
    if shard is None or (info is not None and (info.index, info.total) == (shard.index, shard.total)):
        return info
    written = f"shard {info.index}/{info.total}'s" if info is not None else "a run without --shard"
    raise ConfigError(
        f"the report to retry is {written} report, not shard {shard}'s",
        where=where,
        hint="Retry each shard with its own report (or leave --shard out: the report says which shard it is)",
    )
