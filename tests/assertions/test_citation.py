"""citation-groundedness: marker parsing, source resolution, evidence quotes, scores and errors."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from typing import Any

import pytest

from evalh.assertions.citation import Sources, find_citations, grounded_quote, read_sources
from evalh.assertions.registry import get_assertion
from evalh.model import AssertionResult, AssertionSpec
from evalh.runner.scoring import finalize
from tests.assertions.helpers import declared_problems, grade, make_context

PASSAGES = [
    "Paris is the capital and largest city of France.",
    "The Eiffel Tower was completed in 1889 for the World's Fair.",
    "Lyon is known for its cuisine.",
]


def run(
    output: str,
    value: Any = None,
    config: Mapping[str, Any] | None = None,
    threshold: float | None = None,
    vars: Mapping[str, Any] | None = None,
    metadata: Mapping[str, Any] | None = None,
    provider_metadata: Mapping[str, Any] | None = None,
) -> AssertionResult:
    ctx = make_context(
        "citation-groundedness", value=value, output=output, threshold=threshold, config=config, vars=vars
    )
    ctx = dataclasses.replace(
        ctx,
        test=dataclasses.replace(ctx.test, metadata=dict(metadata or {})),
        provider_metadata=dict(provider_metadata or {}),
    )
    return grade(ctx)


def test_find_citations() -> None:
    text = "Paris [1] is big [2, 3]; see [doc-3] and [^4]. A [link](http://x) and [see above] are not."
    assert find_citations(text) == ["1", "2", "3", "doc-3", "4"]
    assert find_citations("Zürich [quelle-ä1] [ 7 ; 8 ]") == ["quelle-ä1", "7", "8"]
    assert find_citations("no markers here") == []
    assert find_citations("(1) and (2)", re.compile(r"\((\d+)\)")) == ["1", "2"]
    # an optional group that matched nothing cites nothing (and does not crash)
    assert find_citations("[] then [2]", re.compile(r"\[(\d+)?\]")) == ["2"]


def test_source_resolution_by_id_then_position() -> None:
    sources = read_sources([{"id": "doc-a", "text": "x"}, {"id": "doc-b"}, {"text": "no id"}])
    assert isinstance(sources, Sources)
    assert sources.order == ("doc-a", "doc-b", "3")
    assert sources.resolve("DOC-A") == "doc-a"
    assert sources.resolve("2") == "doc-b"
    assert sources.resolve("4") is None and sources.resolve("doc-z") is None
    assert sources.resolve("²") is None  # a superscript digit is not a position
    accented = read_sources({"r\u00e9f-1": "text"})  # NFC "réf-1"
    assert isinstance(accented, Sources) and accented.resolve("RE\u0301F-1") == "r\u00e9f-1"
    assert read_sources('{"k1": "text one"}').texts == {"k1": "text one"}  # type: ignore[union-attr]


def test_all_citations_grounded() -> None:
    result = run("Paris is the capital [1]; the tower dates from 1889 [2].", PASSAGES)
    assert result.passed and result.score == 1.0
    assert result.reason == (
        "2 of 2 citations are grounded in the sources: score 1 is greater than or equal to threshold 1"
    )
    assert [c["source"] for c in result.details["citations"]] == ["1", "2"]


def test_unknown_citation_lowers_the_score() -> None:
    result = run("Paris [1], Lyon [3], Marseille [7], again [1].", PASSAGES)
    assert result.score == pytest.approx(2 / 3) and not result.passed
    assert result.reason.endswith("threshold 1 ([7] no source has this id)")
    assert run("Paris [1] and [7]", PASSAGES, threshold=0.5).passed


def test_repeats_and_aliases_count_once() -> None:
    sources = {"doc-1": PASSAGES[0], "doc-2": PASSAGES[1]}
    result = run("A [doc-1]. B [1]. C [DOC-1]. D [doc-9]. E [doc-9].", sources)
    assert len(result.details["citations"]) == 2
    assert result.score == 0.5


def test_no_citation_fails_when_required() -> None:
    required = run("Paris is the capital of France.", PASSAGES)
    assert not required.passed and required.score == 0.0 and not required.error
    assert (
        required.reason
        == "The answer cites no source (a citation is required): score 0 is less than threshold 1"
    )
    optional = run("Paris is the capital of France.", PASSAGES, {"required": False})
    assert optional.passed and optional.score == 1.0


def test_evidence_quotes_must_be_in_the_cited_source() -> None:
    evidence = [
        {"citation": "1", "claim": "Paris is the capital", "quote": "Paris is the  CAPITAL"},
        {"citation": "[2]", "claim": "Built in 1889", "quote": "completed in 1890"},
    ]
    result = run(
        "Paris is the capital [1], built in 1889 [2].", PASSAGES, metadata={"citation_evidence": evidence}
    )
    assert result.score == 0.5
    verdicts = {v["source"]: v for v in result.details["citations"]}
    assert verdicts["1"]["grounded"] and verdicts["1"]["quotes"][0]["found"]
    assert verdicts["2"]["reason"] == "quote 'completed in 1890' is not in its source"
    assert "[2] quote 'completed in 1890' is not in its source" in result.reason


def test_evidence_from_provider_metadata_and_mapping_form() -> None:
    evidence = {"1": ["capital and largest city"], "2": "World’s Fair"}  # curly apostrophe vs straight
    result = run(
        "Big city [1]; fair [2]; food [3].", PASSAGES, provider_metadata={"citation_evidence": evidence}
    )
    verdicts = [v["grounded"] for v in result.details["citations"]]
    assert verdicts == [True, True, False]
    assert result.details["citations"][2]["reason"] == "no evidence quoted for it"
    assert result.details["uncited_evidence"] == []


def test_evidence_needs_source_text_and_reports_uncited_quotes() -> None:
    evidence = [{"citation": "a", "quote": "x"}, {"citation": "b", "quote": "y"}]
    result = run("Claim [a].", {"a": None, "b": "y y"}, metadata={"citation_evidence": evidence})
    assert result.score == 0.0
    assert result.details["citations"][0]["reason"] == "its source has no text to check the quotes against"
    assert result.details["uncited_evidence"] == [{"citation": "b", "quote": "y", "claim": ""}]


def test_sources_from_a_var() -> None:
    vars = {"context": [{"id": "kb-7", "text": "Refunds take 5 days."}]}
    assert run("Refunds take 5 days [kb-7].", config={"fromVar": "context"}, vars=vars).passed
    missing = run("x [1]", config={"fromVar": "ctx"}, vars=vars)
    assert missing.error and "var 'ctx' (config.fromVar) is not set" in missing.reason


def test_quote_matching_is_unicode_aware() -> None:
    assert grounded_quote("ÉLÉPHANT rose", "Un éléphant   rose, dit-on")
    assert grounded_quote("1889 – for", "completed in 1889 — for the fair")
    assert not grounded_quote("", "anything")


def test_errors_are_never_inverted() -> None:
    result = run("x [1]", PASSAGES, metadata={"citation_evidence": 42})
    assert result.error and "citation_evidence must be a list" in result.reason
    negated = finalize(AssertionSpec(type="citation-groundedness", negate=True), result)
    assert negated.error and not negated.passed
    bad_sources = run("x [1]", [1, 2])
    assert bad_sources.error and "source 1 is neither a passage nor an object" in bad_sources.reason


@pytest.mark.parametrize(
    ("value", "config", "problem"),
    [
        (None, {}, "value: needs the sources: a value"),
        (42, {}, "value: must be a list, a mapping (key: value) or a string (got a whole number 42)"),
        ([], {}, "value: needs at least one source"),
        (PASSAGES, {"pattern": "[unclosed"}, "value: needs config.pattern to be a valid regex"),
        (
            PASSAGES,
            {"pattern": r"\[\d+\]"},
            "value: needs config.pattern to capture the cited ids in a group",
        ),
        (PASSAGES, {"required": "yes"}, "config.required: must be true or false"),
        (None, {"fromVar": ""}, "config.fromVar: must not be empty"),
    ],
)
def test_declared_rules(value: Any, config: dict[str, Any], problem: str) -> None:
    given = {"value": value} if value is not None else {}
    assertion = {"type": "citation-groundedness", "config": config, **given}
    found = declared_problems(assertion)
    assert any(text.startswith(problem) for text in found), found


def test_registration() -> None:
    definition = get_assertion("citation-groundedness")
    assert definition is not None and definition.check is not None
    assert definition.family == "citation" and definition.default_threshold == 1.0
    assert not definition.requires_value  # sources may come from config.fromVar
    assert definition.check(None, {"fromVar": "context"}) is None
    assert definition.check(PASSAGES, {"pattern": r"\((\d+)\)"}) is None


# A valid use of each type of this family: tests/runner/test_threshold_contract.py runs every registered
# type's handler on its sample and checks it returns a Measurement (scoring decides). A new type adds its own.
CONTRACT_SAMPLES: dict[str, dict[str, Any]] = {
    "citation-groundedness": {"value": ["Paris is the capital."], "output": "Paris is the capital [1]."},
}
