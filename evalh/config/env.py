"""``{{ env.NAME }}`` in a config: the ``env:`` map, and the text rendered at load time.

promptfoo renders ``env`` expressions everywhere at load. evalh renders each value once instead: a
string that is rendered later as a template (a prompt, a var, an assertion's value or metric, a rubric
prompt, an HTTP provider's body / queryParams / url, the http provider's headers) is left alone here
and sees ``env`` when it is rendered, so an environment value goes in as data (a PR title holding
``{{ 7*7 }}`` stays literal). Every other string (a provider's apiBaseUrl, another provider's
headers, a file:// path, a description) has its ``env`` expressions rendered now, and the result is
final text: nothing renders it again. Recorded model outputs are data and are not rendered at all.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

from evalh.config.files import LoadContext, is_file_ref
from evalh.config.locate import Document, JsonPath
from evalh.errors import ConfigError
from evalh.providers.registry import is_web_http
from evalh.templating import EnvVars, render_env, template_env, uses_env

__all__ = ["config_env", "render_config_env"]

_HTTP_TEMPLATES = frozenset({"body", "queryParams", "url"})  # rendered per call by providers/webhttp.py
_OUTPUTS = frozenset({"output", "providerOutput"})
_SCALARS = frozenset({int, float, bool, type(None)})


def config_env(document: Document, ctx: LoadContext) -> dict[str, str]:
    """The config's ``env:`` map, stringified, its own ``{{ env.X }}`` rendered from the environment."""
    raw = document.data.get("env")
    if not isinstance(raw, Mapping):
        return {}
    env: dict[str, str] = {}
    process = template_env()
    for key, value in raw.items():
        text = ("true" if value else "false") if isinstance(value, bool) else str(value)
        where = document.place(("env", key))
        try:
            env[str(key)] = render_env(text, process, where=where)
        except ConfigError as error:
            ctx.problems.add_exception(error)
            continue
        if "\x00" in env[str(key)] or "\x00" in str(key) or "=" in str(key):
            del env[str(key)]  # no environment variable can hold it: programs of the run could not start
            problem = "the value has a NUL character" if "=" not in str(key) else "the name has '='"
            advice = "no environment variable can hold it, so no program of the run could start; remove it"
            ctx.problems.add_exception(ConfigError(f"{problem}: {advice}", where=where))
    return env


def render_config_env(data: Any, env: EnvVars, document: Document, ctx: LoadContext) -> Any:
    """``data`` with ``{{ env.NAME }}`` rendered in every string that is not rendered later."""
    return _render(data, env, document, ctx, ())


def _render(value: Any, env: EnvVars, document: Document, ctx: LoadContext, path: JsonPath) -> Any:
    """``value`` rendered; a mapping or list in which nothing is rendered is returned as it is, not
    copied (most of a large config: the copy cost time and, while both were alive, memory)."""
    if isinstance(value, str):
        return _render_text(value, env, document, ctx, path)
    kind = type(value)
    if kind is dict or (kind is not list and isinstance(value, Mapping)):  # no ABC check for a dict
        changed: dict[Any, Any] | None = None
        for key, item in value.items():
            if path == () and key == "env":
                continue
            new = _render_item(item, env, document, ctx, path, key)
            if new is not item:
                changed = changed if changed is not None else dict(value)
                changed[key] = new
        return value if changed is None else changed
    if kind is list or isinstance(value, list):
        items: list[Any] | None = None
        for index, item in enumerate(value):
            if type(item) is dict and not _may_use_env(item):
                continue  # most of a large config: one of its 5,000 tests
            new = _render_item(item, env, document, ctx, path, index)
            if new is not item:
                items = items if items is not None else list(value)
                items[index] = new
        return value if items is None else items
    return value


def _render_item(
    item: Any, env: EnvVars, document: Document, ctx: LoadContext, path: JsonPath, key: Any
) -> Any:
    """``item`` (at ``key`` below ``path``) rendered; a string without ``env`` (most of them) is answered
    here, without its path or a call (a large config holds 100,000s)."""
    kind = type(item)
    if kind is str:
        return item if not uses_env(item) else _render_text(item, env, document, ctx, (*path, key))
    if kind in _SCALARS:
        return item
    return _render(item, env, document, ctx, (*path, key))


def _may_use_env(item: dict[Any, Any]) -> bool:
    """False when no string of ``item`` can hold an ``env`` expression: its JSON text holds every string
    of it (braces and letters are never escaped), so a string that uses_env makes the text use it too.
    One C call instead of a walk of its every value. True when the text could not be made (a key that
    is not a string, a type orjson refuses): then it is walked."""
    try:
        text = orjson.dumps(item)
    except orjson.JSONEncodeError:
        return True
    return uses_env(text.decode())


def _render_text(value: str, env: EnvVars, document: Document, ctx: LoadContext, path: JsonPath) -> str:
    if not uses_env(value) or rendered_later(path, value) or _http_header(document.data, path):
        return value  # most strings: no position needed (locating 100,000s of them took ~0.9 s)
    try:
        return render_env(value, env, where=document.place(path))
    except ConfigError as error:
        ctx.problems.add_exception(error)
        return value


def rendered_later(path: JsonPath, value: str) -> bool:
    """True for a string of the config that is rendered as a template later (or, a recorded output,
    never), so that load time must leave its ``env`` expressions alone. A file:// path is read, not
    rendered, so its ``env`` goes in now (except an assertion value's, rendered whole later)."""
    if any(key == "config" and path[i + 1] in _HTTP_TEMPLATES for i, key in enumerate(path[:-1])):
        return True
    if not path:
        return False
    if path[0] == "prompts":
        return path[-1] != "label" and not is_file_ref(value)
    if path[0] == "tests" and len(path) > 1:
        return _in_test(path[2:], value)
    if path[0] == "defaultTest":
        return _in_test(path[1:], value)
    return False


def _in_test(rest: JsonPath, value: str) -> bool:
    if not rest:
        return False
    if rest[0] in _OUTPUTS:
        return True
    if rest[0] == "vars":  # each top-level var value is rendered (file:// values are read instead)
        return len(rest) == 2 and not is_file_ref(value)
    if rest[:2] == ("options", "rubricPrompt"):
        return not (len(rest) == 2 and is_file_ref(value))
    if rest[0] == "assert" and len(rest) > 2:
        return _in_assertion(rest[2:], value)
    return False


def _in_assertion(rest: JsonPath, value: str) -> bool:
    key = rest[0]
    if key == "assert" and len(rest) > 2:  # an assert-set's children
        return _in_assertion(rest[2:], value)
    if key == "value":
        return len(rest) <= 2  # a string value, or each string of a list value
    if key == "rubricPrompt":
        return not (len(rest) == 1 and is_file_ref(value))
    return key == "metric"


def _http_header(data: Any, path: JsonPath) -> bool:
    """True for a header value of an ``http`` provider's ``config.headers``: the provider renders it
    for each call with the test's vars and ``env`` (as promptfoo does), so it must not be rendered now."""
    if len(path) < 4 or path[-3:-1] != ("config", "headers"):
        return False
    owner: Any = data
    for step in path[:-3]:
        try:
            owner = owner[step]
        except (KeyError, IndexError, TypeError):
            return False
    if isinstance(owner, Mapping) and isinstance(owner.get("id"), str):
        provider_id = owner["id"]
    else:  # promptfoo's one-key form, {<id>: {config: ...}}: the id is the key above
        provider_id = path[-4] if len(path) >= 4 and isinstance(path[-4], str) else ""
    return is_web_http(str(provider_id))
