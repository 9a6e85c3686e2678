"""Math expressions the config author wrote (``derivedMetrics`` values), read as promptfoo reads them
with mathjs: numbers, names, ``+ - * / %``, ``^`` for a power, parentheses, and the usual functions
(``abs``, ``min``, ``max``, ``sqrt``, ``log``, ``exp``, ``round``, ``floor``, ``ceil``, ``mean``,
``sum``, ``pow``).

They are evaluated by simpleeval (no attribute access, no calls other than these functions, bounded
powers), never by ``eval``: the text comes from the config but the names' values are scores.
"""

from __future__ import annotations

import ast
import functools
import math
from collections.abc import Mapping
from typing import Any

__all__ = ["ExpressionFailed", "evaluate", "expression_names", "expression_problem"]

_FUNCTIONS: dict[str, Any] = {
    "abs": abs,
    "min": min,
    "max": max,
    "sqrt": math.sqrt,
    "log": math.log,
    "log10": math.log10,
    "log2": math.log2,
    "exp": math.exp,
    "round": round,
    "floor": math.floor,
    "ceil": math.ceil,
    "pow": pow,
    "mean": lambda *values: sum(values) / len(values),
    "sum": lambda *values: sum(values),
}
_CONSTANTS = {"pi": math.pi, "e": math.e}


class ExpressionFailed(Exception):
    """The expression could not be evaluated (an unknown name, a domain error, ...)."""


def _python(text: str) -> str:
    """mathjs's ``^`` is a power (Python's ``**``, with the same precedence and right associativity)."""
    return text.replace("^", "**")


@functools.lru_cache(maxsize=256)
def _tree(text: str) -> ast.Expression:
    return ast.parse(_python(text).strip(), mode="eval")


def expression_problem(text: str) -> str | None:
    """Why ``text`` is not a math expression evalh can evaluate, or None."""
    try:
        tree = _tree(text)
    except SyntaxError as error:
        return f"not a math expression: {error.msg} (at column {error.offset or 0})"
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            if not isinstance(node.func, ast.Name) or node.func.id not in _FUNCTIONS:
                shown = node.func.id if isinstance(node.func, ast.Name) else ast.unparse(node.func)
                return f"unknown function {shown!r} (known: {', '.join(sorted(_FUNCTIONS))})"
        elif isinstance(node, ast.Attribute | ast.Subscript | ast.Lambda | ast.comprehension):
            return f"{ast.unparse(node)!r} is not allowed in a math expression"
        elif isinstance(node, ast.Constant) and not isinstance(node.value, int | float):
            return f"{node.value!r} is not a number"
    return None


def expression_names(text: str) -> frozenset[str]:
    """The variables ``text`` reads (not its functions or constants)."""
    tree = _tree(text)
    functions = {id(node.func) for node in ast.walk(tree) if isinstance(node, ast.Call)}
    return frozenset(
        node.id
        for node in ast.walk(tree)
        if isinstance(node, ast.Name) and id(node) not in functions and node.id not in _CONSTANTS
    )


def evaluate(text: str, names: Mapping[str, float]) -> float:
    """The value of ``text`` with ``names``; raises ExpressionFailed."""
    from simpleeval import InvalidExpression, SimpleEval

    evaluator = SimpleEval(functions=_FUNCTIONS, names={**_CONSTANTS, **names})
    try:
        value = evaluator.eval(_python(text).strip())
    except ZeroDivisionError:
        return math.inf  # mathjs: 1/0 is Infinity (null in a JSON report)
    except (InvalidExpression, ArithmeticError, ValueError, TypeError) as error:
        raise ExpressionFailed(str(error) or type(error).__name__) from None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ExpressionFailed(f"the result is not a number (got {type(value).__name__})")
    return float(value)
