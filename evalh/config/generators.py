"""Test generators: ``tests: file://gen.py[:fn]`` or ``file://gen.js[:fn]`` (also ``.ts``/``.mjs``), alone,
as ``{path, config}``, or as an entry of a ``tests:`` list (promptfoo's ``readStandaloneTestsFile``).

A generator is code the config author named, run once while the config loads (by ``validate`` too,
since the tests it returns are what is checked): a Python function (default ``generate_tests``) in
evalh's Python worker, or a JavaScript function (the module's ``default``, else ``module.exports``, or the
named export; a module that exports the list itself gives that list, as in promptfoo) in the embedded
engine, each with a deadline. It is called with the entry's ``config`` when there is one (its
``file://`` data files read first, as promptfoo does), else with no argument, and returns a list of
tests (a JavaScript promise of one is awaited). The tests are data: checked against the schema like
tests read from a file, located as ``gen.py:generate_tests()[3]``, never run as code nor rendered
beyond what a test's own values are.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Coroutine, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from evalh.common.deadlines import JAVASCRIPT_TIMEOUT_S, TEST_GENERATOR_TIMEOUT_S
from evalh.config.files import DATA_SUFFIXES, FILE_PREFIX, LoadContext, Origin, is_file_ref
from evalh.config.locate import JsonPath
from evalh.errors import ConfigError, Where
from evalh.runtimes.javascript_source import JS_FILE_SUFFIXES, JsFileProblem, JsSource, file_source
from evalh.runtimes.transforms import python_file_target, run_blocking

if TYPE_CHECKING:  # the runtimes themselves: imported by a config that has a generator
    from evalh.runtimes.javascript import JsReturned, JsThrown
    from evalh.runtimes.python import LoadProblem, Raised, Returned

__all__ = [
    "MAX_GENERATED_TESTS",
    "GeneratorOrigin",
    "checked_tests",
    "generated_tests",
    "is_generator",
    "split_generator",
]

PYTHON_DEFAULT = "generate_tests"  # promptfoo's default function name for a Python generator
MAX_GENERATED_TESTS = 100_000
MAX_GENERATED_BYTES = 128 << 20  # as large as a tests file may be
GENERATOR_SUFFIXES = (".py", *JS_FILE_SUFFIXES)
_HINT = (
    "A test generator is a function returning a list of tests ({vars: ..., assert: [...]}): "
    f"file://gen.py:fn (default {PYTHON_DEFAULT}) or file://gen.js[:fn] (module.exports or a named export)"
)


class _GeneratorFailed(Exception):
    """The generator gave no list of tests; the message says why."""


@dataclass(frozen=True)
class GeneratorOrigin:
    """A test code returned: ``gen.py:generate_tests()[3]`` (a generator's), since it has no line."""

    shown: str
    position: int
    called: str = "()"  # what follows the name: a beforeAll hook's tests are ``(beforeAll).suite.tests``

    def locate(self, inner: JsonPath) -> str:
        return f"{self.shown}{self.called}[{self.position}]"


def split_generator(ref: str) -> tuple[str, str | None]:
    """``file://gen.py:fn`` -> ("gen.py", "fn"); without ``:fn``, (path, None)."""
    text = ref.removeprefix(FILE_PREFIX)
    head, sep, tail = text.rpartition(":")
    named = bool(tail) and all(part.isidentifier() for part in tail.split("."))  # Class.method too
    if sep and head.lower().endswith(GENERATOR_SUFFIXES) and named:
        return head, tail
    return text, None


def is_generator(ref: str) -> bool:
    """Whether a ``tests`` entry names a generator (a Python or JavaScript file), not a data file."""
    return split_generator(ref)[0].lower().endswith(GENERATOR_SUFFIXES)


def generated_tests(ref: str, config: Any, where: Where, ctx: LoadContext) -> list[tuple[Any, Origin]]:
    """The tests the generator ``ref`` returns, each with its origin. Raises ConfigError (located at
    the ``tests`` entry) when the generator cannot run or returns something other than tests."""
    path, function = split_generator(ref)
    resolved = ctx.resolve(path, where)
    if not resolved.is_file():
        raise ctx.missing(resolved, where)
    is_python = path.lower().endswith(".py")
    shown = f"{path}:{function}" if function else f"{path}:{PYTHON_DEFAULT}" if is_python else path
    args = () if config is None else (_read_config_files(config, where, ctx),)
    try:
        value = run_blocking(_caller(ref, args, ctx, is_python))
    except _GeneratorFailed as error:
        raise ConfigError(f"test generator {shown} {error}", where=where, hint=_HINT) from None
    except JsFileProblem as error:
        message = f"test generator {shown} cannot be loaded: {error}"
        raise ConfigError(message, where=where, hint=_HINT) from None
    tests = checked_tests(value, f"test generator {shown}", where, _HINT)
    return [(test, GeneratorOrigin(shown, index)) for index, test in enumerate(tests)]


_Start = Callable[[], Coroutine[Any, Any, Any]]


def _caller(ref: str, args: tuple[Any, ...], ctx: LoadContext, is_python: bool) -> _Start:
    """The call of the generator, for run_blocking. A JavaScript file is loaded first: a file the
    loader refuses raises JsFileProblem here."""
    source = None if is_python else _generator_source(ref, ctx)
    from evalh.runtimes.javascript import JsFailed, TimedOut, call_javascript
    from evalh.runtimes.python import WorkerLost, call_python

    async def call() -> Any:
        timeout_s = TEST_GENERATOR_TIMEOUT_S if source is None else JAVASCRIPT_TIMEOUT_S
        try:
            if source is None:
                target = python_file_target(ref, ctx.base_dir, PYTHON_DEFAULT)
                return _python_value(await call_python(target, args, timeout_s=timeout_s))
            return _javascript_value(await call_javascript(source, args, timeout_s=timeout_s))
        except TimedOut:
            raise _GeneratorFailed(f"did not return within {timeout_s:g} s") from None
        except WorkerLost as error:
            raise _GeneratorFailed(f"stopped its Python worker ({error})") from None
        except JsFailed as error:
            raise _GeneratorFailed(f"cannot run: {error}") from None

    return call


# promptfoo's `typeof mod === "function" ? await mod(config) : mod`: a module may export the list itself
_JS_GLUE = """
var __evalh_fn = function () {
  return typeof __evalh_export === "function" ? __evalh_export.apply(null, arguments) : __evalh_export;
};
"""


def _generator_source(ref: str, ctx: LoadContext) -> JsSource:
    """The generator's module, called when it exports a function (``default`` first, or ``:fn``) and
    taken as it is otherwise (a module exporting its list of tests)."""
    source = file_source(ref, ctx.base_dir, module_export=True)
    return replace(source, start=source.start + _JS_GLUE)


def _python_value(outcome: Returned | Raised | LoadProblem) -> Any:
    from evalh.runtimes.python import LoadProblem, Raised

    if isinstance(outcome, LoadProblem):
        raise _GeneratorFailed(f"cannot be loaded: {outcome.text}")
    if isinstance(outcome, Raised):
        raise _GeneratorFailed(f"raised {outcome.describe()}")
    return outcome.value


def _javascript_value(outcome: JsReturned | JsThrown) -> Any:
    from evalh.runtimes.javascript import JsThrown

    if isinstance(outcome, JsThrown):
        raise _GeneratorFailed(f"threw {outcome.message}")
    return outcome.value


def checked_tests(value: Any, who: str, where: Where, hint: str) -> list[Any]:
    """The list of tests code returned (``who``: a generator, a beforeAll hook), if ``value`` is one
    within the bounds, as JSON data; else a located ConfigError."""
    problem, text = None, "[]"
    if not isinstance(value, list):
        problem = f"returned {_kind(value)}, not a list of tests"
    elif len(value) > MAX_GENERATED_TESTS:
        problem = f"returned {len(value):,} tests; at most {MAX_GENERATED_TESTS:,} are accepted"
    else:
        try:  # plain data only (a set or an object of the user's class has no test meaning)
            text = json.dumps(value, allow_nan=False, default=_not_plain)
        except (TypeError, ValueError, RecursionError) as error:
            problem = f"returned tests that are not plain JSON data ({error})"
        else:
            if len(text) > MAX_GENERATED_BYTES:
                problem = f"returned {len(text) >> 20} MiB of tests; at most {MAX_GENERATED_BYTES >> 20} MiB"
    if problem is not None:
        raise ConfigError(f"{who} {problem}", where=where, hint=hint)
    tests: list[Any] = json.loads(text)  # as promptfoo gets them: JSON (tuples are lists, keys text)
    return tests


def _not_plain(value: Any) -> Any:
    raise TypeError(f"a {getattr(value, 'type_name', type(value).__name__)}")  # Foreign: the worker's name


def _kind(value: Any) -> str:
    names = {type(None): "nothing (null / None)", dict: "an object", str: "a string", bool: "a boolean"}
    return names.get(type(value), "a number" if isinstance(value, int | float) else type(value).__name__)


def _read_config_files(config: Any, where: Where, ctx: LoadContext) -> Any:
    """The generator's ``config`` with its ``file://`` data files read (JSON/YAML parsed, other files as
    text), as promptfoo's ``maybeLoadConfigFromExternalFile``; code files stay paths."""
    if isinstance(config, Mapping):
        return {key: _read_config_files(value, where, ctx) for key, value in config.items()}
    if isinstance(config, list):
        return [_read_config_files(value, where, ctx) for value in config]
    if is_file_ref(config) and not is_generator(config):
        path = ctx.resolve(config, where)
        if path.suffix.lower() in DATA_SUFFIXES:
            return ctx.read_document(path, where).data
        return ctx.read_text(path, where)
    return config
