"""evalh: a declarative, YAML-driven evaluator for LLM outputs.

From Python (docs/python.md)::

    import evalh

    result = evalh.evaluate("evalh.yaml", max_concurrency=4)
    assert result.ok, result.stats()

Every public name is listed in ``__all__`` and loaded on first use, so ``import evalh`` (and
``evalh --help``) stays cheap: the run's machinery is imported only when a name is asked for.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the names as the type checker sees them; at run time __getattr__ imports them
    from evalh import errors
    from evalh.api import CheckFailed, Comparison, Options, RunResult, aevaluate, check, evaluate
    from evalh.common.environment import getenv
    from evalh.errors import ConfigError, EvalhError, ProviderError, ReportError
    from evalh.model import GradedAssertion, Status, Suite, TestResult

__all__ = [
    "CheckFailed",
    "Comparison",
    "ConfigError",
    "EvalhError",
    "GradedAssertion",
    "Options",
    "ProviderError",
    "ReportError",
    "RunResult",
    "Status",
    "Suite",
    "TestResult",
    "__version__",
    "aevaluate",
    "check",
    "errors",
    "evaluate",
    "getenv",
]

from evalh.common.lazy_names import lazy_names
from evalh.common.version import __version__

# public name -> the module that defines it
_HOMES = {
    "CheckFailed": "evalh.api",
    "Comparison": "evalh.api",
    "Options": "evalh.api",
    "RunResult": "evalh.api",
    "aevaluate": "evalh.api",
    "check": "evalh.api",
    "evaluate": "evalh.api",
    "getenv": "evalh.common.environment",  # the run's environment, for a function passed to evaluate
    "ConfigError": "evalh.errors",
    "EvalhError": "evalh.errors",
    "ProviderError": "evalh.errors",
    "ReportError": "evalh.errors",
    "GradedAssertion": "evalh.model",
    "Status": "evalh.model",
    "Suite": "evalh.model",
    "TestResult": "evalh.model",
}


_lazy = lazy_names(__name__, _HOMES, globals())


def __getattr__(name: str) -> Any:
    if name == "errors":
        return importlib.import_module("evalh.errors")
    return _lazy(name)


def __dir__() -> list[str]:
    return sorted(__all__)
