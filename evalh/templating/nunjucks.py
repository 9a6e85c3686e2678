"""Nunjucks-compatible output and filters for evalh's template environment, and the size limits the
sandbox applies (a leaf: imports nothing of evalh).

Where Jinja2 and Nunjucks differ, promptfoo users expect Nunjucks: objects print as JSON, booleans as
``true``/``false``, ``reverse`` gives a list, ``truncate`` has no leeway, ``urlencode`` is
``encodeURIComponent``; ``dump``/``json``, ``nl2br`` and promptfoo's ``load`` are added.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from typing import Any
from urllib.parse import quote

import jinja2
import jinja2.filters
from jinja2.exceptions import SecurityError

__all__ = [
    "FILTERS",
    "call_is_safe",
    "finalize",
    "for_pairs",
    "format_width_is_safe",
    "power_is_safe",
    "repeat_is_safe",
]

# Limits on values a template may build (a prompt of a million characters is already far too long).
_MAX_SIZE = 1_000_000
_MAX_BITS = 100_000
_MAX_WIDTH = 100_000
_PERCENT_SPEC = re.compile(r"%(?:\([^)]*\))?[-+ #0]*(\d*)(?:\.(\d+))?")
_BRACE_SPEC = re.compile(r"\{[^{}]*?:([^{}]*)\}")
# a width or precision taken from an argument: '%*d', '%.*f', '{0:>{1}}'
_ARGUMENT_WIDTH = re.compile(r"%(?:\([^)]*\))?[-+ #0]*(?:\*|\d*\.\*)|\{[^{}]*:[^{}]*\{")
_PADDING_METHODS = frozenset({"ljust", "rjust", "center", "zfill", "expandtabs"})
_FORMAT_METHODS = frozenset({"format", "format_map"})
_URI_SAFE = "-_.!~*'()"  # what JavaScript's encodeURIComponent leaves as it is


def repeat_is_safe(left: Any, right: Any) -> bool:
    """``'a' * n`` / ``[x] * n`` stays under the size limit."""
    if isinstance(right, str | list | tuple):
        left, right = right, left
    if isinstance(left, str | list | tuple) and isinstance(right, int):
        return len(left) * right <= _MAX_SIZE
    return True


def power_is_safe(base: Any, exponent: Any) -> bool:
    """``a ** b`` on integers stays under the size limit (floats overflow with an error instead)."""
    if isinstance(base, int) and isinstance(exponent, int) and exponent > 0 and abs(base) > 1:
        return exponent * abs(base).bit_length() <= _MAX_BITS
    return True


def format_width_is_safe(text: str, arguments: Any = ()) -> bool:
    """No width or precision in a ``%`` or ``str.format`` spec above the limit, written
    (``'%999999999d'``) or taken from one of ``arguments`` (``'%*d' % (n, 1)``, ``'{:{}}'.format(x, n)``)."""
    figures = [group for match in _PERCENT_SPEC.finditer(text) for group in match.groups() if group]
    figures += [digits for match in _BRACE_SPEC.finditer(text) for digits in re.findall(r"\d+", match[1])]
    if any(int(figure) > _MAX_WIDTH for figure in figures):
        return False
    return not _ARGUMENT_WIDTH.search(text) or _widths_fit(arguments)


def call_is_safe(method: Any, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> bool:
    """A str method called from a template pads to no width above the limit: ``'a'.ljust(n)``,
    ``'a'.zfill(n)``, ``'{:{}}'.format(x, n)`` (the sandbox's format wrapper is unwrapped)."""
    target = getattr(method, "__wrapped__", method)
    text = getattr(target, "__self__", None)
    if not isinstance(text, str):
        return True
    name = getattr(target, "__name__", "")
    if name in _PADDING_METHODS:
        return _widths_fit((*args, *kwargs.values()))
    if name in _FORMAT_METHODS:
        return format_width_is_safe(text, (*args, *kwargs.values()))
    return True


def _widths_fit(arguments: Any) -> bool:
    """No whole number among ``arguments`` (a value, a tuple, a mapping, one level deep) above the limit."""
    values = arguments.values() if isinstance(arguments, Mapping) else arguments
    items = values if isinstance(values, tuple | list) else [values]
    flat = [v for item in items for v in (item.values() if isinstance(item, Mapping) else [item])]
    return not any(isinstance(v, int) and v > _MAX_WIDTH for v in flat)


def _json_default(value: Any) -> Any:
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, Iterator | set | frozenset):
        return list(value)
    return str(value)


def finalize(value: Any) -> Any:
    """Render values as Nunjucks does: objects as JSON, booleans as true/false, None as nothing,
    whole floats without ``.0`` (``{{ 10 / 2 }}`` is 5)."""
    if isinstance(value, str | jinja2.Undefined):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e16:
        return int(value)
    if isinstance(value, Iterator):  # what Jinja's select / map / batch return: a list in Nunjucks
        value = list(value)
    if isinstance(value, Mapping | list | tuple):
        return json.dumps(value, ensure_ascii=False, default=_json_default)
    return value


def for_pairs(value: Any) -> Any:
    """What ``{% for k, v in value %}`` walks in Nunjucks: a mapping's (key, value) items; anything
    else (a list of pairs) as it is."""
    if isinstance(value, Mapping):
        return list(value.items())
    return value


def _dump(value: Any, indent: int | str | None = None) -> str:
    """Nunjucks' ``dump`` filter: ``JSON.stringify(value, null, indent)``, so compact without an indent
    (``{"a":1}``, as promptfoo prompts and checks expect it)."""
    separators = (",", ":") if indent is None else (",", ": ")
    return json.dumps(value, ensure_ascii=False, indent=indent, separators=separators, default=_json_default)


def _load(text: Any) -> Any:
    """promptfoo's ``load`` filter: parse JSON text."""
    return json.loads(str(text))


def _truncate(value: Any, length: int = 255, killwords: bool = False, end: str = "...") -> str:
    """Nunjucks' truncate: no leeway, and the cut is at a space at or before ``length``."""
    text = str(value)
    if len(text) <= length:
        return text
    cut = length if killwords else text.rfind(" ", 0, length + 1)
    return text[: cut if cut >= 0 else length] + end


def _reverse(value: Any) -> Any:
    """Nunjucks reverses strings and lists (Jinja returns an iterator)."""
    return value[::-1] if isinstance(value, str) else list(value)[::-1]


def _urlencode(value: Any) -> str:
    """Nunjucks' urlencode: encodeURIComponent for a string, ``k=v&...`` for a mapping or pairs."""
    if isinstance(value, Mapping):
        value = list(value.items())
    if isinstance(value, list | tuple):
        return "&".join(f"{quote(str(k), _URI_SAFE)}={quote(str(v), _URI_SAFE)}" for k, v in value)
    return quote(str(value), _URI_SAFE)


def _nl2br(value: Any) -> str:
    return "" if value is None else re.sub(r"\r\n|\n", "<br />\n", str(value))


def _format(value: Any, *args: Any, **kwargs: Any) -> str:
    if not format_width_is_safe(str(value), args or kwargs):
        raise SecurityError("the template's format string asks for a width too large to render")
    return str(jinja2.filters.do_format(value, *args, **kwargs))


def _limited_width(name: str) -> Any:
    builtin = jinja2.filters.FILTERS[name]

    def limited(value: Any, width: Any = 80 if name == "center" else 4, *args: Any, **kwargs: Any) -> Any:
        if isinstance(width, int) and width > _MAX_WIDTH:
            raise SecurityError(f"{name}({width}) is too wide to render")
        return builtin(value, width, *args, **kwargs)

    return limited


FILTERS: dict[str, Any] = {
    "dump": _dump,
    "json": _dump,
    "load": _load,
    "truncate": _truncate,
    "reverse": _reverse,
    "urlencode": _urlencode,
    "nl2br": _nl2br,
    "format": _format,
    "center": _limited_width("center"),
    "indent": _limited_width("indent"),
}
