"""The template fast path that never loads Jinja: a template that is only ``{{ name }}`` is read and printed
without the engine exactly when Jinja reads it as that variable, and prints what Jinja prints."""

from __future__ import annotations

import builtins
import keyword

import jinja2
import pytest

from evalh import templating
from evalh.errors import TemplateError
from evalh.templating import engine, referenced_names, render_template

_NAMES = {
    *keyword.kwlist,
    *keyword.softkwlist,
    *dir(builtins),
    *engine._ENV.globals,
    *engine._ENV.filters,
    *engine._ENV.tests,
    *("true", "false", "none", "True", "False", "None", "env", "lipsum", "loop", "self", "caller"),
    *("varargs", "kwargs", "super", "answer", "_private", "x1", "not", "and", "or", "in", "is"),
}
_IDENTIFIERS = sorted(name for name in _NAMES if name.isidentifier() and name.isascii())


def _jinja_reads_it_as_the_variable(template: str, name: str) -> bool:
    try:
        return engine._compile(template)[1] == {name}
    except jinja2.TemplateSyntaxError:
        return False


@pytest.mark.parametrize("name", _IDENTIFIERS)
def test_a_sole_name_takes_the_fast_path_exactly_when_jinja_reads_that_variable(name: str) -> None:
    for template in (f"{{{{{name}}}}}", f"{{{{ {name} }}}}"):
        fast = templating._sole_variable(template)
        assert (fast == name) is _jinja_reads_it_as_the_variable(template, name), template
        assert fast in (None, name)


@pytest.mark.parametrize("name", ["answer", "range", "true", "none", "env", "loop", "lipsum", "dict"])
@pytest.mark.parametrize("value", ["text", 3, 2.5, None, True, [1, "a"], {"k": 1}])
def test_a_sole_name_renders_and_is_read_as_through_jinja(name: str, value: object) -> None:
    template = "{{ " + name + " }}"
    expected = engine._compile(template)[0].render({"env": {}, name: value})
    assert render_template(template, {name: value}, where="w") == expected
    assert referenced_names(template, where="w") == engine.template_names(template, "w")


def test_a_sole_variable_too_deep_to_print_is_the_located_error_jinja_gives() -> None:
    # a var script or transformVars can hand a value nested past Python's recursion limit: the fast
    # path printed it with a bare RecursionError (a traceback) where Jinja's path names where it failed
    deep: list[object] = []
    for _ in range(5000):
        deep = [deep]
    failed = r"template '\{\{a\}\}' failed: maximum recursion depth"
    with pytest.raises(TemplateError, match=failed) as raised:
        render_template("{{a}}", {"a": deep}, where="suite.yaml: prompts[0]")
    assert "suite.yaml: prompts[0]" in str(raised.value)
