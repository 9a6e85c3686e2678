"""evalh's pytest plugin (registered through the ``pytest11`` entry point): ``pytest evals/`` collects
evalh configs, one item per row (test x prompt x provider x repeat). See docs/python.md.

This module is imported by every pytest run in an environment where evalh is installed, so it imports
nothing of evalh's run machinery: :mod:`evalh.pytest.items` is imported only once a config is collected.
"""

from __future__ import annotations

import fnmatch
from pathlib import Path

import pytest

__all__ = [
    "CACHED_PROPERTY",
    "SHARED_A_CONFIG",
    "pytest_addoption",
    "pytest_collect_file",
    "pytest_configure",
    "pytest_sessionfinish",
    "pytest_terminal_summary",
]

DEFAULT_PATTERNS = ["evalh.yaml", "evalh.yml", "*.evalh.yaml", "*.evalh.yml"]
_EXPLICIT = pytest.StashKey[set[Path]]()
SHARED_A_CONFIG = pytest.StashKey[bool]()  # --evalh-shard took its share of a config (maybe no row)
CACHED_PROPERTY = "evalh_cached"  # an item's user property: whether its output came from the cache


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("evalh", "evalh configs as tests")
    group.addoption(
        "--evalh-config",
        action="append",
        default=[],
        metavar="PATH",
        help="run this evalh config (any file name) as tests; may be repeated",
    )
    group.addoption(
        "--evalh-shard",
        default=None,
        metavar="I/N",
        help="collect only the I-th of N shares of each config's tests (1-based), the share `evalh run "
        "--shard I/N` runs",
    )
    group.addoption(
        "--evalh-no-cache",
        action="store_true",
        default=False,
        help="call the providers instead of reading evalh's cache, and write their answers to it (as "
        "`evalh run --no-cache`)",
    )
    parser.addini(
        "evalh_files",
        type="args",
        default=DEFAULT_PATTERNS,
        help="file name patterns collected as evalh configs (default: evalh.yaml *.evalh.yaml)",
    )


def pytest_configure(config: pytest.Config) -> None:
    named = [Path(path).resolve() for path in config.getoption("evalh_config")]
    config.stash[_EXPLICIT] = set(named)
    if named:  # `pytest --evalh-config x.yaml` runs that suite, with any paths given besides
        given = config.args if config.args_source is pytest.Config.ArgsSource.ARGS else []
        config.args = [*given, *map(str, named)]


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    patterns = parent.config.getini("evalh_files")
    named = file_path.resolve() in parent.config.stash[_EXPLICIT]
    if not named and not any(fnmatch.fnmatch(file_path.name, pattern) for pattern in patterns):
        return None
    from evalh.pytest.items import EvalhFile

    file: pytest.Collector = EvalhFile.from_parent(parent, path=file_path)
    return file


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int | pytest.ExitCode) -> None:
    """A share with no rows passes, as ``evalh run --shard`` exits 0 for one: with more CI jobs than
    tests, pytest's "no tests collected" (exit 5) would fail a job that had nothing to do."""
    if exitstatus == pytest.ExitCode.NO_TESTS_COLLECTED and session.config.stash.get(SHARED_A_CONFIG, False):
        session.exitstatus = pytest.ExitCode.OK


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    """Say how many rows' outputs came from the cache, as ``evalh run`` does: a cached output may
    predate a change of the app under test."""
    flags = [
        value
        for reports in terminalreporter.stats.values()
        for report in reports
        if getattr(report, "when", None) == "call"
        for name, value in getattr(report, "user_properties", ())
        if name == CACHED_PROPERTY
    ]
    if not flags:
        return
    from evalh.model.caching import CacheMode, CacheShare

    mode = CacheMode.REFRESH if config.getoption("evalh_no_cache") else CacheMode.USE
    sentence = CacheShare(len(flags), sum(bool(flag) for flag in flags), mode).sentence("--evalh-no-cache")
    terminalreporter.write_line(f"evalh: {sentence}")
