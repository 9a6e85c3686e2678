"""The budget of one render: bounded work, bounded output, a deadline (imports only nunjucks.py of evalh).

A template is code the config author wrote, and a CSV cell or a tests file holds templates too
(assertion values), so one cell could otherwise spin ``evalh validate`` for ever (nested loops, an
exponential macro) or take gigabytes (``replace``, ``center`` in a loop, ``map ... join``, doubling a
string). Each render gets:

* at most :data:`MAX_STEPS` steps: loop iterations, calls (a macro, ``loop(...)``, a method) and filters;
* a deadline of :data:`RENDER_DEADLINE_S` seconds, checked at every step;
* a size limit: no value built and no output longer than :data:`BASE_SIZE` characters plus twice the
  text of the render's variables (a prompt quoting a long document is fine), and the values built in
  all at most four times that. Operations that multiply a size in one step (``replace``, ``join``,
  ``indent``, ``sum``, ``expandtabs``, ``translate``) are checked before they run.

Going past any of them raises :class:`BudgetExceeded`, which the renderer turns into a located error.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator, Mapping
from contextvars import ContextVar, Token
from dataclasses import dataclass
from typing import Any

import jinja2
import jinja2.filters
from jinja2.exceptions import SecurityError

from evalh.templating.nunjucks import FILTERS as NUNJUCKS_FILTERS
from evalh.templating.nunjucks import js_string

__all__ = [
    "BASE_SIZE",
    "BUDGET_FILTERS",
    "MAX_STEPS",
    "RENDER_DEADLINE_S",
    "BudgetExceeded",
    "built",
    "call_fits",
    "end_budget",
    "filtered",
    "loop",
    "output",
    "start_budget",
    "step",
]

MAX_STEPS = 1_000_000  # a prompt looping over 10,000 items with a few filters each takes ~50,000
RENDER_DEADLINE_S = 10.0  # an ordinary render takes microseconds
BASE_SIZE = 10_000_000  # characters: far past any model's context window


class BudgetExceeded(SecurityError):
    """A render went past its budget (steps, time or size)."""


@dataclass
class _Budget:
    deadline: float
    steps: int
    limit: int  # the longest value or output, in characters
    output: int  # characters the output may still take
    built: int  # characters the values built may still total


_CURRENT: ContextVar[_Budget | None] = ContextVar("evalh_render_budget", default=None)


def start_budget(variables: Mapping[str, Any]) -> Token[_Budget | None]:
    """Renders from now on run on one budget, sized by the text of ``variables``, until
    :func:`end_budget` is given the token."""
    text = 0
    for value in variables.values():
        if isinstance(value, str):
            text += len(value)
    limit = BASE_SIZE + 2 * text
    return _CURRENT.set(_Budget(time.monotonic() + RENDER_DEADLINE_S, MAX_STEPS, limit, limit, 4 * limit))


def end_budget(token: Token[_Budget | None]) -> None:
    _CURRENT.reset(token)


def step() -> None:
    """One loop iteration, call or filter: past the step count or the deadline, BudgetExceeded."""
    budget = _CURRENT.get()
    if budget is not None:
        budget.steps -= 1
        if budget.steps < 0 or not budget.steps & _CLOCK_EVERY:
            _check(budget)


_CLOCK_EVERY = 63  # the deadline is read every 64 steps: a step costs ~0.1 us, reading the clock ~0.05 us
_SIZED = (str, list, tuple, dict, bytes)


def _check(budget: _Budget) -> None:
    """The slow path: which bound is passed, if any."""
    if budget.steps < 0:
        raise BudgetExceeded(f"it ran more than {MAX_STEPS:,} loop iterations, calls and filters")
    if budget.output < 0:
        raise BudgetExceeded(f"its output would be longer than {budget.limit:,} characters")
    if budget.built < 0:
        raise BudgetExceeded(f"the values it built total more than {4 * budget.limit:,} characters")
    if time.monotonic() > budget.deadline:
        raise BudgetExceeded(f"it ran longer than {RENDER_DEADLINE_S:g} s")


def expect(size: int) -> None:
    """A value about to be built with ``size`` characters (or items): BudgetExceeded past the limit
    (:data:`BASE_SIZE` outside a render: Jinja folds constant expressions while it compiles)."""
    budget = _CURRENT.get()
    limit = budget.limit if budget is not None else BASE_SIZE
    if size > limit:
        raise BudgetExceeded(f"it would build a value of {size:,} characters (the limit is {limit:,})")


def built(value: Any) -> Any:
    """``value``, just built by a filter, a call or an operator, charged to the budget."""
    if isinstance(value, _SIZED) and value:
        expect(len(value))
        budget = _CURRENT.get()
        if budget is not None:
            budget.built -= len(value)
            if budget.built < 0:
                _check(budget)
    return value


def filtered(value: Any) -> Any:
    """What a filter just returned: a step, and the value charged as :func:`built` does."""
    step()
    return built(value)


def output(value: Any) -> Any:
    """``value``, about to be written to the output, charged to the output's size."""
    if isinstance(value, str):
        budget = _CURRENT.get()
        if budget is not None:
            budget.output -= len(value)
            if budget.output < 0:
                _check(budget)
    return value


def loop(iterable: Iterable[Any], text_per_item: int = 0) -> Iterator[Any]:
    """A ``{% for %}`` loop's items, one step each; ``text_per_item`` is the template text the loop's
    body writes on each pass (charged to the output, as values are in :func:`output`)."""
    budget = _CURRENT.get()
    if budget is None:
        yield from iterable
        return
    for item in iterable:
        budget.steps -= 1
        budget.output -= text_per_item
        if budget.steps < 0 or budget.output < 0 or not budget.steps & _CLOCK_EVERY:
            _check(budget)
        yield item


# -- operations that multiply a size in one step: checked before they run ------------------------


def _length(value: Any) -> int:
    return len(value) if isinstance(value, _SIZED) else 0


def _replaced_length(text: str, old: Any, new: Any, count: Any = None) -> int:
    old, new = str(old), str(new)
    times = text.count(old)
    if isinstance(count, int) and count >= 0:
        times = min(times, count)
    return len(text) + times * (len(new) - len(old))


def _joined_length(items: list[Any], separator: Any) -> int:
    return sum(_length(item) for item in items) + len(str(separator)) * max(len(items) - 1, 0)


def call_fits(method: Any, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> tuple[Any, ...]:
    """The arguments to call a str method with (``join``'s iterable made a list), once the value it
    would build is known to fit: ``'a'.replace('', x)``, ``x.join(items)``, ``'\\t'.expandtabs(n)``,
    ``text.translate(table)``."""
    target = getattr(method, "__wrapped__", method)
    text = getattr(target, "__self__", None)
    if not isinstance(text, str) or not args:
        return args
    name = getattr(target, "__name__", "")
    if name == "replace" and len(args) >= 2:
        expect(_replaced_length(text, *args[:3]))
    elif name == "join":
        items = list(args[0])
        expect(_joined_length(items, text))
        return (items, *args[1:])
    elif name == "expandtabs" and isinstance(args[0], int):
        expect(len(text) + text.count("\t") * args[0])
    elif name == "translate" and isinstance(args[0], Mapping):
        longest = max((len(v) for v in args[0].values() if isinstance(v, str)), default=1)
        expect(len(text) * longest)
    return args


@jinja2.pass_eval_context
def _replace(eval_ctx: Any, value: Any, old: Any, new: Any, count: Any = None) -> Any:
    expect(_replaced_length(str(value), old, new, count))
    return jinja2.filters.do_replace(eval_ctx, value, old, new, count)


@jinja2.pass_eval_context
def _join(eval_ctx: Any, value: Iterable[Any], d: Any = "", attribute: Any = None) -> Any:
    """Nunjucks' join: each item as JavaScript writes it (``[1.0, true]`` joins to ``1,true``)."""
    items = list(value)
    if attribute is not None:
        items = list(map(jinja2.filters.make_attrgetter(eval_ctx.environment, attribute), items))
    texts = [js_string(item) for item in items]
    expect(_joined_length(texts, d))
    return jinja2.filters.do_join(eval_ctx, texts, d)


_MAX_INDENT = 100_000


def _indent(value: Any, width: Any = 4, first: bool = False, blank: bool = False) -> Any:
    text = str(value)
    prefix = width if isinstance(width, int) else len(str(width))
    if prefix <= _MAX_INDENT:  # a wider one is nunjucks' filter's to refuse, with its own message
        expect(len(text) + (text.count("\n") + 1) * prefix)
    return NUNJUCKS_FILTERS["indent"](text, width, first, blank)


@jinja2.pass_environment
def _sum(environment: Any, iterable: Iterable[Any], attribute: Any = None, start: Any = 0) -> Any:
    items = list(iterable)
    if attribute is None and not isinstance(start, int | float):
        expect(_length(start) + sum(_length(item) for item in items))
    return jinja2.filters.sync_do_sum(environment, items, attribute, start)


# Built-in filters replaced by bounded ones (the width limits of center / indent live in nunjucks.py).
BUDGET_FILTERS: dict[str, Any] = {"replace": _replace, "join": _join, "indent": _indent, "sum": _sum}
