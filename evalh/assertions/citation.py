"""``citation-groundedness``: the output's citation markers must point at the sources it was given.

Sources come from ``value`` or from the test var named by ``config.fromVar``: a list of passages (cited
as [1], [2], ... in order), a list of objects (id ``config.idField``, default ``id``; text
``config.textField``, default ``text``), or a mapping ``{id: text}``. A marker resolves to the source
whose id it names (ignoring case) or, failing that, to the n-th source when it is a number n.

Markers are found with ``config.pattern`` (a regex whose first group holds the ids) or by default:
``[1]``, ``[doc-3]``, ``[1, 2]``, ``[^4]``; never a Markdown link ``[text](url)``. Each distinct cited
source is one citation, however often it is repeated.

With ``metadata.citation_evidence`` (in the provider response's metadata, or the test's metadata for
recorded outputs) each citation must also quote evidence that appears in its source: a list of
``{citation, quote, claim?}`` objects or a mapping ``{citation: quote or [quotes]}``. Quotes are compared
ignoring case, spacing and the style of quotes and dashes.

Score = grounded citations / citations. An answer with no citation scores 0 while ``config.required``
is true (the default), 1 otherwise.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from evalh.assertions.base import AssertionContext
from evalh.assertions.registry import assertion
from evalh.common.deadlines import REGEX_TIMEOUT_S
from evalh.model import AssertionResult, Measurement
from evalh.runtimes.patterns import PatternTimedOut, compile_pattern, find_all

if TYPE_CHECKING:
    from evalh.runtimes.patterns import Match, Pattern

__all__ = [
    "Sources",
    "citation_verdicts",
    "find_citations",
    "grounded_quote",
    "read_evidence",
    "read_sources",
]

_NAME = "citation-groundedness"
_TOKEN = r"\^?[^\W_][\w.:#/-]*"
_DEFAULT_MARKER = re.compile(rf"\[\s*({_TOKEN}(?:\s*[,;]\s*{_TOKEN})*)\s*\](?!\()")
_SPLIT = re.compile(r"\s*[,;]\s*")
_PUNCTUATION_STYLE = str.maketrans(
    {"‘": "'", "’": "'", "“": '"', "”": '"', "–": "-", "—": "-", "\u00a0": " "}
)
_NUMBER = re.compile(r"[0-9]+")
_SOURCES_HELP = "a list of passages, a list of {id, text} objects, or a mapping {id: text}"


def _fold(key: str) -> str:
    return unicodedata.normalize("NFC", key).casefold()


@dataclass(frozen=True)
class Sources:
    """The provided sources, in order: id -> text (None when only the id is known)."""

    texts: Mapping[str, str | None]
    order: tuple[str, ...] = field(default=())

    def resolve(self, token: str) -> str | None:
        """The id of the source a marker token names, or None."""
        token = token.strip().lstrip("^")
        if token in self.texts:
            return token
        folded = {_fold(key): key for key in self.texts}
        if _fold(token) in folded:
            return folded[_fold(token)]
        if _NUMBER.fullmatch(token) and 1 <= int(token) <= len(self.order):
            return self.order[int(token) - 1]
        return None


def _parse_if_json(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            return value
    return value


def read_sources(raw: Any, id_field: str = "id", text_field: str = "text") -> Sources | str:
    """The sources from a ``value`` or var, or a problem text."""
    raw = _parse_if_json(raw)
    texts: dict[str, str | None] = {}
    if isinstance(raw, Mapping):
        texts = {str(key).strip(): (text if isinstance(text, str) else None) for key, text in raw.items()}
        return Sources(texts=texts, order=tuple(texts))
    if not isinstance(raw, list | tuple):
        return f"needs the sources as {_SOURCES_HELP} (got {type(raw).__name__})"
    for position, item in enumerate(raw, start=1):
        if isinstance(item, str):
            texts[str(position)] = item
        elif isinstance(item, Mapping):
            key = item.get(id_field)
            text = item.get(text_field)
            texts[str(key).strip() if key is not None else str(position)] = (
                text if isinstance(text, str) else None
            )
        else:
            return f"source {position} is neither a passage nor an object (sources: {_SOURCES_HELP})"
    return Sources(texts=texts, order=tuple(texts))


def find_citations(
    text: str, pattern: re.Pattern[str] | Pattern | None = None, timeout_s: float = REGEX_TIMEOUT_S
) -> list[str]:
    """Every cited id in order of appearance (``[1, 2]`` gives "1" and "2"), repeats included. The
    config's pattern (a ``regex`` one) is searched within ``timeout_s`` (else PatternTimedOut)."""
    tokens: list[str] = []
    if pattern is None or isinstance(pattern, re.Pattern):
        matches: Iterable[re.Match[str] | Match] = (pattern or _DEFAULT_MARKER).finditer(text)
    else:
        matches = find_all(pattern, text, timeout_s)
    for match in matches:
        inside = match.group(1) if match.groups() else match.group(0)
        if inside is None:  # an optional group that did not take part: a marker citing nothing
            continue
        tokens += [token.lstrip("^") for token in _SPLIT.split(inside.strip()) if token.strip()]
    return tokens


def _comparable(text: str) -> str:
    return " ".join(unicodedata.normalize("NFKC", text).translate(_PUNCTUATION_STYLE).casefold().split())


def grounded_quote(quote: str, source: str) -> bool:
    """Whether ``quote`` appears in ``source``, ignoring case, spacing and quote/dash styles."""
    return bool(_comparable(quote)) and _comparable(quote) in _comparable(source)


def read_evidence(raw: Any) -> list[dict[str, str]] | str:
    """``metadata.citation_evidence`` as ``[{citation, quote, claim}]``, or a problem text."""
    raw = _parse_if_json(raw)
    entries: list[dict[str, str]] = []
    if isinstance(raw, Mapping):
        for citation, quotes in raw.items():
            for quote in quotes if isinstance(quotes, list | tuple) else [quotes]:
                entries.append({"citation": str(citation), "quote": str(quote), "claim": ""})
        return entries
    if not isinstance(raw, list | tuple):
        return "metadata.citation_evidence must be a list of {citation, quote} or a mapping"
    for index, item in enumerate(raw):
        citation = (
            item.get("citation", item.get("source", item.get("id"))) if isinstance(item, Mapping) else None
        )
        quote = item.get("quote", item.get("evidence")) if isinstance(item, Mapping) else None
        if citation is None or not isinstance(quote, str):
            return f"metadata.citation_evidence[{index}] needs a citation and a quote"
        claim = str(item.get("claim", ""))
        entries.append({"citation": str(citation).lstrip("[^").rstrip("]"), "quote": quote, "claim": claim})
    return entries


# ------------------------------------------------------------------------------------ verdicts


def _evidence_verdict(
    source_id: str, sources: Sources, evidence: Sequence[Mapping[str, str]]
) -> dict[str, Any]:
    entries = [entry for entry in evidence if sources.resolve(entry["citation"]) == source_id]
    if not entries:
        return {"grounded": False, "reason": "no evidence quoted for it"}
    text = sources.texts[source_id]
    if text is None:
        return {"grounded": False, "reason": "its source has no text to check the quotes against"}
    quotes = [{**entry, "found": grounded_quote(entry["quote"], text)} for entry in entries]
    missing = [entry["quote"] for entry in entries if not grounded_quote(entry["quote"], text)]
    if missing:
        shown = missing[0] if len(missing[0]) <= 60 else missing[0][:60] + "..."
        return {"grounded": False, "reason": f"quote {shown!r} is not in its source", "quotes": quotes}
    return {"grounded": True, "quotes": quotes}


def citation_verdicts(
    tokens: Sequence[str], sources: Sources, evidence: Sequence[Mapping[str, str]] | None
) -> list[dict[str, Any]]:
    """One verdict per distinct cited source (unresolved markers: one per distinct marker)."""
    verdicts: list[dict[str, Any]] = []
    seen: set[str] = set()
    for token in tokens:
        source_id = sources.resolve(token)
        key = source_id if source_id is not None else f"\0{token}"
        if key in seen:
            continue
        seen.add(key)
        verdict: dict[str, Any] = {"citation": token, "source": source_id, "grounded": source_id is not None}
        if source_id is None:
            verdict["reason"] = "no source has this id"
        elif evidence is not None:
            verdict.update(_evidence_verdict(source_id, sources, evidence))
        verdicts.append(verdict)
    return verdicts


# ---------------------------------------------------------------------------------- assertion


def _pattern_problem(config: Mapping[str, Any]) -> str | None:
    pattern = config.get("pattern")
    if pattern is None:
        return None
    compiled = compile_pattern(str(pattern))
    if isinstance(compiled, str):
        return f"needs config.pattern to be a valid regex ({compiled.split(': ', 1)[-1]})"
    if compiled.groups < 1:
        return "needs config.pattern to capture the cited ids in a group, e.g. '\\[(\\d+)\\]'"
    return None


_FIELD: dict[str, Any] = {"type": "string", "minLength": 1}
_CONFIG: dict[str, Any] = {
    "fromVar": {**_FIELD, "description": "Read the sources from this var instead of the value."},
    "idField": {**_FIELD, "description": "The id field of a source object (default id)."},
    "textField": {**_FIELD, "description": "The text field of a source object (default text)."},
    "required": {"type": "boolean", "description": "An answer without citations fails (default true)."},
    "pattern": {
        "type": "string",
        "minLength": 1,
        "description": "A regex whose first group captures the cited ids (default [1] markers).",
    },
}
_SOURCES_VALUE: dict[str, Any] = {
    "type": ["array", "object", "string"],
    "description": f"The sources: {_SOURCES_HELP} (or config.fromVar).",
}


def _check(value: Any, config: Mapping[str, Any]) -> str | None:
    """What the shapes cannot say: the sources are readable and not empty, the pattern compiles."""
    if value is None and "fromVar" not in config:
        return f"needs the sources: a value ({_SOURCES_HELP}) or config.fromVar naming a var"
    if value is not None and "fromVar" not in config:
        sources = read_sources(value, str(config.get("idField", "id")), str(config.get("textField", "text")))
        if isinstance(sources, str):
            return sources
        if not sources.texts:
            return "needs at least one source"
    return _pattern_problem(config)


def _inputs(ctx: AssertionContext) -> tuple[Sources, list[dict[str, str]] | None] | str:
    var_name = ctx.config.get("fromVar")
    if var_name is not None and var_name not in ctx.vars:
        return f"var {var_name!r} (config.fromVar) is not set for this test"
    raw = ctx.vars[var_name] if var_name is not None else ctx.value
    sources = read_sources(
        raw, str(ctx.config.get("idField", "id")), str(ctx.config.get("textField", "text"))
    )
    if isinstance(sources, str):
        return sources
    raw_evidence = ctx.provider_metadata.get("citation_evidence", ctx.test.metadata.get("citation_evidence"))
    if raw_evidence is None:
        return sources, None
    evidence = read_evidence(raw_evidence)
    return (sources, evidence) if not isinstance(evidence, str) else evidence


def _measured(verdicts: Sequence[Mapping[str, Any]], details: Mapping[str, Any]) -> Measurement:
    grounded = sum(1 for verdict in verdicts if verdict["grounded"])
    score = grounded / len(verdicts)
    subject = f"{grounded} of {len(verdicts)} citations are grounded in the sources: score {score:.4g}"
    bad = [f"[{v['citation']}] {v['reason']}" for v in verdicts if not v["grounded"]]
    suffix = f" ({'; '.join(bad[:5])}{'; ...' if len(bad) > 5 else ''})" if bad else ""
    return Measurement(value=score, subject=subject, suffix=suffix, details=details)


@assertion(
    _NAME,
    family="citation",
    description="Citation markers ([1], [doc-3]) point at provided sources (and quote them, with evidence)",
    default_threshold=1.0,
    threshold_meaning="min score",
    direction="higher",
    bounds=(0.0, 1.0),
    value_schema=_SOURCES_VALUE,
    config_schema=_CONFIG,
    check=_check,
)
def citation_groundedness(ctx: AssertionContext) -> AssertionResult | Measurement:
    inputs = _inputs(ctx)
    if isinstance(inputs, str):
        return AssertionResult.failure(inputs)
    sources, evidence = inputs
    pattern = compile_pattern(str(ctx.config["pattern"])) if "pattern" in ctx.config else None
    try:
        found = find_citations(ctx.output_text, None if isinstance(pattern, str) else pattern)
    except PatternTimedOut as error:
        return AssertionResult.failure(str(error))
    verdicts = citation_verdicts(found, sources, evidence)
    details: dict[str, Any] = {"citations": verdicts, "sources": list(sources.order)}
    if evidence is not None:
        cited = {verdict["source"] for verdict in verdicts}
        details["uncited_evidence"] = [e for e in evidence if sources.resolve(e["citation"]) not in cited]
    if verdicts:
        return _measured(verdicts, details)
    required = bool(ctx.config.get("required", True))
    score = 0.0 if required else 1.0
    why = "a citation is required" if required else "none required"
    return Measurement(
        value=score, subject=f"The answer cites no source ({why}): score {score:g}", details=details
    )
