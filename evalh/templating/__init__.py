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
reach Jinja, so loading 10,000 tests stays fast; nor does a template that is one variable of the render
(``{{answer}}``), printed here as the compiled template prints it: a suite of such templates never
imports Jinja. The sandbox, the compile cache and the mapping of Jinja's errors live in ``engine.py``
(imported by the first template that needs it), the filters and the size limits in ``nunjucks.py``;
each render's budget (steps, a deadline, the size of what it builds and writes) in ``budget.py``, and
how a template is charged to it in ``metering.py``.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from evalh.common.environment import RUN_ENVIRON, environ, getenv
from evalh.common.notices import warn
from evalh.errors import TemplateError, Where, then
from evalh.secrets import is_secret_key, register
from evalh.templating.nunjucks import finalize, json_stringify
from evalh.templating.scope import MISSING_NAMES, user_filters

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


def has_template(text: str) -> bool:
    """True if ``text`` contains a template marker (``{{``, ``{%`` or ``{#``)."""
    return "{" in text and ("{{" in text or "{%" in text or "{#" in text)  # most text has no brace


# A template that is one variable and nothing else ("{{answer}}", most prompts and expected values):
# read and printed without Jinja (printing it as the compiled template does needs no context, 20 us a
# row), so a suite of such templates never imports the engine.
_SOLE_VARIABLE = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")
# The names Jinja does not read as a variable there: its constants, ``not``, ``self`` (the template's
# blocks), ``env`` (always defined) and its globals (tests/templating/test_lazy_engine.py holds this set
# to what Jinja parses).
_CONSTANTS = ("true", "false", "none", "True", "False", "None")
_GLOBALS = ("range", "dict", "cycler", "joiner", "namespace")
_NOT_VARIABLES = frozenset((*_CONSTANTS, *_GLOBALS, "not", "self", "env"))


@functools.lru_cache(maxsize=1024)
def _sole_variable(template: str) -> str | None:
    """The name in a template that is only ``{{ name }}`` of a variable, else None."""
    match = _SOLE_VARIABLE.fullmatch(template)
    name = match.group(1) if match else None
    return None if name in _NOT_VARIABLES else name


def referenced_names(template: str, *, where: Where) -> frozenset[str]:
    """The variable names a template reads (for checking them against each test's vars).

    Raises TemplateError for a syntax error or a template the sandbox refuses."""
    if not has_template(template):
        return frozenset()
    sole = _sole_variable(template)
    if sole is not None:
        return frozenset((sole,))
    from evalh.templating import engine

    return engine.template_names(template, where)


def missing_env(template: str, env: EnvVars, *, where: Where) -> TemplateError | None:
    """The error for the first ``env.NAME`` the template needs that ``env`` lacks (found without
    rendering, so ``evalh validate`` reports it for prompts), or None."""
    referenced_names(template, where=where)  # a syntax or sandbox error first
    if not has_template(template) or "env" not in template or _sole_variable(template) is not None:
        return None
    from evalh.templating import engine

    return engine.missing_env_error(template, env, where)


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
    sole = _sole_variable(template)
    if sole is not None and sole in variables:
        try:
            return str(finalize(variables[sole]))  # what the compiled template prints: str(finalize(value))
        except (TypeError, ValueError, ArithmeticError, RecursionError):
            pass  # a value that cannot be printed (nested too deep): Jinja's path says where, as it did
    from evalh.templating import engine

    missing: list[str] = []
    token = MISSING_NAMES.set(missing)
    try:
        text = engine.render(template, variables, env if env is not None else _RUN_ENV, where)
    finally:
        MISSING_NAMES.reset(token)
    for message in dict.fromkeys(missing):
        warn(engine.undefined_error(message, template, where), where=warn_key or where, subject=message)
    return text


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
