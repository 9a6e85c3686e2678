"""Fuzzing the commands that read JSON reports with mutated reports: ``runs import`` (then ``runs show``,
``runs list`` and the viewer's data of the imported run), ``diff`` both ways, ``merge`` and ``view``'s
loading and API data. Every input ends in success or a clean error (exit 2, one ``evalh: error:``
paragraph), never in an internal error, a traceback or a raw escape sequence on the terminal.

Seeds are real reports: a whole run and the two shards of the same run (echo provider, an assert-set,
named metrics, an errored row). Hypothesis mutates their structure (deletes keys, swaps types, puts odd
values anywhere: wrong types, NaN, huge numbers, deep nesting, terminal escapes, rich markup) and then
their text (truncation, stray brackets). Derandomized and bounded, so CI runs the same inputs each time.
"""

from __future__ import annotations

import copy
import json
import os
import textwrap
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from evalh.cli.app import app
from evalh.errors import EXIT_CONFIG, EXIT_FAILED, EXIT_OK, ConfigError
from evalh.reports.serialize import dumps, encode_json
from evalh.viewer.compare import compare_runs
from evalh.viewer.sources import GivenRuns, StoredRuns, UnknownRun
from tests.fuzzing import paths, replaced, value_at

SUITE = """
description: fuzzed reports
prompts: ["Say {{word}}", "Echo {{word}}"]
providers: [echo]
defaultTest:
  assert: [{type: not-icontains, value: as an AI, metric: safety}]
tests:
  - {description: apple, vars: {word: apple}, assert: [{type: icontains, value: apple, metric: hits}]}
  - {description: pear, vars: {word: pear}, assert: [{type: contains, value: PEAR, metric: hits}]}
  - {description: fig, vars: {word: fig},
     assert: [{type: assert-set, threshold: 0.5,
               assert: [{type: icontains, value: fig}, {type: equals, value: x}]}]}
  - {description: kiwi, vars: {word: kiwi}, assert: [{type: python, value: "1 / 0"}]}
"""
SEEDS = ("whole.json", "shard-1.json")
ESCAPES = "\x1b]0;pwned\x07\x1b[2J\x9b31m[bold red]markup[/]\u202e"
_DEEP, _HUGE = "@@deep@@", "@@huge@@"  # replaced in the text: json.dumps cannot write them
ODD_VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**20), max_value=10**20),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([ESCAPES, "", "latest", "\udcff", _DEEP, _HUGE, 10**300, 2**64, -1, "1", [], {}]),
    st.text(max_size=10),
    st.lists(st.one_of(st.none(), st.integers(), st.text(max_size=3)), max_size=3),
    st.dictionaries(st.sampled_from(["pass", "score", "type", "raw", "id", ESCAPES]),
                    st.one_of(st.none(), st.integers(), st.text(max_size=3)), max_size=3),
)  # fmt: skip
_TOKENS = ["[", "]", "{", "}", ",", '"', ":", "\\", "\x00", "NaN", "-Infinity", "1e999", "\ufeff"]


def _has(root: Any, path: tuple[Any, ...]) -> bool:
    for part in path:
        if not isinstance(root, dict) or part not in root:
            return False
        root = root[part]
    return True


@st.composite
def mutated_reports(draw: st.DrawFn) -> tuple[str, bytes]:
    seed = draw(st.sampled_from(SEEDS))
    data = copy.deepcopy(_SEED_DATA[seed])
    for _ in range(draw(st.integers(1, 4))):
        # mostly the rows and the run's figures (what evalh reads), sometimes anywhere (the config...)
        under = draw(st.sampled_from([("results", "results"), ("results", "results"), ("results",), ()]))
        path = draw(st.sampled_from(list(paths(value_at(data, under), under)) if _has(data, under) else [()]))
        old = value_at(data, path)
        action = draw(st.sampled_from(["delete", "odd", "odd", "wrap-list", "wrap-map", "stringify"]))
        if action == "delete" and path:
            data = replaced(data, path, None, delete=True)
        elif action == "wrap-list":
            data = replaced(data, path, [old])
        elif action == "wrap-map":
            data = replaced(data, path, {draw(st.sampled_from(["id", "raw", ESCAPES])): old})
        elif action == "stringify":
            data = replaced(data, path, str(old))
        else:
            data = replaced(data, path, copy.deepcopy(draw(ODD_VALUES)))
    text = json.dumps(data, ensure_ascii=False)
    text = text.replace(json.dumps(_DEEP), "[" * 3000 + "]" * 3000).replace(json.dumps(_HUGE), "9" * 5000)
    if draw(st.integers(0, 4)) == 0:  # the text too, now and then (most such texts are not JSON)
        position = draw(st.integers(0, len(text)))
        if draw(st.booleans()):
            text = text[:position] + draw(st.sampled_from(_TOKENS)) + text[position:]
        else:
            text = text[:position]
    return seed, text.encode("utf-8", "surrogatepass")


_SEED_DATA: dict[str, Any] = {}
_RUNS = ("whole.json", ()), ("shard-1.json", ("--shard", "1/2")), ("shard-2.json", ("--shard", "2/2"))


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The seed reports, written by real runs: the whole run and its two shards."""
    root = tmp_path_factory.mktemp("report-fuzz")
    (root / "suite.yaml").write_text(textwrap.dedent(SUITE), encoding="utf-8")
    for name, flags in _RUNS:
        args = ["run", "-c", str(root / "suite.yaml"), "--no-write", "--no-table", "--no-cache", *flags]
        result = CliRunner().invoke(app, [*args, "-o", str(root / name)])
        assert result.exit_code == EXIT_FAILED, result.output  # rows fail and one errors, on purpose
    for seed in SEEDS:
        _SEED_DATA[seed] = json.loads((root / seed).read_text(encoding="utf-8"))
    _SEED_SOURCES[:] = [GivenRuns([str(root / "whole.json")])]
    return root


def _command(args: list[str], allowed: tuple[int, ...]) -> tuple[int, str | None]:
    """Run ``evalh ARGS``: its exit code, and what is wrong with it (None: a success or a clean error)."""
    result = CliRunner().invoke(app, args)
    shown = f"evalh {' '.join(args)} -> {result.exit_code}: {result.output[-600:]!r}"
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        return result.exit_code, f"{shown} raised {result.exception!r}"
    if result.exit_code not in allowed or "internal error" in result.output or "Traceback" in result.output:
        return result.exit_code, shown
    if "\x1b" in result.output or "\x9b" in result.output:
        return result.exit_code, f"{shown}: a raw escape sequence reached the terminal"
    if result.exit_code == EXIT_CONFIG and not result.stderr.startswith("evalh: error: "):
        return result.exit_code, f"{shown}: not one clean error paragraph"
    return result.exit_code, None


def _viewer_problem(source: Any) -> str | None:
    """What is wrong with the viewer's data for a run (its page, a comparison, encoded as served)."""
    try:
        ref = source().runs()[0]["ref"]
        encode_json(dumps(source().page(ref, 0, 1000)))  # as the server sends them
        with source().rows(ref) as run, _seed_source().rows("whole.json") as seed:
            encode_json(dumps(compare_runs(run, seed, (ref, "whole.json"))))
    except (ConfigError, UnknownRun):
        return None  # a clean refusal, named
    except Exception as error:
        return f"viewer: {type(error).__name__}: {error}"
    return None


_SEED_SOURCES: list[GivenRuns] = []


def _seed_source() -> GivenRuns:
    return _SEED_SOURCES[0]


def report_problems(workspace: Path, seed: str, raw: bytes, home: Path) -> list[str]:
    """Every command on one mutated report; the problems found (none: every outcome was clean)."""
    path = workspace / f"fuzz-{seed}"
    path.write_bytes(raw)
    whole, other_shard = str(workspace / "whole.json"), str(workspace / "shard-2.json")
    ok, failed, usage = EXIT_OK, EXIT_FAILED, EXIT_CONFIG
    with mock.patch.dict(os.environ, {"EVALH_HOME": str(home), "NO_COLOR": "1"}):
        problems = [
            _command(["diff", str(path), whole], (ok, failed, usage))[1],
            _command(["diff", whole, str(path)], (ok, failed, usage))[1],
            _viewer_problem(lambda: GivenRuns([str(path)])),
        ]
        imported, problem = _command(["runs", "import", str(path)], (ok, usage))
        problems.append(problem)
        if imported == EXIT_OK:
            problems += [
                _command(["runs", "list"], (ok,))[1],
                _command(["runs", "show", "latest"], (ok,))[1],
                _command(["runs", "show", "latest", "--json"], (ok,))[1],
                _command(["diff", "latest", whole], (ok, failed))[1],
                _viewer_problem(StoredRuns),
            ]
        if seed.startswith("shard"):
            merged = str(workspace / "merged.json")
            problems.append(_command(["merge", str(path), other_shard, "-o", merged], (ok, failed, usage))[1])
    return [problem for problem in problems if problem is not None]


_HOMES = iter(range(10**9))


@settings(
    # EVALH_FUZZ_EXAMPLES=5000 explores further (and with fresh random inputs) on a developer's machine
    max_examples=int(os.environ.get("EVALH_FUZZ_EXAMPLES", "80")),
    derandomize="EVALH_FUZZ_EXAMPLES" not in os.environ,
    deadline=None,
    database=None,
    phases=[Phase.explicit, Phase.generate],  # no shrinking: a failure prints its report (and problem) as is
    suppress_health_check=[
        HealthCheck.function_scoped_fixture,
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
    ],
)
@given(case=mutated_reports())
def test_report_commands_never_fail_with_an_internal_error(case: tuple[str, bytes], workspace: Path) -> None:
    seed, raw = case
    home = workspace / "homes" / str(next(_HOMES))  # a store of its own: each import is a first import
    assert report_problems(workspace, seed, raw, home) == []
