"""The Jinja2 side of evalh's templates: the sandbox, its Nunjucks filters and undefined, the compiled
templates' cache, and how a failed parse or render becomes a located TemplateError.

Imported on first need by :mod:`evalh.templating` (whose docstring says what templates can do): a
template that is only ``{{ name }}`` of a given variable is printed there without Jinja, so a run or a
validate whose templates are all like that never imports Jinja (about 0.05 s of start-up).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator, Mapping
from typing import Any

import jinja2
import jinja2.meta
import jinja2.nodes
from jinja2.exceptions import SecurityError
from jinja2.sandbox import ImmutableSandboxedEnvironment

from evalh.common.notices import is_strict
from evalh.errors import TemplateError, TemplateSyntaxProblem, Where
from evalh.templating import EnvVars, budget
from evalh.templating.budget import BUDGET_FILTERS, BudgetExceeded, end_budget, start_budget
from evalh.templating.metering import METERING_FILTERS, meter_loops_and_joins, metered_filter
from evalh.templating.nunjucks import (
    FILTERS,
    call_is_safe,
    finalize,
    for_pairs,
    format_width_is_safe,
    js_concat_string,
    power_is_safe,
    repeat_is_safe,
)
from evalh.templating.scope import MISSING_NAMES, USER_FILTERS

__all__ = ["compiled", "missing_env_error", "render", "template_names", "undefined_error"]

_UNDEFINED_NAME = re.compile(r"'([^']+)' is undefined")
_ENV_NOT_SET = re.compile(r"environment variable '([^']+)' is not set")
_BUDGET_HINT = (
    f"A render may take {budget.MAX_STEPS:,} loop iterations, calls and filters, "
    f"{budget.RENDER_DEADLINE_S:g} s, and write about {budget.BASE_SIZE:,} characters (plus twice its "
    "variables' text): simplify the template, or compute large or repeated values in code (a "
    "transformVars, a python prompt function)"
)
_SANDBOX_HINT = (
    "Templates are sandboxed: they read variables and their fields ({{ vars.x }}, {{ env.NAME }}), "
    "never Python internals, and cannot build huge values"
)


class _Undefined(jinja2.ChainableUndefined):
    """Nunjucks' undefined: printed or looped over it is empty (``{{ a.b }}`` too), and the render
    notes it for a located warning; under strict mode it is the error it used to be. ``default``
    and ``is defined`` see it without a warning. A missing ``env.NAME`` is named as an unset
    environment variable."""

    __slots__ = ()

    @property
    def _undefined_message(self) -> str:
        if isinstance(self._undefined_obj, EnvVars) and self._undefined_name is not None:
            return f"environment variable {self._undefined_name!r} is not set"
        return str(super()._undefined_message)

    def _note(self) -> None:
        if is_strict():
            self._fail_with_undefined_error()
        missing = MISSING_NAMES.get()
        if missing is not None:
            missing.append(self._undefined_message)

    def __str__(self) -> str:
        self._note()
        return ""

    def __iter__(self) -> Iterator[Any]:
        self._note()
        return iter(())


class _Sandbox(ImmutableSandboxedEnvironment):
    """The sandbox, plus limits on the operators that can build huge values cheaply."""

    intercepted_binops = frozenset({"*", "**", "%", "+"})

    def call_binop(self, context: jinja2.runtime.Context, operator: str, left: Any, right: Any) -> Any:
        if operator == "*" and not repeat_is_safe(left, right):
            raise SecurityError("the template would build a value too large to render")
        if operator == "**" and not power_is_safe(left, right):
            raise SecurityError("the template would compute a number too large to render")
        if operator == "%" and isinstance(left, str) and not format_width_is_safe(left, right):
            raise SecurityError("the template's format string asks for a width too large to render")
        return budget.built(super().call_binop(context, operator, left, right))  # '+' doubles in a loop

    def getattr(self, obj: Any, attribute: str) -> Any:
        # Nunjucks reads JavaScript's properties: a text's or a list's length, as promptfoo's own
        # multi-turn example writes it ({{ completion.input[completion.input.length - 1].content }})
        if attribute == "length" and isinstance(obj, str | list | tuple):
            return len(obj)
        return super().getattr(obj, attribute)

    def unsafe_undefined(self, obj: Any, attribute: str) -> jinja2.Undefined:
        # Jinja returns an Undefined here, which a later step reports as a confusing "has no
        # attribute"; refusing at once names what the template tried to read.
        if attribute.startswith("_"):
            raise SecurityError(f"the template reads {attribute!r}, an internal attribute")
        raise SecurityError(
            f"the template uses {attribute!r} of a {type(obj).__name__}, which could change it"
        )

    def call(__self, __context: jinja2.runtime.Context, __obj: Any, *args: Any, **kwargs: Any) -> Any:
        # a width can also come from an argument ('a'.ljust(n), '%*d' % (n, 1), '{:{}}'.format(x, n))
        if not call_is_safe(__obj, args, kwargs):
            raise SecurityError("the template pads a text to a width too large to render")
        budget.step()  # macros and loop(...) recurse through here
        args = budget.call_fits(__obj, args, kwargs)
        return budget.built(super().call(__context, __obj, *args, **kwargs))

    def wrap_str_format(self, value: Any) -> Any:
        wrapped = super().wrap_str_format(value)
        if wrapped is not None and not format_width_is_safe(value.__self__):
            raise SecurityError("the template's format string asks for a width too large to render")
        return wrapped


class _Filters(dict[str, Any]):
    """The environment's filters, with the current suite's ``nunjucksFilters`` first (they replace a
    built-in of the same name, as Nunjucks' ``addFilter`` does). Jinja looks a filter up when it
    compiles a template and again each time it renders, so a cached template uses the filters of
    the suite rendering it."""

    def __getitem__(self, name: str) -> Any:
        user = USER_FILTERS.get()
        return metered_filter(user[name] if name in user else super().__getitem__(name))

    def get(self, name: str, default: Any = None) -> Any:
        user = USER_FILTERS.get()
        found = user[name] if name in user else super().get(name, default)
        return found if found is default else metered_filter(found)

    def __contains__(self, name: object) -> bool:
        return name in USER_FILTERS.get() or super().__contains__(name)


_ENV = _Sandbox(
    undefined=_Undefined,
    autoescape=False,
    keep_trailing_newline=True,
    finalize=lambda value: budget.output(finalize(value)),  # each {{ }} charged to the output's size
)
_ENV.filters = _Filters(_ENV.filters)
_ENV.filters.update(FILTERS)
_ENV.filters.update(BUDGET_FILTERS)
# a filter name no template can write (a '-' is not part of a name): added by the parse steps below
_PAIRS_FILTER = "for-pairs"
_ENV.filters[_PAIRS_FILTER] = for_pairs
_STRING_FILTER = "js-string"
_ENV.filters[_STRING_FILTER] = js_concat_string
_ENV.filters.update(METERING_FILTERS)
del _ENV.globals["lipsum"]  # not in Nunjucks, and lipsum(n=10**9) is a cheap way to exhaust memory


@functools.lru_cache(maxsize=8192)
def _compile(template: str) -> tuple[jinja2.Template, frozenset[str], frozenset[str]]:
    """Parse once: the compiled template, the variable names it reads from its context, and the
    environment variables it needs (``env.NAME`` without a default).

    ``env`` is always defined, so it is not among the names. Raises SecurityError for a template that
    reads an internal attribute (found now, so validation reports it without rendering anything)."""
    ast = _ENV.parse(template)
    _refuse_internal_attributes(ast)
    _pair_loops_over_items(ast)
    _concatenate_js_strings(ast)
    meter_loops_and_joins(ast, _ENV, finalize)
    names = frozenset(jinja2.meta.find_undeclared_variables(ast)) - frozenset(_ENV.globals) - {"env"}
    return _ENV.from_string(ast), names, _required_env(ast)


def _required_env(ast: jinja2.nodes.Template) -> frozenset[str]:
    """``env.NAME`` / ``env['NAME']`` not guarded by ``default`` or ``is defined`` (nor a method call)."""
    guarded = {id(node.node) for node in ast.find_all(jinja2.nodes.Call)}
    guarded.update(
        id(node.node) for node in ast.find_all(jinja2.nodes.Filter) if node.name in ("default", "d")
    )
    guarded.update(
        id(node.node) for node in ast.find_all(jinja2.nodes.Test) if node.name in ("defined", "undefined")
    )
    required: set[str] = set()
    for node in ast.find_all((jinja2.nodes.Getattr, jinja2.nodes.Getitem)):
        target = getattr(node, "node", None)
        if id(node) in guarded or not isinstance(target, jinja2.nodes.Name) or target.name != "env":
            continue
        if isinstance(node, jinja2.nodes.Getattr):
            required.add(node.attr)
        elif isinstance(node, jinja2.nodes.Getitem) and isinstance(node.arg, jinja2.nodes.Const):
            required.add(str(node.arg.value))
    return frozenset(required)


def _pair_loops_over_items(ast: jinja2.nodes.Template) -> None:
    """Nunjucks' ``{% for k, v in obj %}`` walks a mapping's items, where Jinja would unpack each
    key: every loop with several targets iterates through the ``for-pairs`` filter (a name no
    template can write), which gives a mapping's items and leaves a list of pairs as it is."""
    for loop in ast.find_all(jinja2.nodes.For):
        if isinstance(loop.target, jinja2.nodes.Tuple):
            loop.iter = jinja2.nodes.Filter(loop.iter, _PAIRS_FILTER, [], [], None, None, lineno=loop.lineno)


def _concatenate_js_strings(ast: jinja2.nodes.Template) -> None:
    """Nunjucks' ``a ~ b`` joins the values as JavaScript writes them (``'n=' ~ [1, 2]`` is ``n=1,2``,
    ``'a' ~ none`` is ``anull``), where Jinja would use Python's ``str``: every operand goes through
    the ``js-string`` filter."""
    for concat in ast.find_all(jinja2.nodes.Concat):
        concat.nodes = [
            jinja2.nodes.Filter(node, _STRING_FILTER, [], [], None, None, lineno=node.lineno)
            for node in concat.nodes
        ]


def _refuse_internal_attributes(ast: jinja2.nodes.Template) -> None:
    for node in ast.find_all((jinja2.nodes.Getattr, jinja2.nodes.Getitem, jinja2.nodes.Filter)):
        if isinstance(node, jinja2.nodes.Getattr):
            name: Any = node.attr
        elif isinstance(node, jinja2.nodes.Getitem):
            name = node.arg.value if isinstance(node.arg, jinja2.nodes.Const) else None
        elif isinstance(node, jinja2.nodes.Filter):  # x | attr('__class__')
            first = node.args[0] if node.name == "attr" and node.args else None
            name = first.value if isinstance(first, jinja2.nodes.Const) else None
        if isinstance(name, str) and name.startswith("_"):
            raise SecurityError(f"the template reads {name!r}, an internal attribute")


def _syntax_error(error: jinja2.TemplateSyntaxError, where: Where) -> TemplateError:
    line = f" (line {error.lineno} of the template)" if error.lineno and error.lineno > 1 else ""
    return TemplateSyntaxProblem(
        f"template syntax error{line}: {error.message}",
        where=where,
        hint="Check the {{ }} and {% %} pairs; write {{ '{{' }} for a literal {{",
    )


def _refused(error: SecurityError, template: str, where: Where) -> TemplateError:
    return TemplateError(
        f"template {_excerpt(template)!r} was refused: {error}", where=where, hint=_SANDBOX_HINT
    )


def compiled(template: str) -> tuple[jinja2.Template, frozenset[str], frozenset[str]]:
    """:func:`_compile`'s cached result (raises Jinja's errors as they are)."""
    return _compile(template)


def template_names(template: str, where: Where) -> frozenset[str]:
    """The variable names ``template`` reads; a syntax error or a refused template as a TemplateError."""
    try:
        return _compile(template)[1]
    except jinja2.TemplateSyntaxError as error:
        raise _syntax_error(error, where) from None
    except SecurityError as error:
        raise _refused(error, template, where) from None


def missing_env_error(template: str, env: Mapping[str, str], where: Where) -> TemplateError | None:
    """The error for the first ``env.NAME`` the (already parsed) template needs that ``env`` lacks."""
    unset = sorted(name for name in _compile(template)[2] if name not in env)
    return (
        undefined_error(f"environment variable {unset[0]!r} is not set", template, where) if unset else None
    )


def render(template: str, variables: Mapping[str, Any], env: EnvVars, where: Where) -> str:
    """Render ``template`` with ``variables`` and ``env`` within a render budget (sized by the variables);
    every way it can fail as a TemplateError naming ``where``."""
    try:
        template_object = _compile(template)[0]
        budget_token = start_budget(variables)
        try:
            return template_object.render({"env": env, **variables})
        finally:
            end_budget(budget_token)
    except jinja2.TemplateSyntaxError as error:
        raise _syntax_error(error, where) from None
    except BudgetExceeded as error:
        raise TemplateError(
            f"template {_excerpt(template)!r} was stopped: {error}", where=where, hint=_BUDGET_HINT
        ) from None
    except SecurityError as error:
        raise _refused(error, template, where) from None
    except jinja2.UndefinedError as error:
        raise undefined_error(str(error.message or error), template, where) from None
    except (jinja2.TemplateError, TypeError, ValueError, ArithmeticError, RecursionError) as error:
        raise TemplateError(f"template {_excerpt(template)!r} failed: {error}", where=where) from None


def undefined_error(text: str, template: str, where: Where) -> TemplateError:
    env_match = _ENV_NOT_SET.search(text)
    if env_match:
        return TemplateError(
            f"environment variable {env_match.group(1)!r} is not set (used in {_excerpt(template)!r})"
            + ("" if is_strict() else ", rendered empty"),
            where=where,
            hint="Set it in the environment or in the config's env: map, or give a default: "
            "{{ env.NAME | default('value') }}",
        )
    match = _UNDEFINED_NAME.search(text)
    what = f"undefined variable {match.group(1)!r}" if match else text
    empty = "" if is_strict() else " (rendered empty)"
    return TemplateError(
        f"{what} in template {_excerpt(template)!r}{empty}",
        where=where,
        hint="Define it in the test's vars (or defaultTest.vars), or pass --var NAME=VALUE",
    )


def _excerpt(template: str, limit: int = 60) -> str:
    flat = " ".join(template.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."
