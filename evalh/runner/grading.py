"""Running one assertion: look up its handler, give it a context, and finalize its result.

Shared by top-level assertions and the children of an ``assert-set`` (through ``services.grade``), so
both follow exactly the same rules. A type registered with ``output_check`` (the deterministic text and
JSON checks) reads only its assertion and the row's output: it is called without a context aimed at the
assertion, with the row's output text computed once (:func:`grade_row`), and settled by the same rules.
"""

from __future__ import annotations

import traceback
from collections.abc import Iterable, Sequence
from typing import Any

from evalh.assertions.base import AssertionContext, EmbedRequest, output_as_text
from evalh.assertions.registry import AssertionDef, Direction, OutputCheckFn, PrefetchFn, get_assertion
from evalh.errors import EvalhError
from evalh.model import AssertionResult, AssertionSpec, GradedAssertion, Measurement, PassFail
from evalh.runner.scoring import decide, finalize, settle, settle_pass_fail
from evalh.runner.transforming import transform_for_assertion, transforms_assertion

__all__ = [
    "GradingPlans",
    "TypePlan",
    "collect_prefetch",
    "effective_threshold",
    "grade_assertion",
    "grade_row",
    "positive_verdict",
]


def effective_threshold(spec: AssertionSpec, definition: AssertionDef) -> float | None:
    return spec.threshold if spec.threshold is not None else definition.default_threshold


def _context_for(spec: AssertionSpec, definition: AssertionDef, ctx: AssertionContext) -> AssertionContext:
    return ctx.for_assertion(spec, effective_threshold(spec, definition))


class TypePlan:
    """What an assertion type (as written: ``not-contains`` apart from ``contains``) decides for
    grading, worked out once per run rather than for each of its 5,000 assertions: its definition,
    whether grading calls its output check directly, its default threshold, and the refusal of each
    threshold it was given (:func:`_refusal`; a spec's threshold is the only part of it that varies).
    A spec with its own ``transform`` or ``binary`` still decides those itself."""

    __slots__ = (
        "_refusals",
        "binary",
        "check",
        "compares",
        "default_threshold",
        "definition",
        "direction",
        "may_refuse",
        "pass_fail",
        "prefetch",
        "reads_text",
    )

    def __init__(self, definition: AssertionDef | None) -> None:
        self.definition = definition
        self.check: OutputCheckFn | None = None
        self.reads_text = self.binary = self.compares = self.may_refuse = self.pass_fail = False
        self.default_threshold: float | None = None
        self.direction: Direction | None = None
        self.prefetch: PrefetchFn | None = None
        if definition is not None:  # an unknown type: grade_assertion's error
            self.check = definition.on_output
            self.reads_text = definition.on_output_text
            self.default_threshold = definition.default_threshold
            self.direction = definition.direction
            self.binary = definition.binary_score
            self.compares = definition.compares_outputs  # graded across rows (comparing.py)
            self.prefetch = definition.prefetch
            # whether a threshold may be refused (_refusal): never for a pass/fail type that needs none
            self.may_refuse = definition.requires_threshold or definition.direction is not None
        # grade_row calls its check itself: an output check of the text, without a threshold to refuse
        # or compare (a pass/fail text check: contains, equals, regex, ...)
        self.pass_fail = self.check is not None and self.reads_text and not self.may_refuse
        self._refusals: dict[float | None, AssertionResult | None] = {}

    def refusal(self, threshold: float | None) -> AssertionResult | None:
        """:func:`_refusal` of ``threshold``, decided once per threshold (a frozen result, shared)."""
        try:
            return self._refusals[threshold]
        except KeyError:
            assert self.definition is not None, "only a registered type is graded"
            refused = self._refusals[threshold] = _refusal(self.definition, threshold)
            return refused


class GradingPlans:
    """One run's :class:`TypePlan` of each assertion type, by the type as written (``spec.type``).

    Per run, not per process: the registry is read when the run first grades a type."""

    __slots__ = ("by_type",)

    def __init__(self) -> None:
        self.by_type: dict[str, TypePlan] = {}  # read directly by grade_row (a call less per assertion)

    def of(self, spec: AssertionSpec) -> TypePlan:
        plan = self.by_type.get(spec.type)
        if plan is None:
            plan = self.by_type[spec.type] = TypePlan(get_assertion(spec.base_type))
        return plan

    def any_across_rows(self, tests_asserts: Iterable[Sequence[AssertionSpec]]) -> bool:
        """Whether some assertion of these tests' (assert-set children included) is graded across rows
        (``compares``) or declares the texts it embeds (``prefetch``): when none is, no row needs to be
        asked either (``comparing.compares_outputs``, :func:`collect_prefetch`). Each tuple walked once."""
        seen: set[int] = set()
        for asserts in tests_asserts:
            if id(asserts) in seen:  # a test's assertions, shared by its rows (prompts x providers)
                continue
            seen.add(id(asserts))
            for spec in asserts:
                plan = self.by_type.get(spec.type) or self.of(spec)
                if plan.compares or plan.prefetch is not None:
                    return True
                if spec.children and self.any_across_rows([spec.children]):
                    return True
        return False


async def grade_row(
    specs: Sequence[AssertionSpec], ctx: AssertionContext, plans: GradingPlans | None = None
) -> tuple[GradedAssertion, ...]:
    """Each of a row's assertions graded against ``ctx`` (the row's context) in order, as
    :func:`grade_assertion` grades it; the output's text is computed once for the output checks.
    ``plans``: the run's (each type decided once per run), else this row's own."""
    plans = GradingPlans() if plans is None else plans
    by_type = plans.by_type
    graded: list[GradedAssertion] = []
    output = ctx.output
    text: str | None = None
    for spec in specs:  # one tight loop: most assertions of a run are pass/fail text checks
        plan = by_type.get(spec.type) or plans.of(spec)
        if plan.check is None or transforms_assertion(spec):
            graded.append(await grade_assertion(spec, ctx))
            continue
        if text is None and plan.reads_text:
            text = _text_of(output)
        if not plan.pass_fail or text is None:
            graded.append(_check_output(spec, plan, output, text))
            continue
        try:  # _check_output of a pass_fail plan, without its threshold and refusal steps
            measured = plan.check(spec, output, text)
            if type(measured) is tuple:
                graded.append(settle_pass_fail(spec, measured))
            else:
                graded.append(_settled_check(spec, plan, measured, None))
        except Exception as error:
            graded.append(_failed_check(spec, error))
    return tuple(graded)


async def grade_assertion(spec: AssertionSpec, ctx: AssertionContext) -> GradedAssertion:
    """Run ``spec`` against ``ctx``'s output; a crash in the handler becomes an ERROR result."""
    definition = get_assertion(spec.base_type)
    if definition is None:
        return finalize(spec, AssertionResult.failure(f"unknown assertion type {spec.type!r}"))
    if definition.on_output is not None and not transforms_assertion(spec):
        return _check_output(spec, TypePlan(definition), ctx.output, None)
    try:
        aimed = _context_for(spec, definition, ctx)
        transformed = await transform_for_assertion(aimed) if transforms_assertion(spec) else aimed
        if isinstance(transformed, AssertionResult):
            return finalize(spec, transformed)
        measured = await _measure(definition, transformed)
        if not isinstance(measured, AssertionResult):
            return settle(
                spec,
                measured,
                transformed.threshold,
                definition.direction,
                _binary(definition.binary_score, spec),
            )
        result = measured
    except EvalhError as error:
        result = AssertionResult.failure(error.render())
    except Exception as error:  # a bug in a handler must not stop the run; --verbose shows the trace
        result = _crashed(spec, error)
    return finalize(spec, result)


def _check_output(spec: AssertionSpec, plan: TypePlan, output: Any, text: str | None) -> GradedAssertion:
    """:func:`grade_assertion` of an output check (``plan.check``): the same refusals, errors and
    scoring, without a context (``text``: the output's, None: not computed yet)."""
    threshold = plan.default_threshold if spec.threshold is None else spec.threshold
    try:
        refused = plan.refusal(threshold) if plan.may_refuse else None
        if refused is not None:
            return finalize(spec, refused)
        check = plan.check
        assert check is not None, "grade_row and grade_assertion call this for output checks only"
        if not plan.reads_text:
            text = ""  # the check does not read it (and makes it itself if it must)
        measured = check(spec, output, output_as_text(output) if text is None else text)
        return _settled_check(spec, plan, measured, threshold)
    except Exception as error:
        return _failed_check(spec, error)


def _settled_check(
    spec: AssertionSpec,
    plan: TypePlan,
    measured: AssertionResult | Measurement | PassFail,
    threshold: float | None,
) -> GradedAssertion:
    """What an output check measured, settled by the scorer's rules (``threshold``: the effective one)."""
    if isinstance(measured, tuple):  # a pass/fail verdict (the most common outcome: asked first)
        if plan.direction is None:
            return settle_pass_fail(spec, measured)
        measured = Measurement.of_pass_fail(measured)
    if not isinstance(measured, AssertionResult):
        return settle(spec, measured, threshold, plan.direction, _binary(plan.binary, spec))
    return finalize(spec, measured)


def _failed_check(spec: AssertionSpec, error: Exception) -> GradedAssertion:
    """The ERROR of an output check that raised (a bug in a handler must not stop the run; --verbose
    shows the trace)."""
    if isinstance(error, EvalhError):
        return finalize(spec, AssertionResult.failure(error.render()))
    return finalize(spec, _crashed(spec, error))


def _text_of(output: Any) -> str | None:
    """The output's text, or None when it has none (an output JSON cannot encode): each check then
    computes it again inside its own error handling and reports the crash, as a context's would."""
    try:
        return output_as_text(output)
    except Exception:
        return None


def _crashed(spec: AssertionSpec, error: Exception) -> AssertionResult:
    return AssertionResult.failure(
        f"{spec.type} crashed: {type(error).__name__}: {error}", traceback=traceback.format_exc()
    )


async def positive_verdict(definition: AssertionDef, ctx: AssertionContext) -> AssertionResult:
    """Run the handler on ``ctx`` (threshold already effective) and decide its measurement."""
    measured = await _measure(definition, ctx)
    if isinstance(measured, AssertionResult):
        return measured
    return decide(measured, ctx.threshold, definition.direction, _binary(definition.binary_score, ctx.spec))


def _binary(binary_score: bool, spec: AssertionSpec) -> bool:
    """Whether the score is 1 or 0: the type is scored that way (``binary_score``), or ``config.binary``."""
    return binary_score or spec.config.get("binary") is True


async def _measure(definition: AssertionDef, ctx: AssertionContext) -> AssertionResult | Measurement:
    """The handler's measurement on ``ctx``, or the ERROR of a threshold it cannot take."""
    refused = _refusal(definition, ctx.threshold)
    if refused is not None:
        return refused
    outcome = definition.fn(ctx)
    # an isinstance of the two outcome classes is cheaper than inspect.isawaitable, on every assertion
    return outcome if isinstance(outcome, AssertionResult | Measurement) else await outcome


def _refusal(definition: AssertionDef, threshold: float | None) -> AssertionResult | None:
    """The ERROR of a threshold the type cannot take, or None (validate reports both first; a suite
    built in code reaches here)."""
    if definition.requires_threshold and threshold is None:
        return AssertionResult.failure(
            f"{definition.name} needs a threshold: the {definition.threshold_meaning} that passes"
        )
    if definition.direction is None or threshold is None:
        return None
    problem = definition.threshold_problem(threshold)
    return AssertionResult.failure(f"{definition.name}: {problem}") if problem else None


def collect_prefetch(
    specs: Sequence[AssertionSpec], ctx: AssertionContext, plans: GradingPlans | None = None
) -> list[EmbedRequest]:
    """Every text these assertions (and assert-set children) will embed, declared up front (``plans``:
    the run's, else these assertions' own)."""
    plans = GradingPlans() if plans is None else plans
    by_type = plans.by_type  # read directly: every row asks (see grade_row)
    requests: list[EmbedRequest] = []
    for spec in specs:
        if spec.children:
            requests.extend(collect_prefetch(spec.children, ctx, plans))
        plan = by_type.get(spec.type) or plans.of(spec)
        if plan.prefetch is None or plan.definition is None:
            continue
        try:
            requests.extend(plan.prefetch(_context_for(spec, plan.definition, ctx)))
        except Exception:  # prefetch is an optimisation: the assertion itself reports the problem
            continue
    return requests
