"""resolve_vars finds the file:// values, the trailing newlines and the templates in one pass over the vars:
on random vars (files of text and of data, templates reading other vars, cycles, --var literals, values
that are not text) it gives what loading each file, trimming each newline and then rendering the templates
in dependency order gives, or the same error."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from evalh.config.build import resolve_vars
from evalh.config.files import LoadContext, is_file_ref
from evalh.config.var_files import load_var_file
from evalh.errors import ConfigError
from evalh.templating import has_template, referenced_names, render_template

_NAMES = ["a", "b", "c", "d", "e"]


def _in_steps(variables: dict[str, Any], ctx: LoadContext, literal: frozenset[str]) -> dict[str, Any]:
    """The rule in separate steps: files loaded (their content literal), every text trimmed of one
    newline, then the templates of the vars that are not literal rendered, each after those it reads."""
    where = str
    for name, value in variables.items():
        if name not in literal and is_file_ref(value):
            variables[name] = value = load_var_file(ctx, value, where(name))
            literal = literal | {name}
        if isinstance(value, str) and value.endswith("\n"):
            variables[name] = value[:-1]
    pending = {
        name
        for name, value in variables.items()
        if name not in literal and isinstance(value, str) and has_template(value)
    }
    resolved = {name: value for name, value in variables.items() if name not in pending}
    visiting: list[str] = []

    def resolve(name: str) -> None:
        if name in resolved or name not in pending:
            return
        if name in visiting:
            raise ConfigError(f"cycle through {name}")
        visiting.append(name)
        for dependency in referenced_names(variables[name], where=name):
            resolve(dependency)
        visiting.pop()
        resolved[name] = render_template(variables[name], resolved, where=name)

    for name in list(variables):
        resolve(name)
    return {name: resolved[name] for name in variables}


def _value(rng: random.Random) -> Any:
    other = rng.choice(_NAMES)
    return rng.choice(
        [
            "plain",
            "two lines\n",
            "ends twice\n\n",
            f"{{{{{other}}}}}",
            f"x {{{{ {other} | upper }}}}\n",
            "file://note.txt",
            "file://note_crlf.txt",
            "file://data.json",
            "file://text.json",
            "file://{{a}}.txt",
            "{a} braces, no template",
            3,
            ["one", "two\n"],
            {"k": "{{a}}"},
            None,
            True,
        ]
    )


@pytest.fixture
def ctx(tmp_path: Path) -> LoadContext:
    (tmp_path / "note.txt").write_text("from a file {{a}}\n")
    (tmp_path / "note_crlf.txt").write_text("windows\r\n")
    (tmp_path / "text.json").write_text(json.dumps("a JSON text {{a}}\n"))  # not trimmed as a text file is
    (tmp_path / "data.json").write_text(json.dumps({"nested": "{{b}}", "n": 1}))
    return LoadContext(config_file=tmp_path / "evalh.yaml")


def _outcome(function: Any, variables: dict[str, Any], ctx: LoadContext, literal: frozenset[str]) -> Any:
    try:
        return function(dict(variables), ctx, literal)
    except ConfigError:  # a cycle (a TemplateError from resolve_vars)
        return "refused"


@pytest.mark.parametrize("seed", range(300))
def test_vars_resolve_as_in_separate_steps(ctx: LoadContext, seed: int) -> None:
    rng = random.Random(seed)
    variables = {name: _value(rng) for name in rng.sample(_NAMES, rng.randint(1, len(_NAMES)))}
    literal = frozenset(name for name in variables if rng.random() < 0.2)

    def one_pass(values: dict[str, Any], context: LoadContext, names: frozenset[str]) -> Any:
        return resolve_vars(values, str, context, literal=names)

    assert _outcome(one_pass, variables, ctx, literal) == _outcome(_in_steps, variables, ctx, literal)
