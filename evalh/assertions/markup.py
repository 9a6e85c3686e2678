"""Markup assertions: is-html / contains-html and is-xml / contains-xml, as promptfoo's
``src/assertions/html.ts`` and ``src/assertions/xml.ts``.

Model outputs are untrusted, so XML is parsed by the standard library's expat with every DTD refused
before its internal subset is read: no entity is ever declared, so an entity-expansion payload (billion
laughs) fails at its DOCTYPE instead of expanding. External entities are never fetched. HTML is read with
the standard library's ``html.parser``, which never executes or fetches anything.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from html.parser import HTMLParser
from typing import Any
from xml.parsers import expat

from evalh.assertions.base import AssertionContext
from evalh.assertions.registry import UNUSED_VALUE, assertion
from evalh.model import Measurement

__all__ = ["contains_html_markup", "validate_html", "validate_xml", "xml_fragment"]

MAX_INPUT_SIZE = 10 * 1024 * 1024  # promptfoo's limit for the HTML checks

# promptfoo's HTML indicators (containsHtml): at least two points make an output contain HTML.
_OPENING = re.compile(r"<[a-zA-Z][a-zA-Z0-9-]*(?:\s[^>]*)?>")
_CLOSING = re.compile(r"</[a-zA-Z][a-zA-Z0-9-]*\s*>")
_SELF_CLOSING = re.compile(r"<[a-zA-Z][a-zA-Z0-9-]*(?:\s[^>]*)?/>")
_ENTITY = re.compile(r"&(?:[a-zA-Z]+|#[0-9]+|#x[0-9a-fA-F]+);")
_DOCTYPE = re.compile(r"<!DOCTYPE\s+html", re.IGNORECASE)
_COMMENT = re.compile(r"<!--[^-]*(?:-[^-]+)*-->")  # linear: each repetition starts at a '-'
_ATTRIBUTE = re.compile(r"\s[a-zA-Z-]+=\s*[\"'][^\"']*[\"']")
_COMMON_TAG = re.compile(
    r"<(html|head|body|div|span|p|a|img|h[1-6]|ul|ol|li|table|tr|td|th|form|input|button|script|style"
    r"|link|meta|br|hr)\b",
    re.IGNORECASE,
)
# The elements promptfoo's is-html recognises (plus any custom element, whose name has a '-').
_ELEMENT_NAMES = (
    "html head title base link meta style body article section nav aside h1 h2 h3 h4 h5 h6 header footer "
    "address p hr pre blockquote ol ul li dl dt dd figure figcaption main div a em strong small s cite q "
    "dfn abbr ruby rt rp data time code var samp kbd sub sup i b u mark bdi bdo span br wbr img iframe "
    "embed object param picture source video audio track map area svg math script noscript canvas ins del "
    "table caption colgroup col tbody thead tfoot tr td th form label input button select datalist "
    "optgroup option textarea output progress meter fieldset legend details summary dialog menu slot "
    "template"
)
_HTML_ELEMENTS = frozenset(_ELEMENT_NAMES.split())
_VOID_NAMES = "area base br col embed hr img input link meta param source track wbr"
_VOID = frozenset(_VOID_NAMES.split())
_WRAPPERS = frozenset({"html", "head", "body"})
_XML_NAME = re.compile(r"[A-Za-z_:][-A-Za-z0-9_:.]*")

_PATHS: Mapping[str, Any] = {"type": "array", "items": {"type": ["string", "number"]}}
_XML_VALUE: Mapping[str, Any] = {
    "anyOf": [
        {"type": "string", "description": "Comma-separated required element paths."},
        _PATHS,
        {"type": "object", "properties": {"requiredElements": _PATHS}, "additionalProperties": False},
    ],
    "description": 'Optional element paths: "root.child, root.other", a list, or {requiredElements}.',
}


# --- HTML ---------------------------------------------------------------------------------------------


def contains_html_markup(text: str) -> bool:
    """promptfoo's containsHtml: tags, entities, comments, a doctype and attributes score indicators."""
    if len(text) > MAX_INPUT_SIZE:
        return False
    opening, closing = bool(_OPENING.search(text)), bool(_CLOSING.search(text))
    points = 2 if opening and closing else int(opening or closing)
    points += sum(bool(p.search(text)) for p in (_SELF_CLOSING, _ENTITY, _COMMENT, _ATTRIBUTE))
    points += 2 * sum(bool(p.search(text)) for p in (_DOCTYPE, _COMMON_TAG))
    return points >= 2


class _HtmlScan(HTMLParser):
    """Whether text stands outside every element (parse5 would put it in the implied body) and whether
    a recognised element appears."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.depth = 0
        self.top_level_text = False
        self.recognised = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _HTML_ELEMENTS or "-" in tag:
            self.recognised = True
        if tag not in _WRAPPERS and tag not in _VOID:
            self.depth += 1

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _HTML_ELEMENTS or "-" in tag:
            self.recognised = True

    def handle_endtag(self, tag: str) -> None:
        if tag not in _WRAPPERS and tag not in _VOID and self.depth > 0:
            self.depth -= 1

    def handle_data(self, data: str) -> None:
        if self.depth == 0 and data.strip():
            self.top_level_text = True


def validate_html(text: str) -> tuple[bool, str]:
    """promptfoo's validateHtml: (is HTML, reason)."""
    trimmed = text.strip()
    if not trimmed:
        return False, "Output is empty"
    if len(trimmed) > MAX_INPUT_SIZE:
        return False, "Output exceeds maximum size limit"
    if re.match(r"<\?xml", trimmed, re.IGNORECASE):
        return False, "Output appears to be XML, not HTML"
    scan = _HtmlScan()
    scan.feed(trimmed)
    scan.close()
    # a literal <body> owns its text; otherwise loose text means a fragment, not a document
    if scan.top_level_text and not re.search(r"<body(?=[\s>/])", trimmed.lower()):
        return False, "Output must be wrapped in HTML tags"
    if not scan.recognised:
        return False, "Output does not contain recognized HTML elements"
    return True, "Output is valid HTML"


# --- XML ----------------------------------------------------------------------------------------------


class _Refused(Exception):
    """A DTD in untrusted XML."""


def _refuse_subset(_name: str, _sysid: str | None, _pubid: str | None, has_internal_subset: int) -> None:
    if has_internal_subset:
        raise _Refused("DTD internal subsets are not supported by is-xml validation")


def _refuse_entity(*_args: Any) -> None:
    raise _Refused("DTD internal subsets are not supported by is-xml validation")


def _parse_xml(text: str, *, keep_unknown_entities: bool = False) -> dict[str, Any]:
    """``text`` as fast-xml-parser's object (children by name, repeats as lists, attributes as ``@_``
    keys, a text-only element as its trimmed text); raises ExpatError or _Refused.

    ``keep_unknown_entities`` reads an undeclared ``&name;`` as its literal text, as fast-xml-parser
    does for contains-xml: expat is told of a DTD it never loads, so the reference is skipped, never
    expanded."""
    parser = expat.ParserCreate()
    parser.StartDoctypeDeclHandler = _refuse_subset
    parser.EntityDeclHandler = _refuse_entity
    parser.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)
    stack: list[tuple[dict[str, Any], list[str]]] = [({}, [])]
    if keep_unknown_entities:
        parser.UseForeignDTD(True)
        parser.SkippedEntityHandler = lambda name, _is_param: stack[-1][1].append(f"&{name};")

    def start(name: str, attrs: dict[str, str]) -> None:
        stack.append(({f"@_{k}": v for k, v in attrs.items()}, []))

    def end(name: str) -> None:
        node, texts = stack.pop()
        text = "".join(texts).strip()
        value: Any = node or text
        if node and text:
            node["#text"] = text
        _add_child(stack[-1][0], name, value)

    parser.StartElementHandler = start
    parser.EndElementHandler = end
    parser.CharacterDataHandler = lambda data: stack[-1][1].append(data)
    parser.Parse(text, True)
    return stack[0][0]


def _add_child(parent: dict[str, Any], name: str, value: Any) -> None:
    if name not in parent:
        parent[name] = value
    elif isinstance(parent[name], list):
        parent[name].append(value)
    else:
        parent[name] = [parent[name], value]


def _has_path(tree: Any, path: list[str]) -> bool:
    """promptfoo's hasElementPath: object keys, or a decimal index into a repeated element."""
    current = tree
    for key in path:
        if isinstance(current, list):
            if not key.isdigit() or str(int(key)) != key or int(key) >= len(current):
                return False
            current = current[int(key)]
        elif isinstance(current, dict) and key in current:
            current = current[key]
        else:
            return False
    return True


def _check_required(tree: dict[str, Any], required: list[str]) -> tuple[bool, str]:
    missing = [path for path in required if not _has_path(tree, path.split("."))]
    if missing:
        return False, f"XML is missing required elements: {', '.join(missing)}"
    return True, "XML is valid and contains all required elements"


def validate_xml(text: str, required: list[str]) -> tuple[bool, str]:
    """promptfoo's validateXml: the whole output is well-formed XML holding the required paths."""
    try:
        tree = _parse_xml(text)
    except _Refused as refused:
        return False, str(refused)
    except expat.ExpatError as error:
        return False, f"XML parsing failed: {error}"
    return _check_required(tree, required)


def _tag_end(text: str, start: int) -> int:
    """promptfoo's findTagEnd: the '>' closing the tag at ``start`` (quotes skipped), -1 when none."""
    quote = ""
    for i in range(start + 1, len(text)):
        char = text[i]
        if quote:
            quote = "" if char == quote else quote
        elif char in "\"'":
            quote = char
        elif char == "<":
            return -1
        elif char == ">":
            return i
    return -1


def _declaration_end(text: str, start: int) -> int:
    for opener, closer in (("<!--", "-->"), ("<![CDATA[", "]]>"), ("<?", "?>")):
        if text.startswith(opener, start):
            found = text.find(closer, start + len(opener))
            return len(text) - 1 if found < 0 else found + len(closer) - 1
    found = text.find(">", start)
    return len(text) - 1 if found < 0 else found


def _candidates(text: str) -> Iterator[tuple[int, int]]:
    """promptfoo's extractXmlCandidates: balanced elements, outermost first, and runs of siblings."""
    stack: list[tuple[str, int]] = []
    found: list[tuple[int, int, int | None]] = []  # start, end, start of the enclosing open element
    i = text.find("<")
    while 0 <= i < len(text) - 1:
        closing = text[i + 1] == "/"
        if text[i + 1] in "!?":
            i = text.find("<", _declaration_end(text, i) + 1)
            continue
        name = _XML_NAME.match(text, i + 2 if closing else i + 1)
        end = _tag_end(text, i) if name else -1
        if name is None or end < 0:
            i = text.find("<", i + 1)
            continue
        parent = stack[-1][1] if stack else None
        if closing:
            if stack and stack[-1][0] == name.group():
                start = stack.pop()[1]
                found.append((start, end + 1, stack[-1][1] if stack else None))
            else:
                stack.clear()
        elif text[i:end].rstrip().endswith("/"):
            found.append((i, end + 1, parent))
        else:
            stack.append((name.group(), i))
        i = text.find("<", end + 1)
    yield from _ordered(found)


def _ordered(found: list[tuple[int, int, int | None]]) -> Iterator[tuple[int, int]]:
    starts = {start for start, _, _ in found}
    siblings: dict[int | None, list[tuple[int, int]]] = {}
    for start, end, parent in found:
        siblings.setdefault(parent, []).append((start, end))
    seen: set[tuple[int, int]] = set()
    runs = [
        (min(group)[0], max(group, key=lambda c: c[1])[1])
        for parent, group in siblings.items()
        if len(group) > 1 and (parent is None or parent not in starts)
    ]
    maximal = sorted(
        ((s, e) for s, e, p in found if p is None or p not in starts), key=lambda c: (c[0], -c[1])
    )
    for candidate in runs + maximal:
        if candidate not in seen:
            seen.add(candidate)
            yield candidate


def xml_fragment(text: str, required: list[str]) -> tuple[bool, str]:
    """promptfoo's containsXml: some balanced fragment parses and holds the required paths."""
    well_formed: list[tuple[int, int]] = []
    any_candidate = False
    for start, end in _candidates(text):
        any_candidate = True
        if any(start >= s and end <= e for s, e in well_formed):
            continue
        # siblings side by side parse as fast-xml-parser reads them: several top-level elements
        wrapper = "evalh-fragment"
        try:
            tree = _parse_xml(f"<{wrapper}>{text[start:end]}</{wrapper}>", keep_unknown_entities=True)
            tree = tree[wrapper]
        except (expat.ExpatError, _Refused):
            continue
        ok, reason = _check_required(tree if isinstance(tree, dict) else {}, required)
        if ok:
            return True, reason
        well_formed.append((start, end))
    if not any_candidate:
        return False, "No XML content found in the output"
    return False, "No valid XML content found matching the requirements"


def _required(value: Any) -> list[str]:
    """promptfoo's value forms: "a.b, c.d", a list, or {requiredElements: [...]}; none when absent."""
    if isinstance(value, str):
        return [part.strip() for part in value.split(",")] if value else []
    if isinstance(value, list):
        return [str(item) for item in value]
    if isinstance(value, Mapping):
        return [str(item) for item in value.get("requiredElements") or []]
    return []


# --- registrations ------------------------------------------------------------------------------------


def _result(ok: bool, reason: str) -> Measurement:
    return Measurement.pass_fail(ok, reason)


@assertion(
    "is-html",
    family="markup",
    description="The whole output is HTML: recognised elements, no loose text outside them",
    value_schema=UNUSED_VALUE,
)
def is_html(ctx: AssertionContext) -> Measurement:
    return _result(*validate_html(ctx.output_text))


@assertion(
    "contains-html",
    family="markup",
    description="The output has at least two HTML indicators (tags, entities, attributes, comments, doctype)",
    value_schema=UNUSED_VALUE,
)
def contains_html(ctx: AssertionContext) -> Measurement:
    if contains_html_markup(ctx.output_text):
        return _result(True, "Output contains HTML content")
    return _result(False, "Expected output to contain HTML content")


@assertion(
    "is-xml",
    family="markup",
    description="The whole output is well-formed XML (no DTD), holding the value's required element paths",
    value_schema=_XML_VALUE,
)
def is_xml(ctx: AssertionContext) -> Measurement:
    return _result(*validate_xml(ctx.output_text, _required(ctx.value)))


@assertion(
    "contains-xml",
    family="markup",
    description="Some XML fragment of the output is well-formed and holds the value's required paths",
    value_schema=_XML_VALUE,
)
def contains_xml(ctx: AssertionContext) -> Measurement:
    return _result(*xml_fragment(ctx.output_text, _required(ctx.value)))
