"""A ``not-`` assertion's failure under pytest names the type as written (issue 23)."""

from __future__ import annotations

import textwrap
from importlib.metadata import entry_points

import pytest

import evalh.pytest.items  # noqa: F401  # before pytester's in-process runs (numpy imports once)

pytest_plugins = ["pytester"]

REGISTERED = any(point.value == "evalh.pytest" for point in entry_points(group="pytest11"))
PLUGIN = [] if REGISTERED else ["-p", "evalh.pytest"]

SUITE = """
prompts: ["Hi {{name}}"]
providers: [echo]
tests:
  - description: no shouting
    vars: {name: BOB}
    assert: [{type: not-icontains, value: bob}]
"""


def test_a_negated_failure_names_not_icontains(pytester: pytest.Pytester) -> None:
    (pytester.path / "evalh.yaml").write_text(textwrap.dedent(SUITE), encoding="utf-8")
    result = pytester.runpytest(*PLUGIN, "-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*[[]FAIL] not-icontains (score 0): *(not-icontains expects the opposite)*"])
    result.stdout.no_fnmatch_line("*[[]FAIL] icontains*")
