"""Each render has a budget (steps, a deadline, a size): a hostile template is a located error, quickly,
in ``evalh validate`` and ``evalh run``; ordinary templates and long variables are unaffected."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from evalh.cli.app import app
from evalh.errors import TemplateError
from evalh.templating import budget, render_template

WHERE = "evalh.yaml:3:5 tests[0].vars.q"

HOSTILE = {
    "nested loops": "{% for a in range(100000) %}{% for b in range(100000) %}{% endfor %}{% endfor %}",
    "loops over a list": "{% set x = [0] * 1000000 %}{% for a in x %}{% for b in x %}{% endfor %}"
    "{% endfor %}",
    "replace filter": "{{ ('a' * 100000) | replace('a', 'b' * 100000) }}",
    "replace method": "{{ ('a' * 100000).replace('', 'b' * 100000) }}",
    "center in a loop": "{% for i in range(100000) %}{{ '' | center(99999) }}{% endfor %}",
    "padding in a loop": "{% for i in range(100000) %}{{ i | string | center(99999) }}{% endfor %}",
    "text in a loop": "{% for i in range(100000) %}" + "x" * 200 + "{% endfor %}",
    "map ... join": "{{ range(100000) | map('string') | join('x' * 100000) }}",
    "join method": "{{ ('x' * 100000).join(range(100000) | map('string')) }}",
    "doubling with ~": "{% set ns = namespace(s='ab') %}{% for i in range(60) %}{% set ns.s = ns.s ~ ns.s %}"
    "{% endfor %}",
    "doubling with +": "{% set ns = namespace(s=[1]) %}{% for i in range(60) %}{% set ns.s = ns.s + ns.s %}"
    "{% endfor %}",
    "exponential macro": "{% macro f(n) %}{% if n %}{{ f(n - 1) }}{{ f(n - 1) }}{% endif %}{% endmacro %}"
    "{{ f(60) }}",
    "indent": "{{ ('x\\n' * 500000) | indent(99999) }}",
    "expandtabs": "{{ ('\\t' * 1000000).expandtabs(99999) }}",
    "sum of lists": "{{ ([[0] * 1000000] * 1000) | sum(start=[]) | length }}",
    "many small values": "{% for i in range(100000) %}{% set s = ('x' * 1000) | upper %}{% endfor %}",
}


@pytest.mark.parametrize("template", HOSTILE.values(), ids=HOSTILE.keys())
def test_a_hostile_template_is_stopped_with_a_located_error(
    template: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(budget, "MAX_STEPS", 100_000)  # the exponential macro stops in 1 s, not 10
    with pytest.raises(TemplateError) as caught:
        render_template(template, {}, where=WHERE)
    message = caught.value.render()
    assert message.startswith(f"{WHERE}: template ")
    assert " was stopped: " in message
    assert "simplify the template, or compute large or repeated values in code" in message


def test_the_message_says_which_bound_was_passed() -> None:
    def stopped(template: str) -> str:
        with pytest.raises(TemplateError) as caught:
            render_template(template, {}, where=WHERE)
        return str(caught.value)

    assert "it ran more than 1,000,000 loop iterations, calls and filters" in stopped(HOSTILE["nested loops"])
    assert "it would build a value of 10,000,000,000 characters" in stopped(HOSTILE["replace filter"])
    assert "its output would be longer than 10,000,000 characters" in stopped(HOSTILE["center in a loop"])
    assert "the values it built total more than 40,000,000 characters" in stopped(
        HOSTILE["many small values"]
    )


def test_the_deadline_stops_a_render(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(budget, "RENDER_DEADLINE_S", -1.0)  # passed at once: no timing in the test
    with pytest.raises(TemplateError, match="was stopped: it ran longer than -1 s"):
        render_template("{% for i in range(1000) %}{{ i }}{% endfor %}", {}, where=WHERE)


def test_ordinary_templates_and_long_variables_render() -> None:
    items = [{"name": f"item {i}", "text": f" text {i} "} for i in range(10_000)]
    listing = render_template(
        "{% for item in items %}- {{ item.name | title }}: {{ item.text | trim }}\n{% endfor %}",
        {"items": items},
        where=WHERE,
    )
    assert listing.count("\n") == 10_000 and listing.startswith("- Item 0: text 0\n")
    document = "word " * 4_000_000  # 20 M characters: past the base size, within the variables' share
    quoted = render_template(
        "Summarize:\n{{ doc }}\n{{ doc | upper | length }}", {"doc": document}, where=WHERE
    )
    assert quoted == f"Summarize:\n{document}\n{len(document)}"
    assert render_template("{{ ('a' * 1000) | replace('a', 'bb') | length }}", {}, where=WHERE) == "2000"
    assert (
        render_template("{{ [1, 2, 3] | join(', ') }} {{ ', '.join(['x', 'y']) }}", {}, where=WHERE)
        == "1, 2, 3 x, y"
    )


def _write(path: Path, text: str) -> Path:
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


@pytest.mark.parametrize("command", ["validate", "run"])
def test_a_hostile_template_in_a_csv_cell_is_a_located_config_error(tmp_path: Path, command: str) -> None:
    hostile = HOSTILE["nested loops"]
    (tmp_path / "t.csv").write_text(
        f'q,__expected\nhello,equals:hello\nhi,"contains:{hostile}"\n', encoding="utf-8"
    )
    config = _write(tmp_path / "evalh.yaml", 'prompts: ["{{q}}"]\nproviders: [echo]\ntests: file://t.csv\n')
    result = CliRunner().invoke(app, [command, "-c", str(config)])
    assert result.exit_code == 2, result.output
    message = " ".join(result.stderr.split())
    assert "t.csv:3:2 tests[1].assert[0].value: template '{% for a in range(100000) %}" in message
    assert "was stopped: it ran more than 1,000,000 loop iterations, calls and filters" in message
    assert "Traceback" not in result.stderr


def test_in_a_run_a_hostile_prompt_stops_the_run_naming_the_prompt_and_test(tmp_path: Path) -> None:
    config = _write(
        tmp_path / "evalh.yaml",
        """
        prompts: ["{% for a in range(n) %}{% for b in range(n) %}x{% endfor %}{% endfor %}{{q}}"]
        providers: [echo]
        tests:
          - vars: {q: hello, n: 3}
          - vars: {q: hi, n: 100000}
        """,
    )
    report = tmp_path / "r.json"
    result = CliRunner().invoke(app, ["run", "-c", str(config), "-o", str(report)])
    assert result.exit_code == 2, result.output
    message = " ".join(result.stderr.split())
    assert "prompts[0] (for tests[1]): template" in message and "was stopped: it ran more than" in message
    assert not report.exists() or json.loads(report.read_text(encoding="utf-8"))
