"""The cyclic collector's policy (evalh/common/gc_policy.py), and the premise it rests on: a run of evalh's
own code leaves no cyclic garbage, so collecting rarely during a run costs no memory."""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import evalh
from evalh.common import gc_policy
from evalh.config.load import load_suite_data
from evalh.errors import ConfigError
from evalh.runner.execute import run_suite


@pytest.fixture(autouse=True)
def _collector_as_found() -> Iterator[None]:
    enabled, threshold = gc.isenabled(), gc.get_threshold()
    yield
    gc.unfreeze()
    gc.set_threshold(*threshold)
    (gc.enable if enabled else gc.disable)()


def _config(tests: int) -> dict[str, Any]:
    asserts: list[dict[str, Any]] = [
        {"type": "icontains", "value": "refund", "metric": "found"},
        {"type": "regex", "value": "case \\d+"},
        {"type": "not-contains", "value": "error"},
        {"type": "equals", "value": "nope", "weight": 2, "metric": "exact"},
        {"type": "assert-set", "assert": [{"type": "contains-any", "value": ["a", "b"], "metric": "any"}]},
    ]
    rows = [{"vars": {"answer": f"refund for case {i}"}, "assert": asserts} for i in range(tests)]
    return {"prompts": ["{{answer}}"], "providers": ["echo"], "tests": rows}


def _evalhs(item: object) -> bool:
    """An object of evalh's: one of its functions or an instance of one of its classes (other tests'
    threads in this process may leave garbage of their own meanwhile)."""
    module = getattr(item, "__module__", None) if callable(item) else type(item).__module__
    return isinstance(module, str) and module.startswith("evalh")


def test_a_deterministic_run_leaves_no_cyclic_garbage() -> None:
    suite = load_suite_data(_config(40), base_dir=Path.cwd())
    gc.unfreeze()  # loading's own garbage (jsonschema's errors about shapes it tried) is not the run's
    gc.collect()
    gc.set_debug(gc.DEBUG_SAVEALL)  # what the collector finds unreachable is kept in gc.garbage
    try:
        result = run_suite(suite)
        gc.collect()
        garbage = [item for item in gc.garbage if _evalhs(item)]
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
    assert len(result.results) == 40 and result.results[0].named_scores["exact"] == 0.0
    assert garbage == []


def test_loading_freezes_what_it_built_and_leaves_the_collector_on() -> None:
    gc.unfreeze()
    with gc_policy.loading():
        assert not gc.isenabled()
        built = [{"test": i} for i in range(1000)]
    assert gc.isenabled() and gc.get_freeze_count() >= len(built)


def test_a_failed_load_freezes_nothing() -> None:
    gc.unfreeze()
    with pytest.raises(ConfigError), gc_policy.loading():
        raise ConfigError("bad")
    assert gc.isenabled() and gc.get_freeze_count() == 0


def test_a_load_inside_a_pause_leaves_the_pause_to_its_owner() -> None:
    gc.unfreeze()
    with gc_policy.paused():
        with gc_policy.loading():
            pass
        assert not gc.isenabled() and gc.get_freeze_count() == 0
    assert gc.isenabled()


def test_a_run_collects_rarely_and_restores_the_collector() -> None:
    gc.set_threshold(700, 10, 10)
    seen: list[tuple[int, ...]] = []
    with gc_policy.running():
        seen.append(gc.get_threshold())
        assert gc.get_freeze_count() > 0
    assert seen == [(gc_policy.RUN_THRESHOLD, 10, 10)]
    assert gc.get_threshold() == (700, 10, 10) and gc.get_freeze_count() == 0


def test_cycles_a_run_makes_are_still_collected() -> None:
    class Node:
        def __init__(self) -> None:
            self.me = self

    collected: list[int] = []

    def count(phase: str, info: dict[str, int]) -> None:
        if phase == "stop":
            collected.append(info["collected"])

    gc.callbacks.append(count)
    try:
        with gc_policy.running():
            for _ in range(gc_policy.RUN_THRESHOLD):  # each Node and its __dict__: two young objects
                Node()
    finally:
        gc.callbacks.remove(count)
    assert sum(collected) > 0


def test_overlapping_runs_leave_the_collectors_threshold_as_found() -> None:
    """Two evalh.evaluate runs in threads, the first ending while the second runs: when both have
    ended the process's threshold is its own again (the second run had taken the first run's raised
    threshold for the one to restore, and left every later allocation of the host 70x less collected)."""
    found = gc.get_threshold()
    first_in, second_in, first_done = threading.Event(), threading.Event(), threading.Event()

    def first(prompt: str) -> str:
        first_in.set()
        assert second_in.wait(30)
        return prompt

    def second(prompt: str) -> str:
        second_in.set()
        assert first_done.wait(30)
        return prompt

    def run(provider: Any) -> None:
        evalh.evaluate({"prompts": ["{{q}}"], "providers": [provider], "tests": [{"vars": {"q": "x"}}]})

    later = threading.Thread(target=run, args=(second,))
    earlier = threading.Thread(target=run, args=(first,))
    earlier.start()
    assert first_in.wait(30)
    later.start()
    earlier.join()
    first_done.set()
    later.join()
    assert gc.get_threshold() == found
