"""A hand-made RunRecord covering what reports must show, and a synthetic large one for speed checks.

The small run: 3 tests x 2 prompts x 2 providers = 12 rows with PASS, FAIL and ERROR (from the provider
and from an assertion), a named metric, an assert-set, ``not-`` assertions, a secret in provider config,
and an output holding control characters, an ANSI escape, rich markup and a lone surrogate. Its
aggregates come from the real ``evalh.runner.aggregates``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from evalh.model import (
    AssertionSpec,
    GradedAssertion,
    Prompt,
    ProviderSpec,
    ProviderUsage,
    RunRecord,
    Status,
    Suite,
    TestCase,
    TestResult,
    Usage,
)
from evalh.runner.aggregates import compute_aggregates

__all__ = ["NASTY_OUTPUT", "large_run", "sample_run"]

NASTY_OUTPUT = "bell\x07 nul\x00 esc\x1b[31mred\x1b[0m [bold]markup[/bold] <tag> & lone\udcff end"

PROMPTS = (
    Prompt(raw="Say hello to {{name}}", label="greet", id="prompt-greet"),
    Prompt(raw=({"role": "user", "content": "Hi {{name}}"},), label="chat", id="prompt-chat"),
)
PROVIDERS = (
    ProviderSpec(id="echo", path="providers[0]"),
    ProviderSpec(
        id="openai:chat:gpt-4o-mini",
        label="gpt",
        config={"apiKey": "sk-secret-123", "temperature": 0},
        path="providers[1]",
    ),
)
RAW_CONFIG: dict[str, Any] = {
    "description": "Sample suite",
    "prompts": ["Say hello to {{name}}", [{"role": "user", "content": "Hi {{name}}"}]],
    "providers": [
        "echo",
        {"id": "openai:chat:gpt-4o-mini", "label": "gpt", "config": {"apiKey": "sk-secret-123"}},
    ],
    "tests": "file://tests.yaml",
}


def _spec(type_: str, value: Any = None, **kw: Any) -> AssertionSpec:
    negate = type_.startswith("not-")
    base = type_[4:] if negate else type_
    raw: dict[str, Any] = {"type": type_}
    if value is not None:
        raw["value"] = value
    raw.update({k: v for k, v in kw.items() if k in ("threshold", "weight", "metric") and v is not None})
    return AssertionSpec(type=base, negate=negate, value=value, raw=raw, **kw)


def _graded(spec: AssertionSpec, passed: bool, score: float, reason: str, **kw: Any) -> GradedAssertion:
    return GradedAssertion(spec=spec, passed=passed, score=score, reason=reason, **kw)


CONTAINS = _spec("contains", "Ada", metric="accuracy")
SIMILAR = _spec("similar", "Hello Ada", threshold=0.8, metric="accuracy")
NOT_CONTAINS = _spec("not-contains", "error")
EQUALS = _spec("equals", "Hello Bob")
ICONTAINS = _spec("icontains", "bob")
ASSERT_SET = AssertionSpec(
    type="assert-set",
    threshold=0.5,
    children=(EQUALS, ICONTAINS),
    raw={"type": "assert-set", "threshold": 0.5, "assert": [{"type": "equals"}, {"type": "icontains"}]},
)
NOT_REGEX = _spec("not-regex", "\\d{3}")
PYTHON = _spec("python", "1/0")

TESTS = (
    TestCase(
        index=0,
        description="greets Ada",
        vars={"name": "Ada"},
        asserts=(CONTAINS, SIMILAR),
        metadata={"topic": "greeting", "label": "hello ada"},
    ),
    TestCase(
        index=1,
        vars={"name": "Bob", "extra": {"k": [1, 2]}},
        asserts=(NOT_CONTAINS, ASSERT_SET),
        options={"provider": {"id": "openai:chat:gpt-4o", "config": {"api_key": "sk-other"}}},
    ),
    TestCase(
        index=2, description="odd output, line\nbreak", vars={"name": "Eve"}, asserts=(NOT_REGEX, PYTHON)
    ),
)


def _usage(tokens: int) -> Usage:
    return Usage(
        prompt_tokens=tokens // 2, completion_tokens=tokens - tokens // 2, total_tokens=tokens, requests=1
    )


def _test0(prompt_idx: int, provider_idx: int) -> dict[str, Any]:
    good = prompt_idx == 0
    sim = 0.91 if good else 0.42
    graded = (
        _graded(CONTAINS, True, 1.0, "Output contains 'Ada'"),
        _graded(
            SIMILAR,
            good,
            sim,
            f"Similarity {sim:.2f} is {'greater than or equal to' if good else 'less than'} threshold 0.8",
            details={"similarity": sim, "provider": "local:minilm"},
            usage=Usage(total_tokens=12, requests=1, texts=2),
        ),
    )
    reason = "All assertions passed" if good else graded[1].reason
    score = (1.0 + sim) / 2
    return {
        "status": Status.PASS if good else Status.FAIL,
        "score": score,
        "reason": reason,
        "output": "Hello Ada!" if good else "Greetings, human.",
        "assertions": graded,
        "named_scores": {"accuracy": score},
        "named_score_weights": {"accuracy": 2.0},
        "grading_usage": Usage(total_tokens=12, requests=1, texts=2),
    }


def _test1(prompt_idx: int, provider_idx: int) -> dict[str, Any]:
    if provider_idx == 1 and prompt_idx == 1:
        return {
            "status": Status.ERROR,
            "score": 0.0,
            "reason": "openai:chat:gpt-4o-mini: HTTP 500 server error after 5 attempts",
            "error": "openai:chat:gpt-4o-mini: HTTP 500 server error after 5 attempts",
            "output": None,
        }
    equals_ok = provider_idx == 0
    children = (
        _graded(
            EQUALS,
            equals_ok,
            float(equals_ok),
            "Output equals 'Hello Bob'" if equals_ok else "Expected 'Hello Bob'",
        ),
        _graded(ICONTAINS, True, 1.0, "Output contains 'bob' (case-insensitive)"),
    )
    set_score = (float(equals_ok) + 1.0) / 2
    graded = (
        _graded(NOT_CONTAINS, True, 1.0, "Output does not contain 'error'"),
        _graded(
            ASSERT_SET,
            set_score >= 0.5,
            set_score,
            f"assert-set score {set_score:.2f} >= 0.5 threshold",
            children=children,
        ),
    )
    return {
        "status": Status.PASS,
        "score": (1.0 + set_score) / 2,
        "reason": "All assertions passed",
        "output": "Hello Bob" if equals_ok else "hi bob",
        "assertions": graded,
    }


def _test2(prompt_idx: int, provider_idx: int) -> dict[str, Any]:
    regex = _graded(
        NOT_REGEX,
        False,
        0.0,
        "Output matches regex \\d{3} \x1b[1m<b>bold</b>\x1b[0m (not-regex expects the opposite)",
    )
    if provider_idx == 0 and prompt_idx == 0:
        crash = _graded(
            PYTHON,
            False,
            0.0,
            "python crashed: ZeroDivisionError: division by zero",
            error=True,
            details={"traceback": "Traceback ...\nZeroDivisionError"},
        )
        return {
            "status": Status.ERROR,
            "score": 0.0,
            "reason": crash.reason,
            "error": crash.reason,
            "output": NASTY_OUTPUT,
            "assertions": (regex, crash),
        }
    python_ok = _graded(PYTHON, True, 1.0, "Python assertion returned True")
    return {
        "status": Status.FAIL,
        "score": 0.5,
        "reason": regex.reason,
        "output": NASTY_OUTPUT + " 123",
        "assertions": (regex, python_ok),
    }


_BUILDERS = (_test0, _test1, _test2)


def _row(test: TestCase, prompt_idx: int, provider_idx: int, n: int) -> TestResult:
    fields = _BUILDERS[test.index](prompt_idx, provider_idx)
    if "assertions" not in fields and fields["status"] is not Status.ERROR:
        raise AssertionError("sample rows that ran must carry assertions")
    prompt = PROMPTS[prompt_idx]
    rendered: Any = (
        f"Say hello to {test.vars['name']}"
        if prompt_idx == 0
        else [{"role": "user", "content": f"Hi {test.vars['name']}"}]
    )
    provider_error = fields["status"] is Status.ERROR and not fields.get("assertions")
    return TestResult(
        test=test,
        prompt=prompt,
        provider=PROVIDERS[provider_idx],
        prompt_index=prompt_idx,
        provider_index=provider_idx,
        rendered_prompt=rendered,
        latency_ms=0.0 if provider_error else 100.0 + 10 * n,
        cost=0.0 if provider_idx == 0 else 0.0002,
        usage=Usage() if provider_idx == 0 or provider_error else _usage(20),
        cached=provider_idx == 1 and n % 3 == 0,
        id=f"row-{n}",
        **fields,
    )


def passed_row(test: TestCase, graded: tuple[GradedAssertion, ...], *, repeat: int = 0) -> TestResult:
    """A PASS row of ``test`` (its var ``q`` as the prompt) with these verdicts, at the first prompt and
    provider: the rows the codec's conversion tests encode with and without a memo."""
    return TestResult(
        test=test,
        prompt=PROMPTS[0],
        provider=PROVIDERS[0],
        prompt_index=0,
        provider_index=0,
        repeat_index=repeat,
        rendered_prompt=str(test.vars.get("q", "")),
        status=Status.PASS,
        score=1.0,
        reason="All assertions passed",
        output=f"answer {test.index}",
        latency_ms=1.0,
        assertions=graded,
        id=f"row-{test.index}-{repeat}",
    )


def sample_run() -> RunRecord:
    """The small run the golden files are made from (fixed ids, timestamps and durations)."""
    rows: list[TestResult] = []
    for test in TESTS:
        for provider_idx in range(len(PROVIDERS)):
            for prompt_idx in range(len(PROMPTS)):
                rows.append(_row(test, prompt_idx, provider_idx, len(rows)))
    suite = Suite(
        tests=TESTS,
        prompts=PROMPTS,
        providers=PROVIDERS,
        description="Sample suite",
        raw_config=RAW_CONFIG,
        config_path="evalh.yaml",
    )
    return RunRecord(
        suite=suite,
        results=tuple(rows),
        started_at="2025-01-02T03:04:05.678Z",
        duration_ms=4321.0,
        provider_usage=(
            ProviderUsage("echo", Usage(requests=6)),
            ProviderUsage("openai:chat:gpt-4o-mini", Usage(total_tokens=100, requests=5, cost=0.001)),
            ProviderUsage(
                "local:minilm", Usage(total_tokens=48, requests=2, texts=8, cached=4, latency_ms=31.5)
            ),
        ),
        aggregates=compute_aggregates(suite, rows),
    )


def large_run(n_tests: int = 10_000, n_asserts: int = 5) -> RunRecord:
    """One provider x one prompt, ``n_tests`` rows of ``n_asserts`` assertions each (every test with its
    own specs, as a loaded config has), one row in seven failing its first assertion."""
    rows = []
    for i in range(n_tests):
        specs = tuple(
            _spec(
                "contains", f"word{i}-{j}", metric="m" if j == 0 else None, threshold=0.5 if j == 1 else None
            )
            for j in range(n_asserts)
        )
        test = TestCase(index=i, description=f"case {i}", vars={"q": f"question {i}"}, asserts=specs)
        failed = i % 7 == 0
        graded = tuple(
            _graded(s, not (failed and j == 0), 0.0 if failed and j == 0 else 1.0, f"reason {j}")
            for j, s in enumerate(specs)
        )
        rows.append(
            TestResult(
                test=test,
                prompt=PROMPTS[0],
                provider=PROVIDERS[0],
                prompt_index=0,
                provider_index=0,
                rendered_prompt=f"Say hello to {i}",
                status=Status.FAIL if failed else Status.PASS,
                score=0.8 if failed else 1.0,
                reason="reason 0" if failed else "All assertions passed",
                output=f"answer {i} " * 10,
                latency_ms=12.5,
                assertions=graded,
                named_scores={"m": 0.0 if failed else 1.0},
                named_score_weights={"m": 1.0},
                id=f"row-{i}",
            )
        )
    suite = Suite(tests=tuple(r.test for r in rows), prompts=PROMPTS[:1], providers=PROVIDERS[:1])
    return RunRecord(
        suite=suite,
        results=tuple(rows),
        started_at="2025-01-02T03:04:05Z",
        duration_ms=9000.0,
        aggregates=compute_aggregates(suite, rows),
    )


def with_results(run: RunRecord, rows: Sequence[TestResult]) -> RunRecord:
    """``run`` holding ``rows`` instead, its aggregates recomputed as the runner would."""
    return dataclasses.replace(run, results=tuple(rows), aggregates=compute_aggregates(run.suite, rows))
