"""Semantic checks after the schema: what the JSON Schema cannot know.

Each assertion's type has a handler in the registry; its value, once rendered, has the type's declared
shape (``value_schema``, the declaration the schema's per-type rule is generated from, so a value as
written is not checked twice) and passes the type's ``check`` (what a shape cannot say: a regex
compiles, min <= max); handlers rely on this and never re-check. A required value is present, a
threshold lies within the type's declared bounds, and every provider it needs exists and has the
capability (embeddings for ``similar``, a chat model for judges). Assertions that need a grader and
have none take promptfoo's default grader (config/default_grader.py), named once in a notice with the
three ways to choose another.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Hashable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from evalh.assertions.base import needed_providers
from evalh.assertions.promptfoo_only import unknown_type
from evalh.assertions.registry import ASSERTIONS, AssertionDef
from evalh.common.notices import is_strict, notice, warn
from evalh.config.default_grader import DefaultGrader, default_grader
from evalh.config.files import LoadContext
from evalh.config.locate import close_matches, format_path
from evalh.config.schema import SchemaProblem
from evalh.config.shapes import ShapeCachedValidator, fragment_checker
from evalh.errors import ConfigError, Where
from evalh.model import RECORDED_PROVIDER_ID, AssertionSpec, ProviderChoice, ProviderSpec, TestCase
from evalh.providers.registry import capabilities_of, find_entry

__all__ = ["MAX_SET_DEPTH", "AssertionChecker", "value_problem", "value_problems"]

MAX_SET_DEPTH = 5  # promptfoo allows no assert-set inside another; a few levels are plenty

_SIMILARITY_OK = frozenset(
    {"similar", "similar:cosine"}
)  # a sentence-similarity provider computes cosine only
_NEED_WORDS = {"embedding": "embeddings", "text": "a chat (text) model", "tokens": "token embeddings"}
_GRADER_LIST_LIMIT = 10
# Providers that answer without a model: as a judge, echo returns the grading prompt, whose example
# verdict then parses as a pass, so every model-graded assertion would pass.
_CANNOT_GRADE = frozenset({"echo", RECORDED_PROVIDER_ID})


def value_problems(
    definition: AssertionDef, value: Any, config: Mapping[str, Any], *, shape_checked: bool = False
) -> list[SchemaProblem]:
    """What is wrong with an assertion's (rendered) value: its declared shape first (unless the schema
    has ``shape_checked`` it), then the type's own check, which may rely on the shape. Paths start at
    ``value``. The handler re-checks neither."""
    if value is None and definition.requires_value:
        return [SchemaProblem(("value",), "needs a value")]
    if definition.value_schema is not None and value is not None and not shape_checked:
        shaped = _shape_validator(definition.name).problems(value)
        if shaped:
            return [replace(problem, path=("value", *problem.path)) for problem in shaped]
    problem = definition.check(value, config) if definition.check is not None else None
    return [SchemaProblem(("value",), problem)] if problem else []


def value_problem(definition: AssertionDef, value: Any, config: Mapping[str, Any]) -> str | None:
    """The first of :func:`value_problems` as ``value.key: message`` (None when the value is fine)."""
    found = value_problems(definition, value, config)
    return f"{format_path(found[0].path)}: {found[0].message}" if found else None


@functools.cache
def _shape_validator(name: str) -> ShapeCachedValidator:
    return fragment_checker(ASSERTIONS[name].value_schema or {})


# The assertion families that read a row's trace (evalh/assertions/trace_checks.py, trajectory.py).
TRACE_FAMILIES = frozenset({"trace", "trajectory"})
# the provider config key each tool-call assertion checks calls against (assertions/tool_calls.py)
_TOOL_KEYS = {
    "is-valid-openai-tools-call": "tools",
    "is-valid-openai-function-call": "functions",
    "is-valid-function-call": "functions",
}


def _flattened(specs: Iterable[AssertionSpec]) -> Iterator[AssertionSpec]:
    """Every assertion of a list, the children of assert-sets included."""
    for spec in specs:
        yield spec
        yield from _flattened(spec.children)


@dataclass
class AssertionChecker:
    """Checks every assertion of every test; problems go to ``ctx.problems``."""

    ctx: LoadContext
    suite_default: ProviderChoice | None
    where_of: Mapping[int, Where]  # id(spec) -> "file:line:col path"
    registry: Mapping[str, AssertionDef] = field(default_factory=lambda: ASSERTIONS)  # imports as asked
    needs_grader: list[str] = field(default_factory=list)
    refused_graders: set[str] = field(default_factory=set)
    # promptfoo's default grader, taken when a judge has none (set once the first judge needs it)
    default_grader: DefaultGrader | None = None
    # The assertions found clean, by what their check reads (see _check): 5,000 tests repeat a few
    # dozen, each checked once instead of once per test. Only clean ones: a problem is said at each place.
    clean: set[Hashable] = field(default_factory=set)
    # The types and thresholds of the assertions whose checks, but for the value's, read only the
    # assertion and found nothing (see _check_fully): one with another value has only its value checked.
    clean_but_value: set[tuple[str, float | None]] = field(default_factory=set)
    noted_types: set[str] = field(default_factory=set)  # the types (as written) _note keeps
    # Noted while check_tests walks every assertion (children after their set), for the warnings after
    # it, which each walked all 30,000 again: the first trace assertion, and the tool-call ones in order.
    first_traced: AssertionSpec | None = None
    tool_calls: list[AssertionSpec] = field(default_factory=list)

    def check_tests(self, tests: Iterable[TestCase]) -> None:
        for test in tests:
            for spec in test.asserts:
                self._check(spec, test)
        self._report_missing_grader()

    def warn_untraced(self) -> None:
        """A trace assertion (``trajectory:*``, ``trace-*``) in a config without tracing would be an ERROR
        on every row: say so once, at load (a warning; an error under --strict). After check_tests."""
        spec = self.first_traced
        if spec is not None:
            message = f"{spec.full_type} grades the row's trace, but the config does not trace"
            hint = "Add `tracing: {enabled: true}` to the config, or every row it grades is an ERROR"
            self._warn(message, self._where(spec), hint, subject="tracing")

    def warn_toolless(self, providers: Iterable[ProviderSpec]) -> None:
        """A tool-call assertion checks each call against the provider's ``config.tools`` (``functions``):
        a provider without them fails every row it grades, so say so at load (a
        warning; an error under --strict), with a did-you-mean for a misspelt key (``tool:``). After
        check_tests."""
        specs = self.tool_calls
        for provider in providers:
            spec = next(
                (s for s in specs if not s.negate and _TOOL_KEYS[s.base_type] not in provider.config), None
            )
            if spec is None or provider.id == RECORDED_PROVIDER_ID:
                continue
            key = _TOOL_KEYS[spec.base_type]
            near = close_matches(key, [str(name) for name in provider.config])
            message = (
                f"{spec.full_type} checks each call against the provider's config.{key}, but "
                f"{provider.path or 'provider'} ({provider.display}) has no `{key}`"
                + (f" (it has `{near}`: did you mean `{key}`?)" if near else "")
            )
            hint = f"Add `{key}:` to that provider's config, or every row it grades fails"
            self._warn(message, self._where(spec), hint, subject="tools")

    def _note(self, spec: AssertionSpec, definition: AssertionDef | None) -> None:
        """Keeps what the warnings after check_tests look for (see first_traced)."""
        traced = definition is not None and definition.family in TRACE_FAMILIES
        if traced and self.first_traced is None:
            self.first_traced = spec
        if spec.base_type in _TOOL_KEYS:
            self.tool_calls.append(spec)
        elif not traced:
            return
        self.noted_types.add(spec.type)  # for _check, which notes a repeated assertion by its type

    def _where(self, spec: AssertionSpec) -> Where:
        return self.where_of.get(id(spec), spec.path)

    def _check(self, spec: AssertionSpec, test: TestCase, depth: int = 1) -> None:
        # as written in the config, the schema's per-type rule (generated from the same declaration) has
        # checked the value's shape; a rendered template or a loaded file:// is new
        value = spec.value
        kind = type(value)
        written = spec.raw.get("value")
        as_written = written is not None and type(written) is kind and written == value
        # ``key``: what the checks of an assertion read when they read nothing but it (see _check_fully):
        # its type, its value (a scalar, with its type: 1, 1.0 and true are equal), whether it is as
        # written, and its threshold. None for any other.
        key = None
        if kind in _SCALAR_VALUES and not spec.children and not spec.config:
            key = (spec.type, kind, value, spec.threshold, as_written)
            if key in self.clean:  # the same assertion was checked clean
                if spec.type in self.noted_types:
                    self._note(spec, self.registry.get(spec.base_type))
                return
        self._check_fully(spec, test, depth, as_written, key)

    def _check_fully(
        self, spec: AssertionSpec, test: TestCase, depth: int, as_written: bool, key: Hashable | None
    ) -> None:
        definition = self.registry.get(spec.base_type)
        self._note(spec, definition)
        # its checks but the value's read nothing but the assertion: not its test's or the suite's
        # providers (needs), its test's other assertions (comparisons) or children
        alone = definition is not None and not (
            definition.needs or definition.compares_outputs or spec.children
        )
        as_written = as_written and definition is not None and definition.value_schema is not None
        where = self._where(spec)
        if alone and (spec.type, spec.threshold) in self.clean_but_value:  # only the value is new
            assert definition is not None  # (alone)
            if self._check_value(spec, definition, where, as_written) and key is not None:
                self.clean.add(key)
            return
        if spec.children and depth > MAX_SET_DEPTH:
            self._note_unchecked(spec.children)
            self.ctx.problems.add(
                f"assert-sets are nested more than {MAX_SET_DEPTH} deep",
                where=where,
                hint="Flatten the inner sets into this one (a report lists every set's results once per "
                "enclosing set, so each level doubles its size)",
            )
            return
        if definition is None:
            self._unknown_type(spec, where)
            self._note_unchecked(spec.children)
            return
        if definition.compares_outputs:
            self._check_comparison(spec, test, depth, where)
        clean = self._check_value(spec, definition, where, as_written)
        clean = self._check_threshold(spec, definition, where) and clean
        for need in definition.needs:
            self._check_need(spec, test, need, where)
        for child in spec.children:
            self._check(child, test, depth + 1)
        if alone and clean:
            self.clean_but_value.add((spec.type, spec.threshold))
            if key is not None:
                self.clean.add(key)

    def _note_unchecked(self, specs: Iterable[AssertionSpec]) -> None:
        """Notes the children _check does not go into (the set is refused): warned about all the same."""
        for spec in _flattened(specs):
            self._note(spec, self.registry.get(spec.base_type))

    def _check_comparison(self, spec: AssertionSpec, test: TestCase, depth: int, where: Where) -> None:
        """select-best and max-score grade the test's outputs against each other, after its other
        assertions (promptfoo stops the run, or ignores them, where they do not fit)."""
        if spec.negate:
            self.ctx.problems.add(
                f"{spec.type}: {spec.base_type} has no not- form (it picks one winner among the outputs)",
                where=where,
                hint=f"Use {spec.base_type}: the outputs it does not pick fail",
            )
        elif depth > 1:
            self.ctx.problems.add(
                f"{spec.type} compares the test's outputs, so it goes in the test's assert list, "
                "not in an assert-set",
                where=where,
                hint="Move it up to the test's assert list",
            )
        elif spec.base_type == "max-score" and all(self._compares(s) for s in test.asserts):
            self.ctx.problems.add(
                "max-score needs another assertion in the test: it picks the output whose other "
                "assertions score highest",
                where=where,
                hint="Add the assertions to score the outputs by (contains, llm-rubric, ...)",
            )

    def _compares(self, spec: AssertionSpec) -> bool:
        definition = self.registry.get(spec.base_type)
        return definition is not None and definition.compares_outputs

    def _check_value(
        self, spec: AssertionSpec, definition: AssertionDef, where: Where, as_written: bool
    ) -> bool:
        """Says each problem of the value (True when there was none). ``as_written``: the schema checked
        its shape."""
        if spec.value is None and definition.requires_value:
            self.ctx.problems.add(f"{spec.type} needs a value", where=where, hint="Add value: ... to it")
            return False
        problems = value_problems(definition, spec.value, spec.config, shape_checked=as_written)
        for problem in problems:
            place = f"{where}.{format_path(problem.path)}"
            error = ConfigError(f"{spec.type}: {problem.message}", where=place, hint=problem.hint)
            if problem.ignorable and not is_strict():
                warn(error, where=place, subject=problem.message)
            else:
                self.ctx.problems.add_exception(error)
        return not problems

    def _unknown_type(self, spec: AssertionSpec, where: Where) -> None:
        match = close_matches(spec.base_type, list(self.registry))
        prefix = "not-" if spec.negate else ""
        message, hint = unknown_type(spec.type, prefix + match if match else None)
        self.ctx.problems.add(message, where=where, hint=hint)

    def _check_threshold(self, spec: AssertionSpec, definition: AssertionDef, where: Where) -> bool:
        """Says what is wrong with the threshold, or that it is ignored (True when nothing was said)."""
        if spec.threshold is None:
            if definition.requires_threshold:
                self.ctx.problems.add(
                    f"{spec.type} needs a threshold",
                    where=f"{where}.threshold",
                    hint=f"Set threshold: the {definition.threshold_meaning} that passes",
                )
            return not definition.requires_threshold
        if not math.isfinite(spec.threshold):
            self.ctx.problems.add(
                f"threshold must be a finite number (got {spec.threshold})",
                where=f"{where}.threshold",
                hint="A NaN or infinite threshold would make the assertion always fail or always pass",
            )
            return False
        if not definition.threshold_applies:
            self._ignored_threshold(spec, where)
            return False
        problem = definition.threshold_problem(spec.threshold)
        if problem:
            self.ctx.problems.add(
                problem,
                where=f"{where}.threshold",
                hint=f"{spec.type}'s threshold is a {definition.threshold_meaning}",
            )
        return not problem

    def _ignored_threshold(self, spec: AssertionSpec, where: Where) -> None:
        """A pass/fail type has no threshold: promptfoo ignores one silently; evalh says so (a warning,
        an error under --strict), since the author expected it to matter."""
        place = f"{where}.threshold"
        shown = f"threshold {spec.threshold:g}"
        message = f"{spec.type} has no threshold (it passes or fails), so {shown} is ignored"
        hint = "Remove the threshold, or use a scored type (`evalh list assertions` shows which take one)"
        self._warn(message, place, hint, subject="threshold")

    def _warn(self, message: str, where: Where, hint: str, *, subject: str) -> None:
        """A warning (once per ``subject``), or a problem of the config under --strict."""
        if is_strict():
            self.ctx.problems.add(message, where=where, hint=hint)
        else:
            warn(ConfigError(message, where=where, hint=hint), where=where, subject=subject)

    def _check_need(self, spec: AssertionSpec, test: TestCase, need: str, where: Where) -> None:
        providers = needed_providers(spec, test, need, self.suite_default)
        if not providers:
            self.needs_grader.append(f"{where} ({spec.full_type})")
            self.default_grader = self.default_grader or default_grader()
            providers = needed_providers(spec, test, need, self.default_grader.choice)
        for provider in providers:  # a list of models: each must serve the need
            self._check_capability(spec, provider, need, where)

    def _check_capability(self, spec: AssertionSpec, provider: ProviderSpec, need: str, where: Where) -> None:
        if need == "text" and provider.id in _CANNOT_GRADE:
            self._cannot_grade(spec, provider, where)
            return
        capabilities = _capabilities(provider.id)
        if capabilities is None:
            return  # an unknown id: reported where the provider is written
        if need in capabilities or (
            need == "embedding" and "similarity" in capabilities and spec.base_type in _SIMILARITY_OK
        ):
            return
        self.ctx.problems.add(
            f"{spec.type} needs {_NEED_WORDS.get(need, need)}, but provider {provider.id!r} "
            f"({_source(provider)}) only offers {', '.join(capabilities) or 'nothing'}",
            where=where,
            hint=_capability_hint(spec, need, capabilities),
        )

    def _cannot_grade(self, spec: AssertionSpec, provider: ProviderSpec, where: Where) -> None:
        """Reported once per place the provider is written (a --grader would else repeat per test)."""
        key = provider.path or str(where)
        if key in self.refused_graders:
            return
        self.refused_graders.add(key)
        self.ctx.problems.add(
            f"{spec.type} needs a model to grade, but provider {provider.id!r} ({_source(provider)}) "
            "cannot grade: it answers without a model, so every verdict would be a pass",
            where=where,
            hint=_capability_hint(spec, "text", ()),
        )

    def _report_missing_grader(self) -> None:
        """Judges without a grader take promptfoo's default (as promptfoo does): say which, once."""
        if not self.needs_grader or self.default_grader is None:
            return
        shown = self.needs_grader[:_GRADER_LIST_LIMIT]
        more = len(self.needs_grader) - len(shown)
        listing = "; ".join(shown) + (f"; and {more} more" if more > 0 else "")
        grader = self.default_grader.choice.text
        assert grader is not None  # a DefaultGrader always names a judge
        notice(
            ConfigError(
                f"no grader is set for {listing}: they use promptfoo's default grader, {grader.id} "
                f"({self.default_grader.because})",
                where=self.ctx.display,
                hint="Choose one for the whole suite with defaultTest.options.provider "
                "(e.g. openai:chat:gpt-4o-mini), for one assertion with its provider: key, "
                "or on the command line with --grader <provider id>",
            ),
            where=self.ctx.display,
            subject="default grader",
        )


_SCALAR_VALUES = frozenset({str, int, float, bool, type(None)})


@functools.lru_cache(maxsize=256)
def _capabilities(provider_id: str) -> tuple[str, ...] | None:
    """The registry's capabilities of an id (None when unknown); cached, 10,000 tests ask often."""
    return capabilities_of(provider_id) if find_entry(provider_id) is not None else None


def _source(provider: ProviderSpec) -> str:
    return f"from {provider.path}" if provider.path else "the default"


def _capability_hint(spec: AssertionSpec, need: str, capabilities: tuple[str, ...]) -> str:
    if need == "embedding" and "similarity" in capabilities:
        return (
            f"A sentence-similarity provider computes cosine similarity only; use similar or similar:cosine, "
            f"or an embedding provider (local, openai:embedding:<model>, ...) for {spec.type}"
        )
    if need == "tokens":
        return (
            f"{spec.type} needs per-token vectors: use provider: local (the bundled model) or another "
            "local:<model>; API embedding endpoints return one vector per text"
        )
    if need == "embedding":
        return (
            "Give it an embedding provider: provider: local (the bundled model), "
            "openai:embedding:<model>, ..., or a typed map provider: {embedding: local, text: <chat model>}"
        )
    return (
        "Give it a chat model: provider: openai:chat:<model>, anthropic:messages:<model>, "
        "ollama:chat:<model>, ..."
    )
