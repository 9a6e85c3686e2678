"""Semantic checks with hand-made registries: missing handlers, needs, capabilities, thresholds."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalh.assertions.registry import AssertionDef
from evalh.common.notices import warnings_to
from evalh.config.checks import AssertionChecker
from evalh.config.files import LoadContext
from evalh.model import AssertionResult, AssertionSpec, ProviderChoice, ProviderSpec, TestCase


def _never(ctx: object) -> AssertionResult:
    return AssertionResult(passed=False, score=0.0, reason="not run")


def _definition(name: str, **fields: object) -> AssertionDef:
    return AssertionDef(name=name, fn=_never, family="test", description="a test type", **fields)  # type: ignore[arg-type]


def _messages(checker: AssertionChecker, *tests: TestCase) -> list[str]:
    checker.check_tests(tests)
    return [text for _, text in checker.ctx.problems.problems]


def _checker(registry: dict[str, AssertionDef], default: ProviderChoice | None = None) -> AssertionChecker:
    ctx = LoadContext(config_file=Path("/project/evalh.yaml"))
    return AssertionChecker(ctx, default, {}, registry=registry)


def test_unknown_type_gets_a_did_you_mean_from_the_registry() -> None:
    registry = {"judge-me": _definition("judge-me")}
    test = TestCase(index=0, asserts=(AssertionSpec(type="judge-mee", path="tests[0].assert[0]"),))
    (message,) = _messages(_checker(registry), test)
    assert "unknown assertion type 'judge-mee'" in message and "Did you mean 'judge-me'?" in message


@pytest.mark.parametrize(
    ("keys", "grader", "because"),
    [
        ({}, "openai:chat:gpt-5.6-sol", "no grader's API key is set"),
        ({"OPENAI_API_KEY": "sk-x", "ANTHROPIC_API_KEY": "a"}, "openai:chat:gpt-5.6-sol", "OPENAI_API_KEY"),
        ({"ANTHROPIC_API_KEY": "a"}, "anthropic:messages:claude-sonnet-4-6", "ANTHROPIC_API_KEY is set"),
        ({"MISTRAL_API_KEY": "m"}, "mistral:mistral-large-latest", "MISTRAL_API_KEY is set"),
    ],
)
def test_judges_without_a_grader_take_promptfoos_default_by_the_keys_set(
    monkeypatch: pytest.MonkeyPatch, keys: dict[str, str], grader: str, because: str
) -> None:
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY", "PALM_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    for name in ("MISTRAL_API_KEY", "XAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    for name, value in keys.items():
        monkeypatch.setenv(name, value)
    registry = {"judge-me": _definition("judge-me", needs=("text",))}
    tests = [
        TestCase(
            index=i, asserts=(AssertionSpec(type="judge-me", negate=i == 1, path=f"tests[{i}].assert[0]"),)
        )
        for i in range(3)
    ]
    checker = _checker(registry)
    shown: list[str] = []
    with warnings_to(shown.append):
        assert _messages(checker, *tests) == []  # not a problem of the config: promptfoo grades them
    assert checker.default_grader is not None and checker.default_grader.choice.text is not None
    assert checker.default_grader.choice.text.id == grader
    assert checker.default_grader.choice.embedding is None  # vectors stay on the bundled model
    (message,) = shown
    assert f"promptfoo's default grader, {grader}" in message and because in message
    assert "tests[0].assert[0] (judge-me); tests[1].assert[0] (not-judge-me); tests[2].assert[0]" in message
    assert "--grader" in message and "defaultTest.options.provider" in message


def test_text_need_is_met_by_grader_test_or_assertion_provider() -> None:
    registry = {"judge-me": _definition("judge-me", needs=("text",))}
    spec = AssertionSpec(type="judge-me", path="tests[0].assert[0]")
    assert (
        _messages(
            _checker(registry, ProviderChoice(default=ProviderSpec(id="openai:chat:gpt-4o-mini"))),
            TestCase(0, asserts=(spec,)),
        )
        == []
    )
    by_test = TestCase(
        0, asserts=(spec,), provider=ProviderChoice(text=ProviderSpec(id="openai:chat:gpt-4o"))
    )
    assert _messages(_checker(registry), by_test) == []
    chat_for_embedding = TestCase(
        0, asserts=(spec,), provider=ProviderChoice(default=ProviderSpec(id="local"))
    )
    (message,) = _messages(_checker(registry), chat_for_embedding)
    assert "needs a chat (text) model, but provider 'local'" in message


def test_embedding_need_falls_back_to_the_bundled_model() -> None:
    registry = {"similar:dot": _definition("similar:dot", needs=("embedding",))}
    spec = AssertionSpec(type="similar:dot", value="x", path="tests[0].assert[0]")
    assert _messages(_checker(registry), TestCase(0, asserts=(spec,))) == []


def test_threshold_bounds_follow_the_declared_direction_and_bounds() -> None:
    registry = {
        "score-me": _definition(
            "score-me", threshold_meaning="min score", direction="higher", bounds=(0.0, 1.0)
        ),
        "distance": _definition(
            "distance", threshold_meaning="max distance", direction="lower", bounds=(0, None)
        ),
        "similar:dot": _definition("similar:dot", threshold_meaning="min dot product", direction="higher"),
    }
    specs = (
        AssertionSpec(type="score-me", threshold=1.2, path="tests[0].assert[0]"),
        AssertionSpec(type="distance", threshold=12, path="tests[0].assert[1]"),
        AssertionSpec(type="similar:dot", threshold=4, path="tests[0].assert[2]"),
        AssertionSpec(type="distance", threshold=-1, path="tests[0].assert[3]"),
    )
    first, second = _messages(_checker(registry), TestCase(0, asserts=specs))
    assert first.startswith("tests[0].assert[0].threshold: threshold must be <= 1 (got 1.2)")
    assert second.startswith("tests[0].assert[3].threshold: threshold must be >= 0 (got -1)")


def test_value_checks_and_required_values_reach_children() -> None:
    registry = {
        "assert-set": _definition("assert-set"),
        "needs-value": _definition(
            "needs-value", requires_value=True, check=lambda v, c: None if v != "bad" else "bad value"
        ),
    }
    group = AssertionSpec(
        type="assert-set",
        path="tests[0].assert[0]",
        children=(
            AssertionSpec(type="needs-value", path="tests[0].assert[0].assert[0]"),
            AssertionSpec(type="needs-value", value="bad", path="tests[0].assert[0].assert[1]"),
        ),
    )
    messages = _messages(_checker(registry), TestCase(0, asserts=(group,)))
    assert messages == [
        "tests[0].assert[0].assert[0]: needs-value needs a value. Add value: ... to it",
        "tests[0].assert[0].assert[1].value: needs-value: bad value",
    ]


def test_a_repeated_assertion_is_checked_once_and_each_bad_one_is_said_where_it_is() -> None:
    checked: list[object] = []

    def check(value: object, config: object) -> str | None:
        checked.append(value)
        return "bad value" if value == "bad" else None

    registry = {
        "checked": _definition(
            "checked", check=check, threshold_meaning="min score", direction="higher", bounds=(0.0, 1.0)
        )
    }

    def test(index: int, value: object, threshold: float | None = None) -> TestCase:
        spec = AssertionSpec(
            type="checked", value=value, threshold=threshold, path=f"tests[{index}].assert[0]"
        )
        return TestCase(index, asserts=(spec,))

    tests = [test(0, "fine"), test(1, "fine"), test(2, "bad"), test(3, "bad"), test(4, "fine", 2.0)]
    tests += [test(5, 1), test(6, True), test(7, 1.0), test(8, "fine", 2.0)]
    messages = _messages(_checker(registry), *tests)
    # "fine" once for tests 0 and 1; 1, True and 1.0 are told apart (equal in Python, not in YAML)
    assert checked == ["fine", "bad", "bad", "fine", 1, True, 1.0, "fine"]
    assert [message.split(":")[0] for message in messages] == [
        "tests[2].assert[0].value",
        "tests[3].assert[0].value",
        "tests[4].assert[0].threshold",
        "tests[8].assert[0].threshold",
    ]
