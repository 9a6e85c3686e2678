"""The env render leaves out a list's member whose JSON text shows no ``env`` expression (one C call for
each of 5,000 tests, instead of a walk of its every value): it must render exactly what the full walk
renders, report the same problems, and copy nothing more, wherever an ``env`` expression is."""

from __future__ import annotations

import datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evalh.config import env as env_module
from evalh.config.env import render_config_env
from evalh.config.files import LoadContext
from evalh.config.locate import parse_document
from evalh.templating import template_env

_ENV = template_env({"HOST": "h1", "TOKEN": "t-123"})

# texts with and without env expressions (and their near misses), a bad one that is a located problem
_TEXTS = st.sampled_from(
    [
        "plain",
        "{{ env.HOST }}",
        "http://{{ env.HOST }}/v1",
        "{{env.TOKEN}} and {{ question }}",
        "{{ question }}",
        "envelope",
        "{{ env.HOST | upper }}",
        "{{ env.HOST ",
        "{{ env.HOST | nosuch }}",
        'a "quoted" {{ env.HOST }} \\ back\nline',
        "é {{ env.HOST }} ✓",
        "file://{{ env.HOST }}.txt",
    ]
)
_KEYS = st.sampled_from(
    ["description", "vars", "assert", "value", "metric", "config", "metadata", "options", "env", "x", "url"]
)
_SCALARS = st.one_of(_TEXTS, st.integers(-5, 5), st.booleans(), st.none(), st.just(1.5))


def _values(depth: int) -> st.SearchStrategy[Any]:
    if depth == 0:
        return _SCALARS
    inner = _values(depth - 1)
    return st.one_of(
        _SCALARS,
        st.lists(inner, max_size=3),
        st.dictionaries(_KEYS, inner, max_size=4),
        # a key that is not a string, a date and a tuple: orjson refuses or writes them its own way
        st.dictionaries(st.integers(0, 3), inner, max_size=2),
        st.builds(lambda day: {"when": datetime.date(2024, 1, day)}, st.integers(1, 28)),
        st.builds(tuple, st.lists(inner, max_size=2)),
    )


_CONFIGS = st.fixed_dictionaries(
    {"tests": st.lists(_values(4), max_size=5)},
    optional={
        "providers": st.lists(_values(3), max_size=2),
        "defaultTest": _values(3),
        "scenarios": st.lists(st.fixed_dictionaries({"tests": st.lists(_values(3), max_size=2)}), max_size=2),
    },
)


def _render(data: Any, tmp_path: Path) -> tuple[Any, list[str]]:
    document = parse_document("tests: []\n", "c.yaml")
    document.data = data
    ctx = LoadContext(config_file=tmp_path / "c.yaml")
    rendered = render_config_env(data, _ENV, document, ctx)
    return rendered, [text for _, text in ctx.problems.problems]


def _same_shape(fast: Any, full: Any, original: Any) -> None:
    """Equal values, and a member left as it was is the same object in both (nothing more copied)."""
    assert fast == full
    if isinstance(original, dict | list):
        assert (fast is original) == (full is original)
        pairs = original.items() if isinstance(original, dict) else enumerate(original)
        for key, item in pairs:
            _same_shape(fast[key], full[key], item)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=_CONFIGS)
def test_the_skip_renders_what_the_full_walk_renders(
    data: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fast, fast_problems = _render(data, tmp_path)
    with monkeypatch.context() as patched:
        patched.setattr(env_module, "_may_use_env", lambda item: True)  # the full walk: every member
        full, full_problems = _render(data, tmp_path)
    assert fast_problems == full_problems
    _same_shape(fast, full, data)


def test_an_env_expression_deep_in_a_test_is_rendered_and_a_bad_one_located(tmp_path: Path) -> None:
    config = tmp_path / "c.yaml"
    text = (
        "tests:\n"
        "  - vars: {q: plain}\n"
        "  - metadata: {deep: [{inner: {host: 'http://{{ env.HOST }}/x'}}]}\n"
        "  - description: '{{ env.HOST | nosuch }}'\n"
    )
    config.write_text(text)
    document = parse_document(text, str(config))
    ctx = LoadContext(config_file=config)
    rendered = render_config_env(document.data, _ENV, document, ctx)
    assert rendered["tests"][1]["metadata"]["deep"][0]["inner"]["host"] == "http://h1/x"
    assert rendered["tests"][0] is document.data["tests"][0]  # nothing to render: not copied
    (problem,) = [text for _, text in ctx.problems.problems]
    assert problem.startswith(f"{config}:4:5 tests[2].description: ")
