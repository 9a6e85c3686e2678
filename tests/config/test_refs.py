"""promptfoo's ``$ref``: JSON pointers inside a config (promptfoo's simple-test example uses
``$ref: '#/assertionTemplates/containsPirateNoise'``), through the CLI as a user runs it."""

from __future__ import annotations

import json
from pathlib import Path

from evalh.config.load import load_suite
from tests.config.test_promptfoo_semantics import run_rows as run
from tests.config.test_promptfoo_semantics import write


def test_an_assertion_template_is_used_through_ref(tmp_path: Path) -> None:
    config = write(
        tmp_path / "promptfooconfig.yaml",
        """
        prompts: ["Ahoy {{ body }}, arrr"]
        providers: [echo]
        tests:
          - vars: {body: matey}
            assert:
              - $ref: '#/assertionTemplates/pirate'
              - $ref: '#/assertionTemplates/pirate'
                value: nope         # a key beside $ref wins over the template's
                metric: overridden
        assertionTemplates:
          pirate: {type: icontains, value: ARRR, metric: pirate}
        """,
    )
    result, rows = run(config)
    components = rows[0]["gradingResult"]["componentResults"]
    assert [(c["assertion"]["type"], c["assertion"]["value"], c["pass"]) for c in components] == [
        ("icontains", "ARRR", True),
        ("icontains", "nope", False),
    ]
    assert [c["assertion"]["metric"] for c in components] == ["pirate", "overridden"]
    assert result.exit_code == 1  # the second one fails, as written


def test_a_tools_schema_keeps_its_own_refs_and_an_unknown_pointer_stays(tmp_path: Path) -> None:
    tool = {"type": "function", "function": {"name": "f", "parameters": {"$ref": "#/definitions/args"}}}
    schema = {"definitions": {"n": {"type": "number"}}, "properties": {"x": {"$ref": "#/definitions/n"}}}
    config = write(
        tmp_path / "promptfooconfig.yaml",
        f"""
        prompts: ["{{{{ q }}}}"]
        providers:
          - id: echo
            config: {{tools: [{json.dumps(tool)}]}}
        tests:
          - vars: {{q: '{{"x": 1}}'}}
            assert:
              - {{type: is-json, value: {json.dumps(schema)}}}
        definitions: {{args: {{type: object}}}}
        """,
    )
    suite = load_suite(config)
    assert suite.providers[0].config["tools"] == [tool]  # a model reads the schema as written
    assert suite.tests[0].asserts[0].value == schema  # "#/definitions/n" is not the config's
    result, rows = run(config)
    assert rows[0]["success"] is True, result.stderr


def test_a_reference_into_a_file_or_a_loop_is_a_located_error(tmp_path: Path) -> None:
    into_file = write(
        tmp_path / "promptfooconfig.yaml",
        """
        prompts: [hi]
        providers: [echo]
        tests:
          - assert:
              - $ref: 'other.yaml#/check'
        """,
    )
    result, _ = run(into_file)
    assert result.exit_code == 2
    assert "promptfooconfig.yaml:6:" in result.stderr and "points into another file" in result.stderr
    assert "Load a file with file://" in result.stderr
    looping = write(
        tmp_path / "loop.yaml",
        """
        prompts: [hi]
        providers: [echo]
        tests:
          - assert: [{$ref: '#/loop/a'}]
        loop:
          a: {$ref: '#/loop/b'}
          b: {$ref: '#/loop/a'}
        """,
    )
    result, _ = run(looping)
    assert result.exit_code == 2
    assert "refers to itself through #/loop/a -> #/loop/b" in result.stderr
