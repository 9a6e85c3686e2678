"""Load a config: YAML -> ``$ref`` (refs.py) -> ``{{ env.X }}`` (env.py) -> JSON-Schema check -> files
-> checks -> Suite.

The whole config is validated before any provider is called, and every problem found is reported
at once (one paragraph each, ``file:line:col path: what. what to do``).
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from evalh.common import gc_policy
from evalh.common.environment import environ
from evalh.common.limits import max_reply_bytes
from evalh.common.notices import is_strict, strict_mode, warn
from evalh.config.build import Defaults, build_tests, load_vars, test_key_where
from evalh.config.checks import AssertionChecker
from evalh.config.command_line import (
    COMMAND_LINE_KEY,
    command_line_grader,
    command_line_run_options,
    warn_ignored_options,
)
from evalh.config.derived import load_derived_metrics
from evalh.config.env import config_env, render_config_env
from evalh.config.extensions import before_all, load_extensions
from evalh.config.files import DocOrigin, LoadContext, Origin, is_file_ref
from evalh.config.locate import Document, JsonPath, display_path, load_document, path_errors
from evalh.config.merge import merge_documents
from evalh.config.parse_cache import DeferredKeeps, deferred_keeping
from evalh.config.prompt_refs import check_prompt_refs, check_provider_prompt_refs, check_provider_refs
from evalh.config.prompts import load_prompts
from evalh.config.providers import check_choice, load_providers, parse_choice
from evalh.config.recorded_checks import check_recorded_outputs
from evalh.config.refs import resolve_refs
from evalh.config.scenarios import scenario_tests
from evalh.config.shape_cache import remember_valid_shapes
from evalh.config.shapes import config_checker, defs_checker
from evalh.config.stand_in import check_user_models
from evalh.config.tests_files import GENERATOR_KEY, RawTest, collect_tests
from evalh.config.tracing import load_tracing
from evalh.config.unknown_keys import drop_unknown_keys
from evalh.errors import ConfigError, ConfigFileError, SchemaError, Where
from evalh.model import (
    CONVERSATION_VAR,
    RECORDED_PROMPT,
    RECORDED_PROVIDER,
    Prompt,
    ProviderSpec,
    Suite,
    TestCase,
    prompt_allowed,
    prompt_warning_key,
    stored_names,
)
from evalh.runtimes.transforms import VARS_TRANSFORM_KEY
from evalh.runtimes.user_filters import filter_problem
from evalh.runtimes.user_filters import user_filters as make_user_filters
from evalh.secrets import RedactedConfig, register_config, register_environment, walked_config
from evalh.templating import prompt_texts, referenced_names, template_env, user_filters

__all__ = [
    "CONFIG_NAMES",
    "MAPPING_CONFIG",
    "SuiteCheck",
    "TestKeyWhere",
    "find_config",
    "load_suite",
    "load_suite_data",
]

CONFIG_NAMES = (
    "evalh.yaml",
    "evalh.yml",
    "promptfooconfig.yaml",
    "promptfooconfig.yml",
    "evalh.json",
    "promptfooconfig.json",
)
_LIST_LIMIT = 10
# Where a config given as a mapping (the Python API) is said to be: its problems read
# ``<config> tests[0].assert[1].type: ...``, located by key path since it has no lines.
MAPPING_CONFIG = "<config>"


def find_config(start: Path | None = None) -> Path:
    """The config in ``start`` (default: the current directory): evalh.yaml, then promptfooconfig.yaml."""
    directory = start or Path.cwd()
    for name in CONFIG_NAMES:
        candidate = directory / name
        if candidate.is_file():
            return candidate
    raise ConfigFileError(
        f"no config file found in {display_path(directory) if start else 'the current directory'} "
        f"(looked for {', '.join(CONFIG_NAMES)})",
        hint="Pass the config's path (evalh run path/to/config.yaml), or create evalh.yaml with `evalh init`",
    )


# A check of the resolved suite; ``locate(test, "metadata", "label")`` says where a test's key was written.
TestKeyWhere = Callable[[TestCase, str, str], Where]
SuiteCheck = Callable[[Suite, TestKeyWhere], object]


def load_suite(
    path: Path | Sequence[Path],
    *,
    cli_vars: Mapping[str, str] = {},
    grader: str | None = None,
    run_transforms: bool = False,
    checks: Sequence[SuiteCheck] = (),
    report_config: bool = True,
) -> Suite:
    """Read, check and resolve a config (several: merged as promptfoo merges ``-c a -c b``; relative
    paths inside the merged tests resolve from the first one's directory). Raises ConfigError (or a
    subclass) listing every problem: those of the schema, of files, values and providers, and those
    ``checks`` raise about the resolved suite (validate's report paths and filters), in one list.
    ``run_transforms``: run each test's ``options.transformVars`` (loading to run; validating runs no
    code). ``report_config=False``: no report is written from the suite (validate), so its
    ``raw_config``, the report's redacted copy of the config, is left empty."""
    paths: list[Path] = []
    for given in [path] if isinstance(path, str | Path) else path:
        with path_errors(str(given), None):
            paths.append(Path(given).resolve())
    ctx = LoadContext(config_file=paths[0], run_transforms=run_transforms, report_config=report_config)
    with gc_policy.loading():
        with deferred_keeping() as keeps:  # kept once the config's secrets are known (see _load)
            documents = [load_document(config_file) for config_file in paths]
        for document in documents:
            if not isinstance(document.data, Mapping):
                raise ConfigError(
                    "the config must be a mapping of keys (description:, prompts:, providers:, tests:, ...)",
                    where=document.file,
                )
        document = documents[0] if len(documents) == 1 else merge_documents(documents, paths)
        ctx.other_configs = tuple(paths[1:])
        with strict_mode(_config_strict(document.data)):
            return _load(document, ctx, cli_vars, grader, checks, keeps)


def load_suite_data(
    data: Mapping[str, Any],
    *,
    base_dir: Path,
    cli_vars: Mapping[str, str] = {},
    grader: str | None = None,
    run_transforms: bool = False,
) -> Suite:
    """A config given as a mapping of the YAML's keys (the Python API), checked and resolved exactly as
    a file's: every problem is raised at once, located by key path. Relative paths resolve from
    ``base_dir``; ``data`` is copied, never changed."""
    document = Document(data=copy.deepcopy(dict(data)), file=MAPPING_CONFIG)
    ctx = LoadContext(config_file=base_dir.resolve() / MAPPING_CONFIG, run_transforms=run_transforms)
    with gc_policy.loading(), strict_mode(_config_strict(document.data)):
        return _load(document, ctx, cli_vars, grader, (), DeferredKeeps())


def _config_strict(data: Mapping[str, Any]) -> bool:
    options = data.get("evaluateOptions")
    return isinstance(options, Mapping) and options.get("strict") is True


def _load(
    document: Document,
    ctx: LoadContext,
    cli_vars: Mapping[str, str],
    grader: str | None,
    checks: Sequence[SuiteCheck],
    keeps: DeferredKeeps,
) -> Suite:
    document.data = resolve_refs(document.data, document.where, document.text)  # before anything reads it
    env = config_env(document, ctx)
    document.data = render_config_env(document.data, template_env(env), document, ctx)
    # Before any check can quote a value: every secret the config holds is redacted from here on.
    register_config(env)  # the env: map's secret-looking entries
    # the environment's credentials: run_context registers them too, but the pytest plugin and calibrate
    # load (and may keep the parsed config) before a run exists
    register_environment(environ())
    # The config's secrets registered, then one redaction walk of the config from here on answers the
    # parse cache, the tests' digests and the report's copy (each walked it, or each test, again)
    with walked_config(document.data, register=True):
        keeps.settle()  # the config as read, kept in the cache when it holds nothing to redact
        return _checked_load(document, ctx, _Inputs(env, cli_vars, grader, _Skipped()), checks)


def _checked_load(
    document: Document, ctx: LoadContext, inputs: _Inputs, checks: Sequence[SuiteCheck]
) -> Suite:
    # The later stages go on past the schema's problems, skipping only what the schema refused, so
    # that one pass reports every problem (fixing the first ones no longer reveals others).
    skip = _check_schema(document, ctx)
    options = document.data.get("evaluateOptions") if "evaluateOptions" not in skip.keys else None
    ctx.allow_outside = isinstance(options, Mapping) and options.get("allowFileOutsideConfigDir") is True
    suite = _resolve(document, ctx, replace(inputs, skip=skip))
    locate = functools.partial(test_key_where, ctx)
    for check in checks:
        try:
            check(suite, locate)
        except ConfigError as error:
            ctx.problems.add_exception(error)
    try:
        max_reply_bytes()  # a bad EVALH_MAX_REPLY_MB stops the run before any call, not on each row
    except ConfigError as error:
        ctx.problems.add_exception(error)
    remember_valid_shapes()  # the shapes this load found valid: the next run needs no jsonschema for them
    ctx.problems.raise_if_any(document.file)
    return suite


@dataclass(frozen=True)
class _Skipped:
    """What the schema refused, left out of the later stages: top-level keys, inline tests, and the
    assertions of inline tests (so that the test's other assertions are still checked)."""

    keys: frozenset[str | int] = frozenset()
    tests: frozenset[int] = frozenset()
    asserts: Mapping[int, frozenset[int]] = field(default_factory=dict)  # test -> its refused asserts

    @staticmethod
    def of(paths: Iterable[JsonPath]) -> _Skipped:
        keys: set[str | int] = set()
        tests: set[int] = set()
        asserts: dict[int, set[int]] = {}
        for path in paths:
            if len(path) > 3 and path[0] == "tests" and path[2] == "assert" and isinstance(path[3], int):
                asserts.setdefault(int(path[1]), set()).add(path[3])
            elif len(path) > 1 and path[0] == "tests" and isinstance(path[1], int):
                tests.add(path[1])
            elif path:
                keys.add(path[0])
        kept = {test: frozenset(found) for test, found in asserts.items() if test not in tests}
        return _Skipped(frozenset(keys), frozenset(tests), kept)

    def value(self, data: Mapping[str, Any], key: str) -> Any:
        return None if key in self.keys else data.get(key)


def _check_schema(document: Document, ctx: LoadContext) -> _Skipped:
    """The whole config against the schema; inline tests one by one, through the shape cache. Returns
    what the problems found make unusable."""
    data: Mapping[str, Any] = document.data
    tests = data.get("tests")
    inline = isinstance(tests, list)
    top = {**data, "tests": []} if inline else data
    found = drop_unknown_keys(config_checker().problems(top), document.data, document.where)
    problems = [(problem, problem.path) for problem in found]
    if isinstance(tests, list):
        plain = [item for item in tests if isinstance(item, Mapping) and GENERATOR_KEY not in item]
        checked = iter(ctx.test_checker.problems_of_each(plain))  # most of a config's tests
        for index, item in enumerate(tests):
            if isinstance(item, Mapping) and GENERATOR_KEY not in item:
                found = next(checked)
            elif isinstance(item, Mapping):
                found = defs_checker("testGenerator").problems(item)
            else:
                found = defs_checker("test", allow_string=True).problems(item)
            if not found:
                continue  # most tests (a shape validated before)
            found = drop_unknown_keys(found, item, functools.partial(_test_where, document, index))
            problems.extend((problem, ("tests", index, *problem.path)) for problem in found)
    for problem, path in problems:
        ctx.problems.add(problem.message, where=document.where(path), hint=problem.hint, kind=SchemaError)
    return _Skipped.of(path for _, path in problems)


def _test_where(document: Document, index: int, path: JsonPath) -> str:
    return document.where(("tests", index, *path))


@dataclass(frozen=True)
class _Inputs:
    """What resolving the config uses besides the document: its env, --var, --grader, and what the
    schema refused."""

    env: dict[str, str]
    cli_vars: Mapping[str, str]
    grader: str | None
    skip: _Skipped


def _resolve(document: Document, ctx: LoadContext, inputs: _Inputs) -> Suite:
    filters = _nunjucks_filters(document, ctx, inputs.skip)
    with user_filters(make_user_filters(filters, ctx.base_dir)):  # the config's own renders use them
        suite = _resolve_suite(document, ctx, inputs)
    return replace(suite, nunjucks_filters=filters)


def _nunjucks_filters(document: Document, ctx: LoadContext, skip: _Skipped) -> dict[str, str]:
    """``nunjucksFilters``: each entry checked (its file, its function) without running it. promptfoo
    documents plain paths (``./filters/shout.js``); evalh also takes ``file://`` ones."""
    filters: dict[str, str] = {}
    for name, written in (skip.value(document.data, "nunjucksFilters") or {}).items():
        ref = written if not isinstance(written, str) or is_file_ref(written) else f"file://{written}"
        problem = filter_problem(str(name), ref, ctx.base_dir)
        if problem is None:
            filters[str(name)] = ref
        else:
            ctx.problems.add_exception(
                ConfigError(
                    problem,
                    where=document.where(("nunjucksFilters", name)),
                    hint="Map a filter name to a JavaScript file (module.exports = (value, ...args) => ...) "
                    "or a Python function: file://filters.py:name",
                )
            )
    return filters


def _resolve_suite(document: Document, ctx: LoadContext, inputs: _Inputs) -> Suite:
    env, cli_vars, grader, skip = inputs.env, inputs.cli_vars, inputs.grader, inputs.skip
    data: Mapping[str, Any] = document.data
    prompts = (
        load_prompts(data["prompts"], document, ctx, template_env(env))
        if skip.value(data, "prompts") is not None
        else []
    )
    key = "providers" if "providers" in data else "targets" if "targets" in data else None
    providers = load_providers(data[key], key, document, ctx) if key and key not in skip.keys else []
    command_line = skip.value(data, COMMAND_LINE_KEY)
    warn_ignored_options(command_line, document, ctx)
    suite_default = None
    if grader:
        suite_default = parse_choice(grader, "--grader", str(Path.cwd()))
        check_choice(suite_default, "--grader", ctx)
    else:
        suite_default = command_line_grader(command_line, document, ctx)
    default_test = skip.value(data, "defaultTest")
    defaults = replace(_defaults(default_test, document, ctx, cli_vars), env=template_env(env))
    tests_value = skip.value(data, "tests")
    raw_tests = collect_tests(tests_value, document, ctx, skip.tests, skip.asserts) if tests_value else []
    scenarios = skip.value(data, "scenarios")
    if scenarios is not None:  # promptfoo runs them after the tests, and then no empty test
        raw_tests += scenario_tests(scenarios, document, ctx, defaults.data.get("metadata") or {})
    elif not raw_tests and not ctx.problems and "scenarios" not in skip.keys:
        raw_tests = [RawTest({}, DocOrigin(document, ("tests",)))]  # promptfoo runs one empty test
    extensions = load_extensions(skip.value(data, "extensions"), document, ctx)
    raw_tests, defaults = before_all(extensions, raw_tests, defaults, (prompts, providers), document, ctx)
    stored = stored_names([defaults.data.get("options"), *(raw.data.get("options") for raw in raw_tests)])
    defaults = replace(defaults, stored=stored)
    tests: list[TestCase] = []
    origins: dict[int, Origin] = {}
    for position, raw in enumerate(raw_tests):
        if raw.valid:  # a test with list-valued vars makes one test per combination
            made = build_tests(raw, position, len(tests), defaults, ctx)
            origins.update((test.index, raw.origin) for test in made)
            tests.extend(made)
    checker = AssertionChecker(ctx, suite_default, ctx.where_of)
    checker.check_tests(tests)
    if checker.default_grader is not None:  # judges with no grader use promptfoo's default
        suite_default = checker.default_grader.choice
    checker.warn_toolless(providers)
    check_user_models(tests, suite_default, ctx)
    if "prompts" not in skip.keys:  # else the prompts they name are not loaded
        check_prompt_refs(raw_tests, defaults.data, defaults.origin, prompts, ctx)
        check_provider_prompt_refs(providers, prompts, ctx)
    if key is None or (key not in skip.keys and providers):  # else the providers they name did not load
        check_provider_refs(raw_tests, defaults.data, defaults.origin, providers, ctx)
    # a refused top-level key may be the providers or prompts misspelt: no follow-on problem about them
    checked_key = key if key or not skip.keys else "refused"
    check_recorded_outputs(tests, providers, origins, ctx)
    prompts, providers = _check_outputs(tests, prompts, providers, checked_key, origins, ctx)
    if not skip.tests and not {"tests", "defaultTest"} & skip.keys:  # else vars are missing from them
        _check_prompt_vars(prompts, tests, origins, ctx, stored | {CONVERSATION_VAR})
    derived = load_derived_metrics(skip.value(data, "derivedMetrics"), document, ctx, tests)
    options = skip.value(data, "evaluateOptions") or {}
    output_path = skip.value(data, "outputPath")
    tracing = skip.value(data, "tracing") or {}
    forwarding_where = str(
        document.place(("tracing", "forwarding")) if "forwarding" in tracing else "tracing"
    )
    tracing_settings = load_tracing(tracing, env, forwarding_where)
    if not tracing_settings.enabled and "tracing" not in skip.keys:  # a refused block is said once, as such
        checker.warn_untraced()
    return Suite(
        tests=tuple(tests),
        prompts=tuple(prompts),
        providers=tuple(providers),
        description=data.get("description"),
        default_provider=suite_default,
        evaluate_options=command_line_run_options(command_line, options),
        output_paths=tuple([output_path] if isinstance(output_path, str) else output_path or ()),
        env=env,
        metadata=dict(skip.value(data, "metadata") or {}),
        config_path=str(ctx.config_file),
        raw_config=RedactedConfig.of(data) if ctx.report_config else {},
        input_files=tuple(str(path) for path in (ctx.config_file, *ctx.other_configs, *ctx.files_read)),
        derived_metrics=derived,
        tracing=tracing_settings,
        extensions=extensions,
    )


def _defaults(value: Any, document: Document, ctx: LoadContext, cli_vars: Mapping[str, str]) -> Defaults:
    defaults = _default_test(value, document, ctx, cli_vars)
    if defaults.origin is None or not isinstance(defaults.data.get("vars"), str | list):
        return defaults
    try:  # `vars: file://...`, loaded once here rather than for each test
        variables = load_vars(defaults.data, defaults.origin, ("defaultTest",), ctx)
    except ConfigError as error:
        ctx.problems.add_exception(error)
        variables = {}
    return replace(defaults, data={**defaults.data, "vars": variables})


def _default_test(value: Any, document: Document, ctx: LoadContext, cli_vars: Mapping[str, str]) -> Defaults:
    if not isinstance(value, str):
        origin = DocOrigin(document, ("defaultTest",)) if value is not None else None
        return Defaults(data=value or {}, origin=origin, cli_vars=dict(cli_vars))
    where = document.place(("defaultTest",))
    try:
        source = ctx.read_document(ctx.expand(value, where)[0], where)
    except ConfigError as error:
        ctx.problems.add_exception(error)
        return Defaults(cli_vars=dict(cli_vars))
    data = source.data if isinstance(source.data, Mapping) else {}
    problems = drop_unknown_keys(defs_checker("test").problems(source.data), source.data, source.where)
    if "description" in data:
        ctx.problems.add("defaultTest cannot have a description", where=source.where(("description",)))
    for problem in problems:
        ctx.problems.add(
            problem.message, where=source.where(problem.path), hint=problem.hint, kind=SchemaError
        )
    return Defaults(data=data, origin=DocOrigin(source, ()), cli_vars=dict(cli_vars))


def _listing(tests: list[TestCase], origins: Mapping[int, Origin]) -> str:
    shown = [f"{test.path} ({origins[test.index].locate(())})" for test in tests[:_LIST_LIMIT]]
    more = len(tests) - len(shown)
    return ", ".join(shown) + (f" and {more} more" if more > 0 else "")


def _check_outputs(
    tests: list[TestCase],
    prompts: list[Prompt],
    providers: list[ProviderSpec],
    key: str | None,
    origins: Mapping[int, Origin],
    ctx: LoadContext,
) -> tuple[list[Prompt], list[ProviderSpec]]:
    """Tests without a recorded output need a provider and a prompt; fully recorded suites need neither."""
    missing = [test for test in tests if not test.has_output]
    if not missing:
        return prompts or [RECORDED_PROMPT], providers or [RECORDED_PROVIDER]
    if not providers and key is None:
        ctx.problems.add(
            "the config names no provider, and these tests have no recorded output: "
            f"{_listing(missing, origins)}",
            where=ctx.display,
            hint="Add providers: (e.g. providers: [openai:chat:gpt-4o-mini], or echo to try it out), "
            "or give each test the model's answer as output:",
        )
    elif not prompts and providers and not ctx.problems:
        ctx.problems.add(
            f"the config has providers but no prompts, and these tests need a provider call: "
            f"{_listing(missing, origins)}",
            where=ctx.display,
            hint="Add prompts: (e.g. prompts: ['Answer briefly: {{question}}'])",
        )
    return prompts, providers


def _check_prompt_vars(
    prompts: list[Prompt],
    tests: list[TestCase],
    origins: Mapping[int, Origin],
    ctx: LoadContext,
    run_vars: frozenset[str],
) -> None:
    """A variable a prompt uses that some test does not define renders empty, as in promptfoo: a
    warning naming the prompt and the tests, found before anything runs (an error with --strict)."""
    for index, prompt in enumerate(prompts):
        where = ctx.where_of.get(id(prompt), prompt.path)
        texts = prompt_texts(prompt.raw)
        try:
            names = frozenset().union(*(referenced_names(text, where=where) for text in texts))
        except ConfigError:
            continue  # the syntax error is reported already
        if not names:
            continue
        lacking: dict[str, list[TestCase]] = {}
        for test in tests:
            if not prompt_allowed(test, prompt):
                continue
            if VARS_TRANSFORM_KEY in test.options and not ctx.run_transforms:
                continue  # its transformVars (run by evalh run, not validate) may define them
            for name in names.difference(test.vars, run_vars):  # run_vars: set when the test runs
                lacking.setdefault(name, []).append(test)
        for name, missing in sorted(lacking.items()):
            empty = "" if is_strict() else " (it renders empty for them)"
            error = ConfigError(
                f"prompt {prompt.label!r} uses the variable {name!r}, which these tests do not define"
                f"{empty}: {_listing(missing, origins)}",
                where=where,
                hint=f"Add {name}: ... to their vars (or to defaultTest.vars), or pass --var {name}=VALUE",
            )
            if is_strict():
                ctx.problems.add_exception(error)
            else:  # the same key as the render's warning, so the run does not repeat it
                warn(error, where=prompt_warning_key(prompt, index), subject=f"'{name}' is undefined")
