"""Python callables passed to ``evalh.evaluate`` in a mapping, where YAML takes code: a provider, a
``python`` assertion, a transform.

A mapping cannot hold a function past JSON Schema, the reports or the run store, so :func:`take_callables`
replaces each one by a name before the mapping is loaded: a provider's id becomes the callable's
qualified name (``my_provider``; the report's provider id), a code value becomes ``callable:<name>``
(``callable:my_check``), ``#2``... telling apart two callables of one name. Nothing else of the
callable (never its ``repr``, which for a closure may show what it holds) reaches a report.

During that run only (:func:`callables_active`, a context variable: another run, even one going on
at the same time in another thread, cannot reach them), those names resolve to the callables: the provider
registry builds a provider for the id, the ``python`` assertion and the transforms call the function
for the value. The caller's code is trusted (it runs in the caller's process already), so it runs
in-process, not in a worker: an ``async def`` is awaited on the run's loop, a plain function runs on
a thread of the pool :func:`_threads` so it cannot stall the loop. A timeout or an exception is raised as
:class:`CallFailed`, which each caller turns into an ERROR row as it does for code in files; a plain
function that times out keeps running in its thread (Python cannot stop a thread), its result unused.
"""

from __future__ import annotations

import contextvars
import functools
import inspect
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from evalh.common.limits import MAX_CONCURRENCY

if TYPE_CHECKING:
    import concurrent.futures
from evalh.errors import ConfigError

__all__ = [
    "CODE_PREFIX",
    "CallFailed",
    "call_function",
    "callable_name",
    "callables_active",
    "lookup",
    "take_callables",
]

CODE_PREFIX = "callable:"


# As many threads as a run may call at once (-j, up to MAX_CONCURRENCY; the pool starts them only as
# calls need them): a sync provider function waiting on the network must not cap a -j 64 run at 16.
@functools.cache
def _threads() -> concurrent.futures.ThreadPoolExecutor:
    import concurrent.futures  # made on the first call (a validate never calls)

    pool = concurrent.futures.ThreadPoolExecutor
    return pool(max_workers=MAX_CONCURRENCY, thread_name_prefix="evalh-callable")


_NONE: Mapping[str, Callable[..., Any]] = MappingProxyType({})
_ACTIVE: ContextVar[Mapping[str, Callable[..., Any]]] = ContextVar("evalh_callables", default=_NONE)
_TRANSFORM_KEYS = ("transform", "postprocess", "transformVars")


class CallFailed(Exception):
    """The callable raised or timed out; the message names it and says how."""


def callable_name(function: Callable[..., Any]) -> str:
    """The name reports show: the qualified name (``Grader.check``, ``make.<locals>.f``)."""
    name = getattr(function, "__qualname__", None) or type(function).__qualname__
    return str(name)


def lookup(name: Any) -> Callable[..., Any] | None:
    """The callable a name stands for in a run that is on, or None."""
    if not isinstance(name, str):
        return None
    return _ACTIVE.get().get(name)


@contextmanager
def callables_active(table: Mapping[str, Callable[..., Any]]) -> Iterator[None]:
    """The names of ``table`` resolve in this context (and the tasks and threads it starts for the
    run, which copy it) until the block ends."""
    token = _ACTIVE.set({**_ACTIVE.get(), **table})
    try:
        yield
    finally:
        _ACTIVE.reset(token)


def _accepted(function: Callable[..., Any], args: Sequence[Any]) -> tuple[Any, ...]:
    """As many leading ``args`` as the function takes (``fn(output)`` or ``fn(output, context)``), as
    promptfoo's JavaScript calls do."""
    try:
        parameters = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):
        return tuple(args)
    kinds = [p.kind for p in parameters]
    if inspect.Parameter.VAR_POSITIONAL in kinds:
        return tuple(args)
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return tuple(args[: sum(1 for kind in kinds if kind in positional)])


async def call_function(name: str, args: Sequence[Any], *, timeout_s: float) -> Any:
    """Call the callable ``name`` stands for with ``args`` (as many as it takes); awaits what an
    async function returns. Raises CallFailed naming it when it raises or takes over ``timeout_s``."""
    function = lookup(name)
    shown = name.removeprefix(CODE_PREFIX)
    if function is None:
        raise CallFailed(f"{shown}: no Python callable of this name in this run (passed to evalh.evaluate)")
    arguments = _accepted(function, args)
    import asyncio  # imported by the run that awaits this; a validate, which only looks names up, never

    try:
        async with asyncio.timeout(timeout_s):
            if inspect.iscoroutinefunction(function):
                result = await function(*arguments)
            else:
                loop = asyncio.get_running_loop()
                # the run's context (environment, secrets, notices) goes along: an executor does not carry it
                run = contextvars.copy_context().run
                result = await loop.run_in_executor(_threads(), lambda: run(function, *arguments))
            if inspect.isawaitable(result):
                result = await result
    except TimeoutError:
        raise CallFailed(f"{shown} took longer than {timeout_s:g} s and was abandoned") from None
    except Exception as error:  # the user's code: any exception becomes an ERROR row
        raise CallFailed(f"{shown} raised {type(error).__name__}: {error}") from error
    return result


# --------------------------------------------------------------------------- taking them out


class _Taker:
    """Walks a mapping config, replacing each callable by its name and collecting the table."""

    def __init__(self, reserved: Callable[[str], bool]) -> None:
        self.table: dict[str, Callable[..., Any]] = {}
        self.reserved = reserved

    def name(self, function: Callable[..., Any], prefix: str = "") -> str:
        base = prefix + callable_name(function)
        name, count = base, 1
        while self.table.get(name, function) is not function or self.reserved(name):
            count += 1
            name = f"{base} #{count}"
        self.table[name] = function
        return name

    def provider(self, item: Any, where: str) -> Any:
        if callable(item):
            return self.name(item)
        if isinstance(item, Mapping):
            item = dict(item)
            if callable(item.get("id")):
                item["id"] = self.name(item["id"])
            if callable(item.get("transform")):
                item["transform"] = self.name(item["transform"], CODE_PREFIX)
        return item

    def assertion(self, item: Any, where: str) -> Any:
        if callable(item):
            return {"type": "python", "value": self.name(item, CODE_PREFIX)}
        if not isinstance(item, Mapping):
            return item
        item = dict(item)
        if callable(item.get("value")):
            if item.get("type") not in ("python", "not-python"):
                raise ConfigError(
                    f"a Python callable is the value of a {item.get('type')!r} assertion",
                    where=f"{where}.value",
                    hint="Only a python assertion takes a callable: {'type': 'python', 'value': my_check}",
                )
            item["value"] = self.name(item["value"], CODE_PREFIX)
        for key in ("transform", "contextTransform"):
            if callable(item.get(key)):
                item[key] = self.name(item[key], CODE_PREFIX)
        if isinstance(item.get("assert"), list):  # assert-set
            item["assert"] = self.assertions(item["assert"], f"{where}.assert")
        return item

    def assertions(self, items: Any, where: str) -> Any:
        if not isinstance(items, list | tuple):
            return items
        return [self.assertion(item, f"{where}[{i}]") for i, item in enumerate(items)]

    def tests(self, items: Any, where: str) -> Any:
        if not isinstance(items, list | tuple):
            return items
        return [self.test(item, f"{where}[{i}]") for i, item in enumerate(items)]

    def test(self, test: Any, where: str) -> Any:
        if not isinstance(test, Mapping):
            return test
        test = dict(test)
        test["assert"] = self.assertions(test.get("assert"), f"{where}.assert")  # a tuple as a list
        if test["assert"] is None:
            del test["assert"]
        options = test.get("options")
        if isinstance(options, Mapping):
            test["options"] = {
                key: self.name(value, CODE_PREFIX) if key in _TRANSFORM_KEYS and callable(value) else value
                for key, value in options.items()
            }
        return test


def _leftover(value: Any, where: str) -> None:
    """A callable anywhere else is refused by its key path."""
    if callable(value):
        raise ConfigError(
            f"a Python callable ({callable_name(value)}) where evalh takes none",
            where=where,
            hint="Callables are taken as a provider, a python assertion's value or a transform "
            "(options.transform, a provider's or an assertion's transform)",
        )
    if isinstance(value, Mapping):
        for key, item in value.items():
            _leftover(item, f"{where}.{key}" if where else str(key))
    elif isinstance(value, list | tuple):
        for i, item in enumerate(value):
            _leftover(item, f"{where}[{i}]")


def _nothing_reserved(name: str) -> bool:
    return False


def take_callables(
    data: Mapping[str, Any], reserved: Callable[[str], bool] = _nothing_reserved
) -> tuple[dict[str, Any], dict[str, Callable[..., Any]]]:
    """``data`` with each callable replaced by its name (a copy; ``data`` is not changed), and the
    table of those names. ``reserved`` says which names mean something else already (the built-in
    provider ids: a function named ``echo`` must not stand in for the ``echo`` provider), so a callable
    of such a name is told apart as ``echo #2``. Raises ConfigError, by key path, for a callable evalh
    takes nowhere."""
    taker = _Taker(reserved)
    config = dict(data)
    providers = config.get("providers")
    if isinstance(providers, list | tuple):  # Python code writes tuples where YAML has lists
        config["providers"] = [taker.provider(p, f"providers[{i}]") for i, p in enumerate(providers)]
    elif providers is not None:
        config["providers"] = taker.provider(providers, "providers")
    if "tests" in config:
        config["tests"] = taker.tests(config["tests"], "tests")
    if "defaultTest" in config:
        config["defaultTest"] = taker.test(config["defaultTest"], "defaultTest")
    _leftover(config, "")
    return config, taker.table
