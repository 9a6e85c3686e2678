"""The one place that renders templates: Jinja2 with Nunjucks-compatible output.

Prompts, var values, assertion values and metric names are templates (``{{ name }}``). Undefined
variables are errors (StrictUndefined), named with the template's location. Objects render as JSON
and booleans as ``true``/``false``, as Nunjucks does. Compiled templates are cached, and strings
without template markers never reach Jinja, so loading 10,000 tests stays fast.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

import jinja2
import jinja2.meta
import jinja2.nodes

from evalh.errors import TemplateError

__all__ = [
    "has_template",
    "referenced_names",
    "render_env",
    "render_prompt",
    "render_template",
    "uses_env",
]

_MARKERS = ("{{", "{%", "{#")
_ENV_EXPRESSION = re.compile(r"\{\{(\s*env\s*(?:\.|\[)[^{}]*)\}\}")
_UNDEFINED_NAME = re.compile(r"'([^']+)' is undefined")


def _finalize(value: Any) -> Any:
    """Render values as Nunjucks does: objects as JSON, booleans as true/false, None as nothing."""
    if isinstance(value, jinja2.Undefined):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return ""
    if isinstance(value, Mapping | list | tuple):
        return json.dumps(value, ensure_ascii=False, default=str)
    return value


def _dump(value: Any, indent: int | None = None) -> str:
    """Nunjucks' ``dump`` filter: JSON."""
    return json.dumps(value, ensure_ascii=False, indent=indent, default=str)


_ENV = jinja2.Environment(
    undefined=jinja2.StrictUndefined,
    autoescape=False,
    keep_trailing_newline=True,
    finalize=_finalize,
)
_ENV.filters["dump"] = _dump
_ENV.filters["json"] = _dump


def has_template(text: str) -> bool:
    """True if ``text`` contains a template marker (``{{``, ``{%`` or ``{#``)."""
    return any(marker in text for marker in _MARKERS)


@functools.lru_cache(maxsize=8192)
def _compile(template: str) -> tuple[jinja2.Template, frozenset[str]]:
    """Parse once: the compiled template and the variable names it reads from its context."""
    ast = _ENV.parse(template)
    names = frozenset(jinja2.meta.find_undeclared_variables(ast)) - frozenset(_ENV.globals)
    return _ENV.from_string(ast), names


def _syntax_error(error: jinja2.TemplateSyntaxError, where: str) -> TemplateError:
    line = f" (line {error.lineno} of the template)" if error.lineno and error.lineno > 1 else ""
    return TemplateError(
        f"template syntax error{line}: {error.message}",
        where=where,
        hint="Check the {{ }} and {% %} pairs; write {{ '{{' }} for a literal {{",
    )


def referenced_names(template: str, *, where: str) -> frozenset[str]:
    """The variable names a template reads (for checking them against each test's vars)."""
    if not has_template(template):
        return frozenset()
    try:
        return _compile(template)[1]
    except jinja2.TemplateSyntaxError as error:
        raise _syntax_error(error, where) from None


def render_template(template: str, variables: Mapping[str, Any], *, where: str) -> str:
    """Render one template string. Raises TemplateError naming ``where`` and the undefined variable."""
    if not has_template(template):
        return template
    try:
        compiled, _ = _compile(template)
        return compiled.render(variables)
    except jinja2.TemplateSyntaxError as error:
        raise _syntax_error(error, where) from None
    except jinja2.UndefinedError as error:
        text = str(error.message or error)
        match = _UNDEFINED_NAME.search(text)
        what = f"undefined variable {match.group(1)!r}" if match else text
        raise TemplateError(
            f"{what} in template {_excerpt(template)!r}",
            where=where,
            hint="Define it in the test's vars (or defaultTest.vars), or pass --var NAME=VALUE",
        ) from None
    except (jinja2.TemplateError, TypeError, ValueError, ArithmeticError) as error:
        raise TemplateError(f"template {_excerpt(template)!r} failed: {error}", where=where) from None


def render_prompt(
    raw: str | Sequence[Mapping[str, Any]], variables: Mapping[str, Any], *, where: str
) -> str | list[dict[str, Any]]:
    """Render a prompt: a string template, or each string inside a chat message list."""
    if isinstance(raw, str):
        return render_template(raw, variables, where=where)
    return [_render_deep(dict(message), variables, f"{where}[{i}]") for i, message in enumerate(raw)]


def _render_deep(value: Any, variables: Mapping[str, Any], where: str) -> Any:
    if isinstance(value, str):
        return render_template(value, variables, where=where)
    if isinstance(value, Mapping):
        return {key: _render_deep(item, variables, where) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_render_deep(item, variables, where) for item in value]
    return value


def uses_env(text: str) -> bool:
    """False when ``text`` surely has no ``{{ env.NAME }}`` expression (a cheap test, no regex)."""
    return "env" in text and "{{" in text


def render_env(text: str, env: Mapping[str, str], *, where: str) -> str:
    """Render only the ``{{ env.NAME }}`` expressions of ``text``; other templates are kept for later."""
    if not uses_env(text):
        return text

    def substitute(match: re.Match[str]) -> str:
        expression = "{{" + match.group(1) + "}}"
        try:
            return render_template(expression, {"env": env}, where=where)
        except TemplateError as error:
            name = re.search(r"env\s*(?:\.\s*(\w+)|\[\s*['\"]([^'\"]+))", match.group(1))
            variable = (name.group(1) or name.group(2)) if name else match.group(1).strip()
            raise TemplateError(
                f"environment variable {variable!r} is not set (used as {expression.strip()!r})",
                where=where,
                hint="Set it in the environment or in the config's env: map, or give a default: "
                "{{ env.NAME | default('value') }}",
            ) from error

    return _ENV_EXPRESSION.sub(substitute, text)


def _excerpt(template: str, limit: int = 60) -> str:
    flat = " ".join(template.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."
