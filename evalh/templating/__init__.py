"""The one template environment of evalh: sandboxed Jinja2 with Nunjucks-compatible output.

Prompts, var values, assertion values, metric names, rubric prompts and HTTP request templates are all
rendered here, by one :class:`jinja2.sandbox.ImmutableSandboxedEnvironment`: a template reads variables
and their fields, never Python internals (``cycler.__init__.__globals__`` is refused, and also found
when the template is parsed, so ``evalh validate`` reports it), cannot mutate what it is given, and
cannot build a gigabyte string with ``'a' * 10**9``.

Each value is rendered once. ``env`` is a variable of every render (the config's ``env:`` map over the
process environment), so ``{{ env.TITLE }}`` inserts the value as data: a value holding ``{{ 7*7 }}``
stays literal text. An undefined variable renders empty, as in Nunjucks, with a warning naming the
template's place and the variable (evalh.common.notices: shown once; an error under ``--strict``).
A value prints as Nunjucks prints it, JavaScript's way (a list ``1,2,3``, an object ``[object Object]``,
booleans ``true``/``false``; JSON is ``| dump``); a grading prompt sees objects as JSON
(:func:`grading_scope`). Compiled templates are cached, and strings without template markers never
reach Jinja, so loading 10,000 tests stays fast.
The filters and the size limits live in ``nunjucks.py``; each render's budget (steps, a deadline, the
size of what it builds and writes) in ``budget.py``, and how a template is charged to it in ``metering.py``.
"""

from __future__ import annotations

import contextlib
import functools
import json
import re
import types
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextvars import ContextVar
from typing import Any

import jinja2
import jinja2.meta
import jinja2.nodes
from jinja2.exceptions import SecurityError
from jinja2.sandbox import ImmutableSandboxedEnvironment

from evalh.common.environment import RUN_ENVIRON, environ, getenv
from evalh.common.notices import is_strict, warn
from evalh.errors import TemplateError, TemplateSyntaxProblem, Where, then
from evalh.secrets import is_secret_key, register
from evalh.templating import budget
from evalh.templating.budget import BUDGET_FILTERS, BudgetExceeded, end_budget, start_budget
from evalh.templating.metering import METERING_FILTERS, meter_loops_and_joins, metered_filter
from evalh.templating.nunjucks import (
    FILTERS,
    call_is_safe,
    finalize,
    for_pairs,
    format_width_is_safe,
    js_concat_string,
    json_stringify,
    power_is_safe,
    repeat_is_safe,
)

__all__ = [
    "EnvVars",
    "grading_scope",
    "has_template",
    "json_prompt",
    "missing_env",
    "prompt_texts",
    "referenced_names",
    "render_deep",
    "render_env",
    "render_prompt",
    "render_template",
    "template_env",
    "template_strings",
    "user_filters",
    "uses_env",
]

_ENV_EXPRESSION = re.compile(r"\{\{(\s*env\s*(?:\.|\[)[^{}]*)\}\}")
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


class EnvVars(Mapping[str, str]):
    """``env`` in templates: a read-only view of the environment (the config's ``env:`` map first).

    A secret-named variable (``APP_TOKEN``) that a template reads is registered for redaction: its
    value may land anywhere (a URL path, a body field named ``ctx``) and come back in a reply."""

    def __init__(self, values: Mapping[str, str]) -> None:
        self._values = values

    def __getitem__(self, name: str) -> str:
        value = self._values[name]
        if is_secret_key(name):
            register(value)
        return value

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)


def template_env(overrides: Mapping[str, Any] = {}) -> EnvVars:
    """``env`` for templates: ``overrides`` (the config's ``env:`` map) over the run's environment, as
    it is now (a snapshot: a plain dict is also much faster to read than a live view)."""
    return EnvVars({**environ(), **{key: str(value) for key, value in overrides.items()}})


_RUN_ENV = EnvVars(RUN_ENVIRON)  # a live view: the environment of whichever run renders


# The undefined names one render met, for its warnings (renders run in worker threads too).
_MISSING: ContextVar[list[str] | None] = ContextVar("evalh_template_undefined", default=None)


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
        missing = _MISSING.get()
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


# The config's nunjucksFilters for the renders of the suite being loaded or run (name -> callable).
_USER_FILTERS: ContextVar[Mapping[str, Callable[..., Any]]] = ContextVar(
    "evalh_user_filters", default=types.MappingProxyType({})
)


class _Filters(dict[str, Any]):
    """The environment's filters, with the current suite's ``nunjucksFilters`` first (they replace a
    built-in of the same name, as Nunjucks' ``addFilter`` does). Jinja looks a filter up when it
    compiles a template and again each time it renders, so a cached template uses the filters of
    the suite rendering it."""

    def __getitem__(self, name: str) -> Any:
        user = _USER_FILTERS.get()
        return metered_filter(user[name] if name in user else super().__getitem__(name))

    def get(self, name: str, default: Any = None) -> Any:
        user = _USER_FILTERS.get()
        found = user[name] if name in user else super().get(name, default)
        return found if found is default else metered_filter(found)

    def __contains__(self, name: object) -> bool:
        return name in _USER_FILTERS.get() or super().__contains__(name)


@contextlib.contextmanager
def user_filters(filters: Mapping[str, Callable[..., Any]]) -> Iterator[None]:
    """Renders inside see ``filters`` (a suite's ``nunjucksFilters``) as template filters."""
    token = _USER_FILTERS.set(filters)
    try:
        yield
    finally:
        _USER_FILTERS.reset(token)


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


def has_template(text: str) -> bool:
    """True if ``text`` contains a template marker (``{{``, ``{%`` or ``{#``)."""
    return "{" in text and ("{{" in text or "{%" in text or "{#" in text)  # most text has no brace


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


# A prompt that is one variable and nothing else ("{{answer}}"): rendered for every row, and printing
# that value as the compiled template does needs no Jinja context (20 us a row).
_SOLE_VARIABLE = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")


@functools.lru_cache(maxsize=1024)
def _sole_variable(template: str) -> str | None:
    """The name in a template that is only ``{{ name }}``, else None. The caller also checks that Jinja
    reads it as that variable (``{{ true }}`` is a constant)."""
    match = _SOLE_VARIABLE.fullmatch(template)
    return match.group(1) if match else None


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


def referenced_names(template: str, *, where: Where) -> frozenset[str]:
    """The variable names a template reads (for checking them against each test's vars).

    Raises TemplateError for a syntax error or a template the sandbox refuses."""
    if not has_template(template):
        return frozenset()
    try:
        return _compile(template)[1]
    except jinja2.TemplateSyntaxError as error:
        raise _syntax_error(error, where) from None
    except SecurityError as error:
        raise _refused(error, template, where) from None


def missing_env(template: str, env: EnvVars, *, where: Where) -> TemplateError | None:
    """The error for the first ``env.NAME`` the template needs that ``env`` lacks (found without
    rendering, so ``evalh validate`` reports it for prompts), or None."""
    referenced_names(template, where=where)  # a syntax or sandbox error first
    if not has_template(template) or "env" not in template:
        return None
    unset = sorted(name for name in _compile(template)[2] if name not in env)
    return _undefined(f"environment variable {unset[0]!r} is not set", template, where) if unset else None


def render_template(
    template: str,
    variables: Mapping[str, Any],
    *,
    where: Where,
    env: EnvVars | None = None,
    warn_key: str | None = None,
) -> str:
    """Render one template string once, with ``variables`` and ``env`` (default: the process
    environment). Raises TemplateError naming ``where`` and what went wrong. An undefined variable
    is a warning, given once per ``warn_key`` (default ``where``: a prompt rendered for 1,000 tests
    warns once) and variable."""
    if not has_template(template):
        return template
    missing: list[str] = []
    token = _MISSING.set(missing)
    try:
        compiled, names, _env_names = _compile(template)
        sole = _sole_variable(template)
        if sole is not None and sole in variables and names == {sole}:
            return str(finalize(variables[sole]))  # what the compiled template prints: str(finalize(value))
        budget_token = start_budget(variables)
        try:
            text = compiled.render({"env": env if env is not None else _RUN_ENV, **variables})
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
        raise _undefined(str(error.message or error), template, where) from None
    except (jinja2.TemplateError, TypeError, ValueError, ArithmeticError, RecursionError) as error:
        raise TemplateError(f"template {_excerpt(template)!r} failed: {error}", where=where) from None
    finally:
        _MISSING.reset(token)
    for message in dict.fromkeys(missing):
        warn(_undefined(message, template, where), where=warn_key or where, subject=message)
    return text


def _undefined(text: str, template: str, where: Where) -> TemplateError:
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


@functools.lru_cache(maxsize=256)
def json_prompt(text: str) -> Any:
    """The JSON object or list a string prompt is, or None. promptfoo renders each string inside such
    a prompt and sends the JSON indented by two spaces, so a var's quotes or newlines cannot break it
    (its JSON auto-escape). The value is shared: never modify it."""
    if not text.lstrip().startswith(("{", "[")):
        return None
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict | list) else None


def prompt_texts(raw: str | Sequence[Mapping[str, Any]]) -> list[str]:
    """The templates of a prompt: the string, each string of the JSON it is, or of its messages."""
    if isinstance(raw, str):
        data = json_prompt(raw)
        return [raw] if data is None else template_strings(data)
    return template_strings(list(raw))


def render_prompt(
    raw: str | Sequence[Mapping[str, Any]],
    variables: Mapping[str, Any],
    *,
    where: Where,
    env: EnvVars | None = None,
    warn_key: str | None = None,
) -> str | list[dict[str, Any]]:
    """Render a prompt: a string template (each string inside it when it is JSON, sent as indented
    JSON as promptfoo does), or each string inside a chat message list."""
    if isinstance(raw, str):
        data = json_prompt(raw)
        if data is not None:
            rendered = _render_deep(data, variables, where, env, warn_key)
            return json.dumps(rendered, ensure_ascii=False, indent=2)
        return render_template(raw, variables, where=where, env=env, warn_key=warn_key)
    return [
        _render_deep(dict(message), variables, then(where, f"[{i}]"), env, warn_key)
        for i, message in enumerate(raw)
    ]


def render_deep(value: Any, variables: Mapping[str, Any], *, where: Where) -> Any:
    """Every string inside ``value`` (nested mappings and lists too) rendered once with ``variables``:
    a provider's templated settings (its tools), as promptfoo's ``renderVarsInObject``."""
    return _render_deep(value, variables, where, None, None)


def _render_deep(
    value: Any, variables: Mapping[str, Any], where: Where, env: EnvVars | None, warn_key: str | None
) -> Any:
    if isinstance(value, str):
        return render_template(value, variables, where=where, env=env, warn_key=warn_key)
    if isinstance(value, Mapping):
        return {key: _render_deep(item, variables, where, env, warn_key) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_render_deep(item, variables, where, env, warn_key) for item in value]
    return value


def grading_scope(variables: Mapping[str, Any]) -> dict[str, Any]:
    """The variables of a grading prompt (a rubricPrompt) as promptfoo gives them to Nunjucks: an object
    as its JSON text, and each object in a list too, so the grader reads the data (``{{ item }}`` is
    ``{"a":1}`` there, where a prompt shows ``[object Object]``); the same inside evalh's ``vars``.
    ``PROMPTFOO_DISABLE_OBJECT_STRINGIFY=true`` keeps the objects, rendered as in prompts."""
    if getenv("PROMPTFOO_DISABLE_OBJECT_STRINGIFY", "").strip().lower() in ("1", "true", "yes", "on"):
        return dict(variables)
    scope = {name: _grading_value(value) for name, value in variables.items()}
    if isinstance(variables.get("vars"), Mapping):
        scope["vars"] = {name: _grading_value(value) for name, value in variables["vars"].items()}
    return scope


def _grading_value(value: Any) -> Any:
    if isinstance(value, Mapping):
        return json_stringify(value)
    if isinstance(value, list | tuple):
        return [json_stringify(item) if isinstance(item, Mapping | list | tuple) else item for item in value]
    return value


def template_strings(value: Any) -> list[str]:
    """Every string inside ``value`` (a chat prompt, an HTTP body...): what gets rendered in it."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, Mapping):
        return [text for item in value.values() for text in template_strings(item)]
    if isinstance(value, list | tuple):
        return [text for item in value for text in template_strings(item)]
    return []


def uses_env(text: str) -> bool:
    """False when ``text`` surely has no ``{{ env.NAME }}`` expression (a cheap test, no regex)."""
    return "env" in text and "{{" in text


def render_env(text: str, env: EnvVars, *, where: Where) -> str:
    """Text that is never rendered again (a provider's config, a file path) with each of its
    ``{{ env.NAME }}`` expressions rendered once: the values go in as data, other text stays as it is."""
    if not uses_env(text):
        return text
    return _ENV_EXPRESSION.sub(
        lambda match: render_template("{{" + match.group(1) + "}}", {}, where=where, env=env), text
    )


def _excerpt(template: str, limit: int = 60) -> str:
    flat = " ".join(template.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."
