"""Raw tests -> :class:`evalh.model.TestCase`: the defaultTest merge, vars, and rendered assertions.

promptfoo's merge: vars and metadata merged (the test wins), assertions concatenated (defaultTest's
first), options shallow-merged, threshold test-over-default. Vars may be ``file://`` and may
reference other vars; assertion values and metric names are rendered with the test's vars, except
a value that is code (python), which is never rendered (evalh.config.code_values). Each value is
rendered once (see evalh.templating); --var values and files' contents are data, never rendered.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from evalh.assertions.registry import base_type, get_assertion
from evalh.common.environment import getenv
from evalh.common.notices import warnings_muted
from evalh.config.code_values import code_value
from evalh.config.files import (
    DATA_SUFFIXES,
    FILE_PREFIX,
    LoadContext,
    Origin,
    TestSource,
    is_file_ref,
    is_glob,
    script_path,
)
from evalh.config.locate import JsonPath, format_path
from evalh.config.prompt_refs import merged_prompt_refs
from evalh.config.providers import check_choice, parse_choice, parse_models
from evalh.config.stand_in import stand_in_of
from evalh.config.stored_outputs import late_var_names
from evalh.config.tests_files import RawTest
from evalh.config.transform_checks import check_test_transforms, transformed_vars, unused_context_transform
from evalh.config.var_files import load_var_file
from evalh.errors import ConfigError, Place, TemplateError, Where, then
from evalh.model import AssertionSpec, ProviderChoice, TestCase
from evalh.runtimes.javascript_source import JS_FILE_SUFFIXES
from evalh.runtimes.scoring_functions import scoring_function_problem
from evalh.runtimes.transforms import VARS_TRANSFORM_KEY, transform_problem
from evalh.templating import (
    EnvVars,
    has_template,
    referenced_names,
    render_template,
    template_env,
    template_strings,
)

__all__ = ["Defaults", "build_tests", "expand_vars", "load_vars", "resolve_vars", "test_key_where"]

_NO_CONFIG: Mapping[str, Any] = {}  # shared by the assertions without a config (never changed)
_NOT_MUTED = contextlib.nullcontext()  # reusable: it does nothing
_NO_NAMES: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Defaults:
    """The defaultTest (with --var values merged into its vars), where it was written, and ``env``
    for the templates of every test."""

    data: Mapping[str, Any] = field(default_factory=dict)
    origin: Origin | None = None
    cli_vars: Mapping[str, str] = field(default_factory=dict)
    env: EnvVars = field(default_factory=template_env)
    stored: frozenset[str] = frozenset()  # names options.storeOutputAs stores outputs under
    # read once per load rather than once per test
    no_expansion: bool = field(default_factory=lambda: _env_flag("PROMPTFOO_DISABLE_VAR_EXPANSION"))
    # options.provider's choice (or the error it raised), made at the first test that takes it
    choice: list[ProviderChoice | ConfigError] = field(default_factory=list)
    # the assertions of defaultTest, when every test has the same (see _default_assertions); not an
    # argument, so that a Defaults made by replace() (another defaultTest) starts without them
    shared_asserts: list[list[AssertionSpec | None]] = field(default_factory=list, init=False, compare=False)

    @functools.cached_property
    def vars(self) -> Mapping[str, Any]:
        """defaultTest's vars with the --var values over them (shared by every test: not to change)."""
        return {**(self.data.get("vars") or {}), **self.cli_vars}


class _Scope:
    """What an assertion's templates see: the test's resolved vars, and ``env`` (one per test: a plain
    class, not a frozen dataclass, whose __init__ cost more than the rest of it)."""

    __slots__ = ("env", "variables")

    def __init__(self, variables: Mapping[str, Any], env: EnvVars) -> None:
        self.variables = variables
        self.env = env

    def render(self, template: str, where: Where) -> str:
        return render_template(template, self.variables, where=where, env=self.env)


def build_tests(
    raw: RawTest, position: int, first_index: int, defaults: Defaults, ctx: LoadContext
) -> list[TestCase]:
    """The merged, rendered tests a raw test makes: one, or one per combination of its list-valued
    vars (promptfoo's var expansion, unless ``options.disableVarExpansion``). ``position`` is where it
    was written (tests[position]); ``first_index`` is the index of the first test made. An empty list
    (with problems recorded) when it cannot be built."""
    data, origin = raw.data, raw.origin
    shown: JsonPath = raw.shown or ("tests", position)
    try:
        own = load_vars(data, origin, shown, ctx, raw.folder)
    except ConfigError as error:
        ctx.problems.add_exception(error)
        return []
    options = {**(defaults.data.get("options") or {}), **(data.get("options") or {})}
    # ``own`` is load_vars' copy, so it can be the merged vars (their values change, never their names)
    merged = {**defaults.vars, **own} if defaults.vars else own
    disabled = options.get("disableVarExpansion") or defaults.no_expansion
    # the --var values the test does not set: data, never a pattern nor a template
    literal = frozenset(defaults.cli_vars).difference(own) if defaults.cli_vars else _NO_NAMES
    if not disabled:
        try:
            merged = _glob_vars(
                merged, literal, lambda name: _var_where(name, data, defaults, origin, shown, ctx), ctx
            )
        except ConfigError as error:
            ctx.problems.add_exception(error)
            return []
    combinations = [merged] if disabled else expand_vars(merged)
    # validate does not run transformVars, so the vars it would define are unknown: no warnings then
    unknown_vars = VARS_TRANSFORM_KEY in options and not ctx.run_transforms
    path = format_path(raw.shown) if raw.shown else f"tests[{position}]"  # (format_path's words)
    with warnings_muted() if unknown_vars else _NOT_MUTED:
        built = [
            _build_one(raw, shown, path, first_index + offset, variables, literal, options, defaults, ctx)
            for offset, variables in enumerate(combinations)
        ]
    made = [test for test in built if test is not None]
    for test in made:  # for checks made after loading (calibrate's labels), which name a key of a test
        ctx.test_sources[id(test)] = (data, shown, origin, defaults.origin)
    return made


def test_key_where(ctx: LoadContext, test: TestCase, section: str, key: str) -> Where:
    """Where ``test``'s ``section.key`` (``metadata.label``) was written: in the test, or else in the
    defaultTest it took the key from (``file:line:col path``)."""
    source = ctx.test_sources.get(id(test))
    if source is None:  # not a test of this load
        return format_path((test.path or "tests", section, key))
    return _key_where(ctx, source, section, key)


def _key_where(ctx: LoadContext, source: TestSource, section: str, key: str) -> Where:
    data, shown, origin, default_origin = source
    if key in (data.get(section) or {}) or default_origin is None:
        return ctx.where(origin, (section, key), (*shown, section, key))
    return ctx.where(default_origin, (section, key), ("defaultTest", section, key))


def expand_vars(variables: dict[str, Any]) -> list[dict[str, Any]]:
    """One mapping per combination of the vars that are lists of strings (their cartesian product,
    the last var varying fastest), or just ``variables`` itself when there is none. As in promptfoo, a
    list whose first item is not a string (numbers, objects, an empty list) stays one value."""
    lists = [
        name
        for name, value in variables.items()
        if isinstance(value, list) and value and isinstance(value[0], str)
    ]
    if not lists:
        return [variables]
    return [
        {**variables, **dict(zip(lists, combination, strict=True))}
        for combination in itertools.product(*(variables[name] for name in lists))
    ]


def _glob_vars(
    variables: dict[str, Any], literal: frozenset[str], where: Callable[[str], Where], ctx: LoadContext
) -> dict[str, Any]:
    """A var whose value is a ``file://`` glob becomes the list of the files it matches (sorted), so
    that var expansion makes one test per file, as promptfoo's ``generateVarCombinations`` does.
    A --var value is data and never a pattern."""
    if not any(isinstance(value, str) and value.startswith(FILE_PREFIX) for value in variables.values()):
        return variables  # no file:// value (is_file_ref's test, without a call for each var)
    globbed = {
        name: [f"{FILE_PREFIX}{path}" for path in ctx.expand(value, where(name))]
        for name, value in variables.items()
        if name not in literal and is_file_ref(value) and is_glob(value)
    }
    return {**variables, **globbed} if globbed else variables


def _env_flag(name: str) -> bool:
    return getenv(name, "").strip().lower() in ("1", "true", "yes", "on")


def _build_one(
    raw: RawTest,
    shown: JsonPath,
    path: str,
    index: int,
    merged: dict[str, Any],
    literal: frozenset[str],
    options: Mapping[str, Any],
    defaults: Defaults,
    ctx: LoadContext,
) -> TestCase | None:
    data, origin = raw.data, raw.origin
    default = defaults.data
    late = late_var_names(merged, defaults.stored, literal)  # rendered when the test runs
    try:
        variables = resolve_vars(
            merged,
            lambda name: _var_where(name, data, defaults, origin, shown, ctx),
            ctx,
            env=defaults.env,
            literal=literal | late,
        )
        if options:  # (most tests have none: transformVars is one)
            variables = transformed_vars(
                variables, options, lambda key: _option_where(key, data, shown, origin, defaults, ctx), ctx
            )
        if "rubricPrompt" in options:  # read and parsed now, like an assertion's own rubricPrompt
            own_options = "rubricPrompt" in (data.get("options") or {})
            where = format_path((*shown, "options")) if own_options else "defaultTest.options"
            options = {**options, "rubricPrompt": _rubric(options["rubricPrompt"], ctx, where)}
        scope = _Scope(variables, defaults.env)
        asserts = [
            *_default_assertions(defaults, scope, ctx),
            *_assertions(data.get("assert"), (), origin, path, scope, ctx, raw.refused_asserts),
        ]
    except ConfigError as error:
        ctx.problems.add_exception(error)
        return None
    specs = tuple([spec for spec in asserts if spec is not None])
    if len(specs) < len(asserts):  # an assertion could not be built (its problem is recorded)
        return None
    if options:
        check_test_transforms(
            options, lambda key: _option_where(key, data, shown, origin, defaults, ctx), ctx
        )
    _check_scoring_function(data, shown, origin, defaults, ctx)
    choice = None
    if options.get("provider") is not None:
        try:
            choice = _test_choice(data, shown, origin, options, defaults, ctx)
        except ConfigError as error:
            ctx.problems.add_exception(error)
            return None
    try:
        stand_in = stand_in_of(data, shown, origin, (default, defaults.origin), ctx)
    except ConfigError as error:
        ctx.problems.add_exception(error)
        return None
    has_output = "output" in data or "providerOutput" in data
    threshold = data.get("threshold", default.get("threshold"))
    return TestCase.made(  # positional: binding 16 keywords cost a tenth of building a test
        index,
        data.get("description"),
        variables,
        specs,
        float(threshold) if threshold is not None else None,
        options,
        choice,
        {**(default.get("metadata") or {}), **(data.get("metadata") or {})},
        data.get("output", data.get("providerOutput")),
        has_output,
        path,
        merged_prompt_refs(data, default),
        merged_prompt_refs(data, default, "providers"),
        late,
        stand_in,
        data.get("assertScoringFunction") or default.get("assertScoringFunction"),
    )


def _default_assertions(defaults: Defaults, scope: _Scope, ctx: LoadContext) -> list[AssertionSpec | None]:
    """defaultTest's assertions for a test. When nothing of a test goes into them (each written with only
    a type, a plain-text value, a threshold and a weight: nothing rendered with the test's vars), they
    are built at the first test and every test shares those specs: the same place, path and raw
    assertion, so the same objects (and the same ``where_of`` entry) serve all of them."""
    if defaults.shared_asserts:
        return defaults.shared_asserts[0]
    items = defaults.data.get("assert")
    specs = _assertions(items, (), defaults.origin, "defaultTest", scope, ctx)
    if None not in specs and all(_same_for_every_test(item) for item in items or ()):
        defaults.shared_asserts.append(specs)
    return specs


def _same_for_every_test(item: Any) -> bool:
    return type(item) is dict and item.keys() <= _PLAIN_KEYS and _plain_text(item.get("value"))


def _check_scoring_function(
    data: Mapping[str, Any], shown: JsonPath, origin: Origin, defaults: Defaults, ctx: LoadContext
) -> None:
    """The test's (else defaultTest's) assertScoringFunction names a Python or JavaScript file that exists."""
    key = "assertScoringFunction"
    value = data.get(key) or defaults.data.get(key)
    problem = None if value is None else scoring_function_problem(value, ctx.base_dir)
    if problem is None:
        return
    if data.get(key) is not None or defaults.origin is None:
        where = ctx.where(origin, (key,), (*shown, key))
    else:
        where = ctx.where(defaults.origin, (key,), ("defaultTest", key))
    hint = "Name a file (relative to the config's folder) defining func(named_scores, context) or :fn"
    ctx.problems.add(problem, where=where, hint=hint)


def _option_where(
    key: str, data: Mapping[str, Any], shown: JsonPath, origin: Origin, defaults: Defaults, ctx: LoadContext
) -> Where:
    return _key_where(ctx, (data, shown, origin, defaults.origin), "options", key)


def _test_choice(
    data: Mapping[str, Any],
    shown: JsonPath,
    origin: Origin,
    options: Mapping[str, Any],
    defaults: Defaults,
    ctx: LoadContext,
) -> ProviderChoice:
    """The test's ``options.provider``, parsed and checked. defaultTest's is the same for every test
    that does not set its own: it is parsed and checked once, at the first such test (where its
    problems were reported first when each test did it), and that test's choice is theirs too."""
    from_default = "provider" not in (data.get("options") or {}) and defaults.origin is not None
    if from_default and defaults.choice:
        outcome = defaults.choice[0]
        if isinstance(outcome, ConfigError):
            raise outcome
        return outcome
    place = _options_where(data, shown, origin, defaults, ctx)
    try:
        choice = parse_choice(options["provider"], _options_path(data, shown), str(ctx.base_dir), place)
    except ConfigError as error:
        if from_default:
            defaults.choice.append(error)
        raise
    check_choice(choice, place, ctx)
    if from_default:
        defaults.choice.append(choice)
    return choice


def _options_path(data: Mapping[str, Any], shown: JsonPath) -> str:
    if "provider" in (data.get("options") or {}):
        return format_path((*shown, "options", "provider"))
    return "defaultTest.options.provider"


def _options_where(
    data: Mapping[str, Any], shown: JsonPath, origin: Origin, defaults: Defaults, ctx: LoadContext
) -> Where:
    if "provider" in (data.get("options") or {}) or defaults.origin is None:
        return ctx.where(origin, ("options", "provider"), (*shown, "options", "provider"))
    return ctx.where(defaults.origin, ("options", "provider"), ("defaultTest", "options", "provider"))


def load_vars(
    data: Mapping[str, Any], origin: Origin, shown: JsonPath, ctx: LoadContext, folder: Path | None = None
) -> dict[str, Any]:
    """A test's (or defaultTest's) vars: the mapping written, or the one ``vars: file://...`` files
    hold (a path, a glob, or a list of them; relative to ``folder``, a tests file's, else the
    config's)."""
    variables = data.get("vars") or {}
    if isinstance(variables, (str, list)):  # a tuple: ``str | list`` makes a union object on each call
        where = ctx.where(origin, ("vars",), (*shown, "vars"))
        return ctx.load_vars_files(variables, where, folder)
    return dict(variables)


def _var_where(
    name: str, data: Mapping[str, Any], defaults: Defaults, origin: Origin, shown: JsonPath, ctx: LoadContext
) -> Where:
    if name not in (data.get("vars") or {}) and name in defaults.cli_vars:
        return f"--var {name}"
    if name in (data.get("vars") or {}) or defaults.origin is None:
        return ctx.where(origin, ("vars", name), (*shown, "vars", name))
    return ctx.where(defaults.origin, ("vars", name), ("defaultTest", "vars", name))


def resolve_vars(
    variables: dict[str, Any],
    where: Any,
    ctx: LoadContext,
    *,
    env: EnvVars | None = None,
    literal: frozenset[str] = frozenset(),
) -> dict[str, Any]:
    """Load ``file://`` values, then render vars that reference other vars, in dependency order.

    Each value is rendered once; a ``literal`` var (a --var value) is data and never rendered, nor is
    a file's content. As in promptfoo, a text file's content is trimmed, and every string var loses
    one trailing newline (the one a YAML ``|`` block or a file's last line ends with)."""
    pending: set[str] = set()
    for name, value in variables.items():
        if not isinstance(value, str):
            continue
        if name in literal:
            pass
        elif value.startswith(FILE_PREFIX):  # is_file_ref
            variables[name] = value = load_var_file(ctx, value, where(name))  # data, never rendered
            if not isinstance(value, str):
                continue
        elif has_template(value):
            pending.add(name)
        if value.endswith("\n"):
            variables[name] = value = value[:-1]
    if not pending:
        return variables
    resolved: dict[str, Any] = {name: value for name, value in variables.items() if name not in pending}
    visiting: list[str] = []

    def resolve(name: str) -> None:
        if name in resolved or name not in pending:
            return
        if name in visiting:
            cycle = " -> ".join([*visiting[visiting.index(name) :], name])
            raise TemplateError(f"vars reference each other in a cycle: {cycle}", where=where(name))
        visiting.append(name)
        for dependency in referenced_names(variables[name], where=where(name)):
            resolve(dependency)
        visiting.pop()
        resolved[name] = render_template(variables[name], resolved, where=where(name), env=env)

    for name in list(variables):
        resolve(name)
    return {name: resolved[name] for name in variables}


def _assertions(
    items: list[Any] | None,
    inner: JsonPath,
    origin: Origin | None,
    shown: str,
    scope: _Scope,
    ctx: LoadContext,
    refused: frozenset[int] = frozenset(),
) -> list[AssertionSpec | None]:
    """The specs of ``items`` (the ``assert`` list of what ``shown`` names: ``tests[3]``); those the
    schema ``refused`` (reported already) are left out, so the others are still checked (each keeps
    its own index in messages)."""
    if not items:
        return []
    specs: list[AssertionSpec | None] = []
    listed = f"{shown}.assert"  # format_path's words, put together once for the whole list
    where_of = ctx.where_of
    for index, item in enumerate(items):
        if refused and index in refused:
            continue
        path = f"{listed}[{index}]"
        # the spec's path as the words (a place kept for each of 300,000 assertions holds no more), its
        # position in the file worked out only when a message asks for it
        where = Place(_placed, origin, inner, index, path) if origin else path
        try:
            if type(item) is dict and item.keys() <= _PLAIN_KEYS:  # most: build_assertion's first case
                spec = _plain_assertion(item, scope, ctx, where, path)
                where_of[id(spec)] = where
                specs.append(spec)
            else:
                specs.append(
                    build_assertion(item, (*inner, "assert", index), origin, scope, ctx, where, path)
                )
        except ConfigError as error:
            ctx.problems.add_exception(error)
            specs.append(None)
    return specs


def _placed(origin: Origin, inner: JsonPath, index: int, words: str) -> str:
    return f"{origin.locate((*inner, 'assert', index))} {words}"


def build_assertion(
    item: Mapping[str, Any],
    inner: JsonPath,
    origin: Origin | None,
    scope: _Scope,
    ctx: LoadContext,
    where: Where,
    path: str,
) -> AssertionSpec:
    """One assertion with its value and metric rendered (children built for assert-set); ``path``:
    its place in words (``tests[3].assert[1]``)."""
    if item.keys() <= _PLAIN_KEYS:  # most assertions: none of the keys the rest of this looks for
        spec = _plain_assertion(item, scope, ctx, where, path)
        ctx.where_of[id(spec)] = where
        return spec
    written, kind, negate = _types(item["type"])
    children = _children(item, inner, origin, path, scope, ctx, where) if item.get("assert") else ()
    threshold = item.get("threshold")
    metric = item.get("metric")
    config = dict(item["config"]) if item.get("config") else _NO_CONFIG
    choice = (
        _assertion_choice(kind, item, config, path, ctx, where)
        if "provider" in item or "providers" in config
        else None
    )
    if "transform" in item or "contextTransform" in item:
        _check_transforms(kind, item, ctx, where)
    if "samples" in item or "aggregate" in item:
        _check_judge_options(kind, item, where)
    rubric = item.get("rubricPrompt")
    value = item.get("value")
    if not _plain_text(value):  # most values are as written, with nothing to render or place
        value = _render_value(kind, value, scope, ctx, where, ".value" if "value" in item else "")
    spec = AssertionSpec(
        type=written,
        negate=negate,
        value=value,
        threshold=float(threshold) if threshold is not None else None,
        weight=float(item.get("weight", 1.0)),
        metric=scope.render(metric, then(where, ".metric")) if metric is not None else None,
        provider=choice,
        config=config,
        children=children,
        rubric_prompt=_rubric(rubric, ctx, where) if rubric is not None else None,
        raw=item,
        path=path,
    )
    ctx.where_of[id(spec)] = where
    return spec


# The keys of an assertion that has nothing but a value to render (and a threshold and weight to read)
_PLAIN_KEYS = frozenset({"type", "value", "threshold", "weight"})


def _plain_assertion(
    item: Mapping[str, Any], scope: _Scope, ctx: LoadContext, where: Where, path: str
) -> AssertionSpec:
    """:func:`build_assertion` for an assertion of only ``_PLAIN_KEYS``: the same spec, made without
    asking for the keys it has not (a tenth of building 30,000 assertions), and without the frozen
    spec's keyword __init__ (AssertionSpec.plain: a third)."""
    written, kind, negate = _types(item["type"])
    value = item.get("value")
    if type(value) is str:  # most: _plain_string's test without a call for text with no brace
        if ("{" in value and has_template(value)) or value.startswith(FILE_PREFIX):
            value = _render_value(kind, value, scope, ctx, where, ".value")
    elif value is not None and not _plain_text(value):  # (no value: nothing to render)
        value = _render_value(kind, value, scope, ctx, where, ".value")
    threshold = item.get("threshold")
    weight = item.get("weight", 1.0)
    return AssertionSpec.plain(
        written,
        negate,
        value,
        None if threshold is None else threshold if type(threshold) is float else float(threshold),
        weight if type(weight) is float else float(weight),
        _NO_CONFIG,
        item,
        path,
    )


def _children(
    item: Mapping[str, Any],
    inner: JsonPath,
    origin: Origin | None,
    path: str,
    scope: _Scope,
    ctx: LoadContext,
    where: Where,
) -> tuple[AssertionSpec, ...]:
    """An assert-set's assertions."""
    children = _assertions(item["assert"], inner, origin, path, scope, ctx)
    built = [child for child in children if child is not None]
    if len(built) < len(children):
        raise ConfigError("an assertion of this assert-set is invalid (see above)", where=where)
    return tuple(built)


def _plain_text(value: Any) -> bool:
    """Text, or a list of texts, with no template and no file:// (nothing to render or read)."""
    if type(value) is str:
        return _plain_string(value)
    if type(value) is not list:
        return False
    return all(type(item) is str and _plain_string(item) for item in value)


def _plain_string(text: str) -> bool:
    # a brace first: most text has none (a regex's braces are rarely a template's)
    return ("{" not in text or not has_template(text)) and not text.startswith(FILE_PREFIX)


@functools.lru_cache(maxsize=1024)
def _types(full_type: str) -> tuple[str, str, bool]:
    """The type as written, its base type and whether it is negated; names interned ("not-contains"
    once, not in each assertion)."""
    kind, negate = base_type(full_type)
    return sys.intern(full_type), kind, negate


def _check_transforms(kind: str, item: Mapping[str, Any], ctx: LoadContext, where: Where) -> None:
    for key in ("transform", "contextTransform"):
        problem = transform_problem(item[key], ctx.base_dir) if key in item else None
        if problem:
            raise ConfigError(problem, where=then(where, f".{key}"))
    if "contextTransform" in item:
        unused_context_transform(kind, then(where, ".contextTransform"))


def _check_judge_options(kind: str, item: Mapping[str, Any], where: Where) -> None:
    """``samples`` and ``aggregate`` ask a grader model more than once: only judges have one."""
    definition = get_assertion(kind)
    key = "samples" if "samples" in item else "aggregate"
    if definition is not None and "text" not in definition.needs:
        raise ConfigError(
            f"{item['type']} has no grader model to ask more than once",
            where=then(where, f".{key}"),
            hint="samples and aggregate work on model-graded assertions (llm-rubric, factuality, g-eval)",
        )
    if "aggregate" in item and not isinstance(item.get("provider"), list):
        raise ConfigError(
            "aggregate combines several graders, but this assertion names one",
            where=then(where, ".aggregate"),
            hint="Give provider a list of graders (provider: [a, b, c]), or remove aggregate",
        )


def _assertion_choice(
    kind: str,
    item: Mapping[str, Any],
    config: Mapping[str, Any],
    path: str,
    ctx: LoadContext,
    where: Where,
) -> ProviderChoice | None:
    """The assertion's ``provider`` (an id, an object, a typed map or, for embedding assertions, a
    list of models), with ``config.providers`` as the list when ``provider`` is not one; checked."""
    provider, listed = item.get("provider"), config.get("providers")
    if provider is None and listed is None:
        return None
    base_dir = str(ctx.base_dir)
    if isinstance(provider, list):
        definition = get_assertion(kind)
        if definition is not None and not {"embedding", "text"} & set(definition.needs):
            raise ConfigError(
                f"{item['type']} takes one provider, not a list",
                where=then(where, ".provider"),
                hint="A list of providers works for embedding assertions such as similar (the mean over "
                "models) and for model-graded ones (several judges, combined by aggregate)",
            )
    choice = (
        parse_choice(provider, f"{path}.provider", base_dir, then(where, ".provider"))
        if provider is not None
        else None
    )
    if listed is not None and not (choice and choice.models):
        models = parse_models(listed, f"{path}.config.providers", base_dir, then(where, ".config.providers"))
        choice = replace(choice or ProviderChoice(), models=models)
    if choice is not None:
        check_choice(
            choice,
            then(where, ".provider") if provider is not None else then(where, ".config.providers"),
            ctx,
        )
    return choice


def _render_value(kind: str, value: Any, scope: _Scope, ctx: LoadContext, owner: Where, key: str) -> Any:
    """promptfoo's value rendering: strings and each string of a list; file:// loaded; objects kept.
    A value that is code is never rendered (see evalh/config/code_values.py). ``key`` (``.value``)
    follows the ``owner`` assertion's place in messages."""
    if isinstance(value, str) and not has_template(value) and not is_file_ref(value):
        return value  # as written, nothing to place
    where = then(owner, key)
    definition = get_assertion(kind)
    if definition is not None and definition.compares_outputs:
        return value  # promptfoo hands select-best's criteria to its grader as written
    language = definition.code_language if definition is not None else None
    if language is not None and isinstance(value, str):
        code = code_value(language, value, lambda template: scope.render(template, where), where=where)
        return _file_value(kind, code, ctx, where) if is_file_ref(code) else code
    if language is not None:
        return value  # not a string: the type's check reports it
    if isinstance(value, str):
        text = scope.render(value, where)
        return _file_value(kind, text, ctx, where) if is_file_ref(text) else text
    if isinstance(value, list):
        rendered = list(value)
        for position, item in enumerate(value):
            if isinstance(item, str) and (has_template(item) or is_file_ref(item)):
                text = scope.render(item, then(where, f"[{position}]"))
                rendered[position] = (
                    _file_value(kind, text, ctx, then(where, f"[{position}]")) if is_file_ref(text) else text
                )
        return value if rendered == value else rendered  # unchanged: the list as written, not a copy
    if isinstance(value, Mapping) and definition is not None and definition.templated_keys:
        return {
            key: _render_texts(item, scope, then(where, f".{key}"))
            if key in definition.templated_keys
            else item
            for key, item in value.items()
        }
    return value


def _render_texts(value: Any, scope: _Scope, where: Where) -> Any:
    """Every text inside ``value`` (mappings and lists, at any depth) rendered once; the rest as is."""
    if isinstance(value, str):
        return scope.render(value, where) if has_template(value) else value
    if isinstance(value, Mapping):
        return {key: _render_texts(item, scope, then(where, f".{key}")) for key, item in value.items()}
    if isinstance(value, list):
        return [_render_texts(item, scope, then(where, f"[{index}]")) for index, item in enumerate(value)]
    return value


def _file_value(kind: str, ref: str, ctx: LoadContext, where: Where) -> Any:
    """A ``file://`` value: a python or javascript assertion's script stays a path (checked, not run)."""
    path = ctx.resolve(script_path(ref), where)
    if kind == "python" and path.suffix == ".py":
        if not path.is_file():
            raise ctx.missing(path, where)
        return ref
    if kind == "javascript" and path.suffix in JS_FILE_SUFFIXES:
        if not path.is_file():
            raise ctx.missing(path, where)
        from evalh.assertions.javascript import javascript_file_problem  # a family: imported when used

        problem = javascript_file_problem(ref, ctx.base_dir)
        if problem:
            raise ConfigError(f"javascript: {problem}", where=where)
        return ref
    return ctx.load_value(ref, where, trim=path.suffix.lower() not in DATA_SUFFIXES)


def _rubric(value: Any, ctx: LoadContext, where: Where) -> Any:
    """A custom rubric prompt, read if file://; its templates are parsed now (rendered when grading),
    so a syntax error or a template the sandbox refuses is a config error before any call."""
    if is_file_ref(value):
        value = ctx.load_value(value, then(where, ".rubricPrompt"), trim=True)
    for text in template_strings(value):
        referenced_names(text, where=then(where, ".rubricPrompt"))
    return value
