"""The Penn Treebank word tokenizer of js-rouge 3 (``treeBankTokenize``), which promptfoo 0.123's ``rouge-n``
scores over: punctuation marks are tokens of their own (``Hello , world .``), a sentence's final period is
split off but not an abbreviation's (``U.S.``), contractions are split (``do n't``, ``ca n't``, ``gon na``),
and double quotes become ``\u0060\u0060`` / ``''``. Only the text is tokenized here; rouge-n lower-cases it
first, as promptfoo does. The patterns are js-rouge's, in its order; its check for a modifier letter before
an opening quote (rare: a letter such as ``ʼ`` right before ``"``) is left out.
"""

from __future__ import annotations

import regex

__all__ = ["treebank_tokens"]

_QUOTES = regex.compile(r"``|''|\"")
_OPEN_BEFORE = regex.compile(r"[\s\p{Ps}<]")
_PUNCTUATION_BEFORE = regex.compile(r"[\s\p{P}<]")
_WORDLIKE = regex.compile(r"[\p{L}\p{N}\p{Sc}\p{Ps}]")
_ID_CONTINUE = r"[\p{ID_Continue}\u200c\u200d]"
_CONTRACTIONS = tuple(
    regex.compile(rf"(?<!{_ID_CONTINUE}){pattern}(?!{_ID_CONTINUE})", regex.IGNORECASE)
    for pattern in (
        "(can)(not)",
        "(d)('ye)",
        "(gim)(me)",
        "(gon)(na)",
        "(got)(ta)",
        "(lem)(me)",
        "(more)('n)",
        "(wan)(na)(?= )",
        "('t)(is)",
        "('t)(was)",
    )
)
# (pattern, replacement) in js-rouge's order, after the quotes
_SPACED = (
    (regex.compile(r"\.{3}"), " ... "),
    (regex.compile(r"[:,](?!\p{Nd})"), r" \g<0> "),
    (regex.compile(r"[;@#$%&]"), r" \g<0> "),
    (regex.compile(r"([^.])(?<!(?a:\b)[A-Za-z]\.[A-Za-z])(\.)([\])}>'\s]*)\Z"), r"\1 \2\3 "),
    (regex.compile(r"[?!]"), r" \g<0> "),
    (regex.compile(r"[\][(){}<>]"), r" \g<0> "),
    (regex.compile(r"--"), " -- "),
)
_CLITICS = (
    (regex.compile(r"([^'])' "), r"\1 ' "),
    (regex.compile(r"'([sSmMdD]) "), r" '\1 "),
    (regex.compile(r"('ll|'LL|'re|'RE|'ve|'VE|n't|N'T) "), r" \1 "),
)


def _char_before(text: str, index: int) -> str:
    return text[index - 1] if index > 0 else ""


def _opens(text: str, index: int, mark: str, previous_opened: bool) -> bool:
    """js-rouge's rule for whether a double quote at ``index`` opens (``\u0060\u0060``) or closes (``''``)."""
    if mark == "``":
        return True
    before = _char_before(text, index)
    if not (index + len(mark) < len(text) or index == 0 or _OPEN_BEFORE.fullmatch(before)):
        return False
    after_punctuation = (
        index == 0 or bool(_PUNCTUATION_BEFORE.fullmatch(before)) or text[index - 2 : index] == "``"
    )
    if previous_opened or not after_punctuation or before in (".", "!", "?"):
        return False
    if mark == '"':
        return True
    following = _QUOTES.search(text, index + 2)
    return (
        index > 0
        and bool(_WORDLIKE.fullmatch(text[index + 2 : index + 3]))
        and following is not None
        and following.group() == "''"
    )


def _mark_quotes(text: str) -> str:
    pieces: list[str] = []
    opened, last = False, 0
    for found in _QUOTES.finditer(text):
        opened = _opens(text, found.start(), found.group(), opened)
        pieces += [text[last : found.start()], " `` " if opened else " '' "]
        last = found.end()
    return "".join([*pieces, text[last:]])


def treebank_tokens(text: str) -> list[str]:
    """``text``'s tokens as js-rouge 3's ``treeBankTokenize`` returns them."""
    collapsed = regex.sub(r"[\s\u0085]+", " ", text).strip()
    if not collapsed:
        return []
    spaced = _mark_quotes(collapsed)
    for pattern, replacement in _SPACED:
        spaced = pattern.sub(replacement, spaced)
    spaced = f" {spaced} "
    for pattern, replacement in _CLITICS:
        spaced = pattern.sub(replacement, spaced)
    for pattern in _CONTRACTIONS:
        spaced = pattern.sub(lambda m: " " + " ".join(g for g in m.groups()) + " ", spaced)
    return regex.sub(r" {2,}", " ", spaced).strip(" ").split(" ")
