"""How templates are charged to the render budget (``budget.py``): every filter is metered, every
loop's items come through ``budget.loop`` and every ``a ~ b`` through ``budget.built``, by rewriting the
parsed template before it is compiled."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import jinja2
import jinja2.nodes

from evalh.templating import budget

__all__ = ["METERING_FILTERS", "meter_loops_and_joins", "metered_filter"]

# filter names no template can write (a '-' is not part of a name), added by meter_loops_and_joins
_LOOP_FILTER = "budget-loop"
_SIZED_FILTER = "budget-sized"
METERING_FILTERS: dict[str, Any] = {_LOOP_FILTER: budget.loop, _SIZED_FILTER: budget.built}


@functools.lru_cache(maxsize=1024)
def metered_filter(function: Callable[..., Any]) -> Callable[..., Any]:
    """``function`` (a filter) charged to the render's budget: one step, and the value it builds.
    ``functools.wraps`` keeps Jinja's pass_context / pass_environment mark."""

    @functools.wraps(function)
    def metered(*args: Any, **kwargs: Any) -> Any:
        return budget.filtered(function(*args, **kwargs))

    return metered


def meter_loops_and_joins(
    ast: jinja2.nodes.Template, environment: jinja2.Environment, finalize: Callable[[Any], Any]
) -> None:
    """Every loop's items come through the budget's ``loop`` (a step each, and the template text its
    body writes charged to the output), and every ``a ~ b`` through ``built`` (doubling a string)."""
    for node in ast.find_all(jinja2.nodes.For):
        text = jinja2.nodes.Const(_body_text(node.body, environment, finalize))
        node.iter = jinja2.nodes.Filter(node.iter, _LOOP_FILTER, [text], [], None, None, lineno=node.lineno)
    for parent in list(ast.find_all(jinja2.nodes.Node)):  # listed first: the loop adds nodes
        for field in parent.fields:
            child = getattr(parent, field, None)
            if isinstance(child, jinja2.nodes.Concat):
                sized = jinja2.nodes.Filter(child, _SIZED_FILTER, [], [], None, None, lineno=child.lineno)
                setattr(parent, field, sized)


def _body_text(
    body: list[jinja2.nodes.Node], environment: jinja2.Environment, finalize: Callable[[Any], Any]
) -> int:
    """Characters of constant output in a loop's body (template text, and what Jinja computes while it
    compiles: ``{{ '' | center(9999) }}``), outside the loops inside it (which count their own)."""
    size = 0
    pending: list[jinja2.nodes.Node] = list(body)
    context = jinja2.nodes.EvalContext(environment)
    while pending:
        node = pending.pop()
        if isinstance(node, jinja2.nodes.Output):
            size += sum(_constant_size(child, context, finalize) for child in node.nodes)
        elif not isinstance(node, jinja2.nodes.For):
            pending.extend(node.iter_child_nodes())
    return size


def _constant_size(
    node: jinja2.nodes.Expr, context: jinja2.nodes.EvalContext, finalize: Callable[[Any], Any]
) -> int:
    """The length of what an output expression always writes; 0 for one computed as the template runs
    (its value is charged then)."""
    if isinstance(node, jinja2.nodes.TemplateData):
        return len(node.data)
    try:
        return len(str(finalize(node.as_const(context))))
    except Exception:  # jinja2.nodes.Impossible, or any error the render itself will report
        return 0
