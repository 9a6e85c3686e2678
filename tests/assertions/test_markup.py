"""The markup family: is-html, contains-html, is-xml, contains-xml (promptfoo's src/assertions/html.ts and
xml.ts), on real outputs; XML is parsed by expat with every DTD refused."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from evalh.assertions import markup
from evalh.assertions.registry import all_assertions
from tests.assertions.test_structured import run
from tests.config.test_promptfoo_semantics import evalh, run_rows, write

NOTE = "<note><to>Ada</to><from>Bob</from><body>Hi</body></note>"
BILLION_LAUGHS = (
    '<?xml version="1.0"?>\n<!DOCTYPE lolz [\n <!ENTITY lol "lol">\n'
    + "".join(
        f' <!ENTITY lol{n} "{("&lol" + (str(n - 1) if n > 1 else "") + ";") * 10}">\n' for n in range(1, 10)
    )
    + "]>\n<lolz>&lol9;</lolz>"
)


def test_the_family_is_registered() -> None:
    registry = all_assertions()
    for name in ("is-html", "contains-html", "is-xml", "contains-xml"):
        assert registry[name].family == "markup"
        assert not registry[name].requires_value


@pytest.mark.parametrize(
    "output",
    [NOTE, '<?xml version="1.0" encoding="UTF-8"?>\n<root a="1"><child/></root>', "<a><![CDATA[x < y]]></a>"],
)
def test_well_formed_xml_passes(output: str) -> None:
    result = run("is-xml", output)
    assert result.passed, result.reason


@pytest.mark.parametrize(
    ("output", "reason"),
    [
        ("<root><child>Content</child></root", "XML parsing failed: unclosed token"),
        ("<a><b></a></b>", "XML parsing failed: mismatched tag"),
        ("Here it is: " + NOTE, "XML parsing failed: syntax error"),
        ("<a/><b/>", "XML parsing failed: junk after document element"),
        ("<a>&nbsp;</a>", "XML parsing failed: undefined entity"),
    ],
)
def test_malformed_xml_fails_with_the_parsers_reason(output: str, reason: str) -> None:
    result = run("is-xml", output)
    assert not result.passed
    assert result.reason.startswith(reason), result.reason


@pytest.mark.parametrize(
    "value",
    ["note.to, note.from", ["note.to", "note.from"], {"requiredElements": ["note.to", "note.from"]}],
)
def test_required_element_paths_in_every_value_form(value: Any) -> None:
    assert run("is-xml", NOTE, value).passed
    missing = run("is-xml", "<note><to>Ada</to></note>", value)
    assert not missing.passed
    assert missing.reason == "XML is missing required elements: note.from"


def test_repeated_elements_are_indexed_and_text_has_no_children() -> None:
    output = "<list><item>a</item><item>b</item></list>"
    assert run("is-xml", output, ["list.item.1"]).passed
    assert not run("is-xml", output, ["list.item.2"]).passed
    assert not run("is-xml", "<a><b>text</b></a>", ["a.b.c"]).passed


def test_an_entity_expansion_payload_is_refused_at_its_doctype() -> None:
    # expanded, this would be 10**9 "lol"s; the parser stops at the DOCTYPE's internal subset
    result = run("is-xml", BILLION_LAUGHS)
    assert not result.passed
    assert result.reason == "DTD internal subsets are not supported by is-xml validation"
    # contains-xml reads the <lolz> element alone, as promptfoo does: its reference stays literal text
    assert run("contains-xml", "Look: " + BILLION_LAUGHS, ["lolz"]).passed
    assert markup._parse_xml("<lolz>&lol9;</lolz>", keep_unknown_entities=True) == {"lolz": "&lol9;"}


def test_xml_fragments_inside_prose() -> None:
    prose = f"Sure! Here is the note:\n\n{NOTE}\n\nLet me know if you need changes."
    assert run("contains-xml", prose).passed
    assert run("contains-xml", prose, ["note.body"]).passed
    wrong = run("contains-xml", prose, ["note.cc"])
    assert not wrong.passed
    assert wrong.reason == "No valid XML content found matching the requirements"
    # an undeclared entity stays literal text (fast-xml-parser's reading), never expanded
    assert run("contains-xml", "Copy: <a>&nbsp;&e;</a>", ["a"]).passed
    # sibling elements side by side are one fragment, as fast-xml-parser reads them
    assert run("contains-xml", "Items: <item>1</item> <item>2</item>.", ["item.1"]).passed


@pytest.mark.parametrize("output", ["no markup at all", "if a < b and c > d then", ""])
def test_prose_without_xml_has_no_fragment(output: str) -> None:
    result = run("contains-xml", output)
    assert not result.passed
    assert result.reason == "No XML content found in the output"


@pytest.mark.parametrize(
    "output",
    [
        "<!DOCTYPE html><html><head><title>T</title></head><body><p>Hello</p></body></html>",
        "<div class='card'><h1>Title</h1><p>Body &amp; more</p></div>",
        "<ul><li>one</li><li>two</li></ul>",
        "<my-widget>custom element</my-widget>",
        "<body>loose text inside a literal body</body>",
    ],
)
def test_html_documents_and_fragments_are_html(output: str) -> None:
    result = run("is-html", output)
    assert result.passed, result.reason
    assert run("contains-html", output).passed


@pytest.mark.parametrize(
    ("output", "reason"),
    [
        ("", "Output is empty"),
        ("   \n", "Output is empty"),
        ('<?xml version="1.0"?><p>x</p>', "Output appears to be XML, not HTML"),
        ("Hello <b>world</b>", "Output must be wrapped in HTML tags"),
        ("if a < b and b > c then stop", "Output must be wrapped in HTML tags"),
        ("<note><to>Ada</to></note>", "Output does not contain recognized HTML elements"),
    ],
)
def test_what_is_not_html_fails_with_promptfoos_reason(output: str, reason: str) -> None:
    result = run("is-html", output)
    assert not result.passed
    assert result.reason == reason


@pytest.mark.parametrize(
    ("output", "contains"),
    [
        ("Some <b>bold</b> words", True),  # opening + closing tag
        ('Click <a href="/x">here</a>', True),
        ("<!-- a comment --> and &copy; 2025", True),  # comment + entity
        ("if a < b and c > d", False),
        ("Tom &amp; Jerry", False),  # one indicator only
        ("plain text", False),
    ],
)
def test_contains_html_counts_indicators(output: str, contains: bool) -> None:
    result = run("contains-html", output)
    assert result.passed is contains, result.reason
    if not contains:
        assert result.reason == "Expected output to contain HTML content"


def test_through_the_cli_with_negation_and_a_located_value_error(tmp_path: Path) -> None:
    config = write(
        tmp_path / "c.yaml",
        """
        providers: [echo]
        prompts: ["{{text}}"]
        tests:
          - vars: {text: "<note><to>Ada</to><from>Bob</from></note>"}
            assert:
              - type: is-xml
                value: {requiredElements: ["note.to", "note.from"]}
              - type: not-is-html
              - type: contains-xml
                value: note.to
          - vars: {text: "<p>Hello</p>"}
            assert:
              - type: is-html
              - type: not-contains-html
          - vars: {text: "a < b"}
            assert: [{type: not-contains-xml}, {type: not-is-html}]
        """,
    )
    result, rows = run_rows(config)
    assert result.exit_code == 1, result.stderr
    assert [row["success"] for row in rows] == [True, False, True]
    bad = write(
        tmp_path / "bad.yaml",
        """
        providers: [echo]
        prompts: ["x"]
        tests:
          - assert:
              - type: is-xml
                value: {required: [a]}
        """,
    )
    result = evalh("validate", str(bad))
    assert result.exit_code == 2
    assert "bad.yaml:7:17 tests[0].assert[0].value.required: unknown key 'required'" in result.stderr


# A valid use of each type of this family: tests/runner/test_threshold_contract.py runs every registered
# type's handler on its sample and checks it returns a Measurement (scoring decides).
CONTRACT_SAMPLES: dict[str, dict[str, Any]] = {
    "is-html": {"output": "<p>Hello</p>"},
    "contains-html": {"output": "Some <b>bold</b> words"},
    "is-xml": {"value": {"requiredElements": ["note.to"]}, "output": NOTE},
    "contains-xml": {"value": ["note.to"], "output": f"Here: {NOTE}"},
}
