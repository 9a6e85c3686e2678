"""Nunjucks-compatible output and filters for evalh's template environment, and the size limits the
sandbox applies (a leaf: imports nothing of evalh).

Where Jinja2 and Nunjucks differ, promptfoo users expect Nunjucks: a value prints as JavaScript's
``String(value)`` does (a list as ``1,2,3``, an object as ``[object Object]``, ``true``, numbers as
JavaScript writes them; JSON is one filter away, ``| dump``), ``join`` and ``~`` join such strings,
``reverse`` gives a list, ``truncate`` has no leeway, ``urlencode`` is ``encodeURIComponent``;
``dump``/``json`` (``JSON.stringify``), ``nl2br`` and promptfoo's ``load`` are added.
"""

from __future__ import annotations

import json
import math
import re
import sys
from collections.abc import Iterator, Mapping
from typing import Any
from urllib.parse import quote

__all__ = [
    "FILTERS",
    "call_is_safe",
    "finalize",
    "for_pairs",
    "format_width_is_safe",
    "js_concat_string",
    "js_number",
    "js_string",
    "json_stringify",
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


# JavaScript writes a number's shortest digits in plain notation from 1e-6 up to 1e21, else with an exponent
_PLAIN_DIGITS_FROM = -6
_PLAIN_DIGITS_UP_TO = 21
_EXACT_INTEGERS = 2**53  # a JavaScript number holds every whole number below this exactly


def js_number(value: float) -> str:
    """A number as JavaScript's ``String(n)`` writes it: ``1`` for 1.0, ``0.00001``, ``1e-7``,
    ``1e+21``, ``NaN``, ``Infinity`` (Python writes ``1.0``, ``1e-05``, ``1e-07``, ``nan``, ``inf``).
    A whole number past 2**53 is rounded to the nearest double first, as JavaScript holds it."""
    if isinstance(value, int) and abs(value) < _EXACT_INTEGERS:
        return str(value)
    try:
        number = float(value)
    except OverflowError:
        return "Infinity" if value > 0 else "-Infinity"
    if math.isnan(number):
        return "NaN"
    if math.isinf(number):
        return "Infinity" if number > 0 else "-Infinity"
    if number == 0:
        return "0"  # -0 too
    digits, point = _shortest_digits(abs(number))
    sign = "-" if number < 0 else ""
    if len(digits) <= point <= _PLAIN_DIGITS_UP_TO:
        return sign + digits + "0" * (point - len(digits))
    if 0 < point <= _PLAIN_DIGITS_UP_TO:
        return f"{sign}{digits[:point]}.{digits[point:]}"
    if _PLAIN_DIGITS_FROM < point <= 0:
        return f"{sign}0.{'0' * -point}{digits}"
    mantissa = digits[0] + (f".{digits[1:]}" if len(digits) > 1 else "")
    return f"{sign}{mantissa}e{'+' if point > 0 else '-'}{abs(point - 1)}"


def _shortest_digits(number: float) -> tuple[str, int]:
    """The shortest digits that read back as ``number`` (> 0; Python's repr finds them, as JavaScript
    does) and where the decimal point goes: ``number == 0.DIGITS * 10**point``."""
    mantissa, _, exponent = repr(number).partition("e")
    whole, _, fraction = mantissa.partition(".")
    written = whole + fraction
    digits = written.lstrip("0")
    point = len(whole) + int(exponent or 0) - (len(written) - len(digits))
    return digits.rstrip("0") or "0", point


def js_string(value: Any) -> str:
    """What Nunjucks prints for a value, JavaScript's ``String(value)``: a list's items joined with
    ``,`` (nested lists flattened that way, null as nothing), an object ``[object Object]``, booleans
    ``true``/``false``, None nothing, numbers as :func:`js_number` writes them."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None or _is_undefined(value):
        return str(value or "")  # an Undefined notes itself for the render's warning
    if isinstance(value, int | float):
        return js_number(value)
    if isinstance(value, Mapping):
        return "[object Object]"
    if isinstance(value, list | tuple | Iterator):  # Jinja's select / map / batch give iterators
        return ",".join(js_string(item) for item in value)
    return str(value)


def js_concat_string(value: Any) -> str:
    """An operand of ``~`` as JavaScript's ``+`` on a string writes it: like :func:`js_string`, but
    null is ``null`` and an undefined variable ``undefined`` (``{{ }}`` prints both as nothing)."""
    if value is None:
        return "null"
    if _is_undefined(value):
        str(value)  # an Undefined notes itself for the render's warning
        return "undefined"
    return js_string(value)


def finalize(value: Any) -> Any:
    """Render a ``{{ value }}`` as Nunjucks does: :func:`js_string` (an Undefined as it is, for
    Jinja to print empty and note)."""
    if isinstance(value, str) or _is_undefined(value):
        return value
    return js_string(value)


def _is_undefined(value: Any) -> bool:
    """``value`` is Jinja's undefined. Only a render by the engine makes one, so Jinja is imported then;
    a value printed without it (a template of one variable) is never one, and Jinja stays unloaded."""
    jinja2 = sys.modules.get("jinja2")
    return jinja2 is not None and isinstance(value, jinja2.Undefined)


def for_pairs(value: Any) -> Any:
    """What ``{% for k, v in value %}`` walks in Nunjucks: a mapping's (key, value) items; anything
    else (a list of pairs) as it is."""
    if isinstance(value, Mapping):
        return list(value.items())
    return value


def json_stringify(value: Any, indent: int | str | None = None) -> str:
    """Nunjucks' ``dump`` filter: ``JSON.stringify(value, null, indent)``, so compact without an indent
    (``{"a":1}``, as promptfoo prompts and checks expect it), a whole float as a whole number (``1``)
    and NaN or infinity as ``null``."""
    separators = (",", ":") if indent is None else (",", ": ")
    return json.dumps(
        _json_numbers(value), ensure_ascii=False, indent=indent, separators=separators, default=_json_default
    )


def _json_numbers(value: Any) -> Any:
    """``value`` with its floats as ``JSON.stringify`` writes them: whole ones as ints, others as they are."""
    if isinstance(value, float):
        if not math.isfinite(value):
            return None
        return int(value) if value.is_integer() and abs(value) < 10**_PLAIN_DIGITS_UP_TO else value
    if isinstance(value, Mapping):
        return {key: _json_numbers(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_json_numbers(item) for item in value]
    return value


def _string(value: Any) -> str:
    """Nunjucks' ``string`` filter: ``String(value)``."""
    return js_string(value)


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
    import jinja2.filters
    from jinja2.exceptions import SecurityError

    if not format_width_is_safe(str(value), args or kwargs):
        raise SecurityError("the template's format string asks for a width too large to render")
    return str(jinja2.filters.do_format(value, *args, **kwargs))


def _limited_width(name: str) -> Any:
    def limited(value: Any, width: Any = 80 if name == "center" else 4, *args: Any, **kwargs: Any) -> Any:
        import jinja2.filters  # loaded already: only a template's render calls a filter
        from jinja2.exceptions import SecurityError

        if isinstance(width, int) and width > _MAX_WIDTH:
            raise SecurityError(f"{name}({width}) is too wide to render")
        return jinja2.filters.FILTERS[name](value, width, *args, **kwargs)

    return limited


FILTERS: dict[str, Any] = {
    "dump": json_stringify,
    "json": json_stringify,
    "string": _string,
    "load": _load,
    "truncate": _truncate,
    "reverse": _reverse,
    "urlencode": _urlencode,
    "nl2br": _nl2br,
    "format": _format,
    "center": _limited_width("center"),
    "indent": _limited_width("indent"),
}
