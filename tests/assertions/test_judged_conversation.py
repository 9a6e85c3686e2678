"""conversation-relevance against a loopback grader that reads promptfoo's prompt: windows, score, reason."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.assertions.helpers import declared_problems
from tests.assertions.judge_helpers import OPENAI_PATH, grader_messages, judge, openai_grader, openai_text
from tests.loopback import LoopbackServer, Reply, Request

OFF_TOPIC = "The stock market has been volatile lately."
WEDDING = [
    {"input": "I need help planning my wedding", "output": "Congratulations! What is your vision?"},
    {"input": "We want an outdoor ceremony", "output": "Have a backup plan for the weather."},
    {"input": "What about flowers?", "output": OFF_TOPIC},
    {"input": "I meant wedding flowers", "output": "Roses, peonies and hydrangeas are popular."},
]


def relevance_grader(server: LoopbackServer) -> list[list[dict[str, str]]]:
    """A grader that finds a window irrelevant when its last reply is OFF_TOPIC; returns the windows seen."""
    windows: list[list[dict[str, str]]] = []

    def answer(request: Request) -> Reply:
        text = grader_messages(request)[-1]["content"]
        if text.startswith("Below is a list of irrelevancies"):
            return openai_text('{"reason": "The score is 0.75 because of the stock market reply."}')
        window = json.loads(text.rpartition("\nMessages:\n")[2].removesuffix("\n\nJSON:"))
        windows.append(window)
        if window[-1]["content"] == OFF_TOPIC:
            return openai_text('{"verdict": "no", "reason": "Stocks are not flowers."}')
        return openai_text('{"verdict": "yes"}')

    server.route("POST", OPENAI_PATH, answer)
    return windows


def test_each_turn_is_judged_in_its_window(loopback: LoopbackServer) -> None:
    windows = relevance_grader(loopback)
    result, verdict = judge(
        "conversation-relevance",
        openai_grader(loopback),
        vars={"_conversation": WEDDING},
        threshold=0.7,
    )
    assert result.score == pytest.approx(0.75) and verdict.passed
    assert result.reason.startswith("The score is 0.75 because of the stock market reply.")
    assert result.details["irrelevancies"] == ["Stocks are not flowers."]
    # default window of 5 turns: the fourth window holds all four, as user/assistant pairs
    assert [len(w) for w in windows] == [2, 4, 6, 8]
    assert windows[3][0] == {"role": "user", "content": "I need help planning my wedding"}


def test_window_size_and_threshold(loopback: LoopbackServer) -> None:
    windows = relevance_grader(loopback)
    result, verdict = judge(
        "conversation-relevance",
        openai_grader(loopback),
        vars={"_conversation": WEDDING},
        threshold=0.9,
        config={"windowSize": 2},
    )
    assert [len(w) for w in windows] == [2, 4, 4, 4]
    assert result.score == pytest.approx(0.75) and not verdict.passed


def test_without_a_conversation_the_row_is_the_one_turn(loopback: LoopbackServer) -> None:
    windows = relevance_grader(loopback)
    result, verdict = judge(
        "conversation-relevance", openai_grader(loopback), prompt="Best time for Paris?", output="Spring."
    )
    turn = [{"role": "user", "content": "Best time for Paris?"}, {"role": "assistant", "content": "Spring."}]
    assert windows == [turn]
    assert result.score == 1.0 and verdict.passed
    assert result.reason.startswith("1 out of 1 conversation windows were relevant")


def test_a_verdict_other_than_yes_or_no_is_an_error(loopback: LoopbackServer) -> None:
    loopback.route("POST", OPENAI_PATH, lambda request: openai_text('{"verdict": "maybe"}'))
    result, verdict = judge("conversation-relevance", openai_grader(loopback))
    assert result.error and verdict.error and "invalid verdict" in result.reason


def test_window_size_must_be_a_positive_integer() -> None:
    problems = declared_problems({"type": "conversation-relevance", "config": {"windowSize": 0}})
    assert problems and "windowSize" in str(problems)


CONTRACT_SAMPLES: dict[str, dict[str, Any]] = {"conversation-relevance": {"output": "Paris"}}
