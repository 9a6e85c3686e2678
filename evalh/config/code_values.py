"""Assertion values that are code (``python``; any type registered with ``code_language``): never templates.

promptfoo renders every assertion value as a template before it runs it, so ``output == '{{ title }}'``
with the var ``title`` set to ``' or __import__('os').system('id') or '`` runs the var as code. evalh
never renders code: the code reads vars as data from its context (``context['vars']['title']`` in
Python, ``context.vars.title`` in JavaScript).

One placement is kept, so promptfoo configs keep working: in Python, a string literal that is exactly one
``{{ expression }}`` (``'{{ title }}'``) becomes a literal of the expression's rendered text (its
``repr``), so ``O'Brien``, backslashes, newlines or a payload stay one string. Python's tokenizer finds
those literals, and the parser the worker uses confirms each one (with a random placeholder) before any
value goes in. A template anywhere else (inside a larger string, in an expression or a comment, a
``{% %}`` tag, a ``file://`` path) is a located config error naming the fix; so is any template in a
language that has no tokenizer here (JavaScript, for now).
"""

from __future__ import annotations

import ast
import io
import re
import secrets
import tokenize
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

from evalh.assertions.registry import CodeLanguage
from evalh.errors import TemplateError, Where
from evalh.templating import has_template, referenced_names

__all__ = ["code_value", "has_code_template"]

# What a template engine would render: {{ ... }}, {% ... %}, {# ... #} (a lone "{{" is not one)
_CONSTRUCT = re.compile(r"\{\{.*?\}\}|\{%.*?%\}|\{#.*?#\}", re.DOTALL)
_VARS_AS_DATA = {"python": "context['vars']['name']", "javascript": "context.vars.name"}
_TWO_BRACES = {"python": "'{' * 2", "javascript": "'{'.repeat(2)"}
_PLAIN_PREFIXES = frozenset({"", "r", "u"})  # a str literal (not bytes, not an f-string)


@dataclass(frozen=True)
class _Literal:
    """A string literal of the code that is exactly one template: [start, end) is the whole literal,
    quotes and prefix included; [body_start, body_end) the template inside the quotes."""

    start: int
    end: int
    body_start: int
    body_end: int


@dataclass(frozen=True)
class _Problem:
    text: str
    hint: str


def has_code_template(code: str) -> bool:
    """True if ``code`` is a template that promptfoo would have rendered: it holds a ``{{ }}``,
    ``{% %}`` or ``{# #}`` and parses as a template. (Code that does not parse, such as
    ``'{{' in output and {'a': {'b': 1}}``, failed in promptfoo, so it holds no template to keep.)"""
    if not has_template(code) or _CONSTRUCT.search(code) is None:
        return False
    try:
        referenced_names(code, where="")
    except TemplateError:
        return False
    return True


def code_value(language: CodeLanguage, code: str, render: Callable[[str], str], *, where: Where) -> str:
    """``code`` with each template that is a whole string literal replaced by a literal of ``render``'s
    text for it. Raises TemplateError (at ``where``) for any other template."""
    if not has_code_template(code):
        return code
    if code.startswith("file://"):
        raise TemplateError(
            f"the file:// path of {language} code is never rendered as a template",
            where=where,
            hint="Write the path itself; the code can read vars as data: " + _VARS_AS_DATA[language],
        )
    found = _python_literals(code) if language == "python" else (_first_problem(language, code) or ())
    if isinstance(found, _Problem):
        raise TemplateError(found.text, where=where, hint=found.hint)
    pieces: list[str] = []
    position = 0
    for literal in found:
        text = render(code[literal.body_start : literal.body_end])
        pieces += [code[position : literal.start], repr(text)]
        position = literal.end
    return "".join([*pieces, code[position:]])


def _first_problem(language: CodeLanguage, code: str, literals: tuple[_Literal, ...] = ()) -> _Problem | None:
    """The first template of ``code`` that is not the body of one of ``literals``."""
    bodies = {(literal.body_start, literal.body_end) for literal in literals}
    for match in _CONSTRUCT.finditer(code):
        if match.span() in bodies:
            continue
        line = code.count("\n", 0, match.start()) + 1
        column = match.start() - (code.rfind("\n", 0, match.start()) + 1) + 1
        excerpt = match.group()
        excerpt = excerpt if len(excerpt) <= 40 else excerpt[:37] + "..."
        place = f"{excerpt!r} (line {line}, column {column} of the code)"
        if language == "python":
            place += (
                " is not a string literal of its own: only a '{{ name }}' alone between quotes is "
                "replaced, by its value"
            )
        return _Problem(
            f"{language} code is never rendered as a template, and {place}",
            f"Read vars as data in the code: {_VARS_AS_DATA[language]} instead of {{{{ name }}}} "
            f"(and write a literal '{{{{' as {_TWO_BRACES[language]})",
        )
    return None


@lru_cache(maxsize=1024)
def _python_literals(code: str) -> tuple[_Literal, ...] | _Problem:
    """The string literals of Python ``code`` that are exactly one template, confirmed by the parser;
    or the problem with the first template that is anywhere else."""
    try:
        literals = tuple(_template_strings(code))
    except (tokenize.TokenError, SyntaxError) as error:
        return _Problem(
            f"python code holding a template cannot be read as Python ({error})",
            f"Read vars as data in the code: {_VARS_AS_DATA['python']} instead of {{{{ name }}}}",
        )
    problem = _first_problem("python", code, literals)
    if problem is not None:
        return problem
    return _confirmed(code, literals)


def _template_strings(code: str) -> list[_Literal]:
    """STRING tokens of plain str literals whose text between the quotes is one ``{{ }}`` (one line)."""
    lines = io.StringIO(code).readlines()
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))
    found: list[_Literal] = []
    for token in tokenize.generate_tokens(io.StringIO(code).readline):
        if token.type != tokenize.STRING:
            continue
        text = token.string
        quote_at = min(i for i in (text.find("'"), text.find('"')) if i >= 0)
        quotes = 3 if text[quote_at : quote_at + 3] in ("'''", '"""') else 1
        body = text[quote_at + quotes : len(text) - quotes]
        whole = body.startswith("{{") and _CONSTRUCT.fullmatch(body) is not None and "\n" not in body
        if whole and text[:quote_at].lower() in _PLAIN_PREFIXES:
            start = starts[token.start[0] - 1] + token.start[1]
            end = start + len(text)
            found.append(_Literal(start, end, start + quote_at + quotes, end - quotes))
    return found


def _confirmed(code: str, literals: tuple[_Literal, ...]) -> tuple[_Literal, ...] | _Problem:
    """``literals`` if the parser sees each as a whole str constant (not in an f-string) of the code.

    Each literal is swapped for a random placeholder literal and the code is parsed as a worker parses it:
    a literal the tokenizer misjudged (really inside another string, a comment or an f-string) is then
    not a constant equal to its placeholder, and nothing is substituted."""
    token = secrets.token_hex(8)
    placeholders = [f"evalh_template_{index}_{token}" for index in range(len(literals))]
    pieces: list[str] = []
    position = 0
    for literal, placeholder in zip(literals, placeholders, strict=True):
        pieces += [code[position : literal.start], repr(placeholder)]
        position = literal.end
    from evalh.runtimes.python_worker import parse_inline  # the worker's parse: only for python code

    try:
        body = parse_inline("".join([*pieces, code[position:]]))
    except (SyntaxError, ValueError) as error:  # ValueError: a null byte
        return _Problem(
            f"python code has a syntax error: {getattr(error, 'msg', error)} (at line "
            f"{getattr(error, 'lineno', '?')} of the code)",
            "Fix the code; it reads vars as data: " + _VARS_AS_DATA["python"],
        )
    in_fstrings = {
        id(part) for node in _walk(body) if isinstance(node, ast.JoinedStr) for part in node.values
    }
    seen = [
        node.value
        for node in _walk(body)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in in_fstrings
    ]
    if all(seen.count(placeholder) == 1 for placeholder in placeholders):
        return literals
    return _Problem(
        "python code is never rendered as a template, and a '{{ ... }}' string of it is not a plain "
        "string literal (inside an f-string or joined to another string)",
        f"Read vars as data in the code: {_VARS_AS_DATA['python']} instead of {{{{ name }}}}",
    )


def _walk(body: list[ast.stmt]) -> list[ast.AST]:
    return [node for statement in body for node in ast.walk(statement)]
