"""promptfoo's ``nunjucksFilters`` (issue 10, item 4), through the CLI with the real JavaScript engine
and the real Python worker: each filter is the config's own code, used in prompts, var values and
assertion values; a broken entry is a located config error, a throwing filter fails the render.
"""

from __future__ import annotations

from pathlib import Path

from tests.config.test_promptfoo_semantics import evalh, run_rows, write
from tests.loopback import LoopbackServer, Reply


def test_javascript_and_python_filters_render_prompts_vars_and_assertions(tmp_path: Path) -> None:
    write(
        tmp_path / "shout.js",
        "module.exports = (value, mark) => String(value).toUpperCase() + (mark || '!');\n",
    )
    write(tmp_path / "filters.py", "def initials(value):\n    return ''.join(w[0] for w in value.split())\n")
    config = write(
        tmp_path / "c.yaml",
        """
        nunjucksFilters:
          shout: file://shout.js
          initials: file://filters.py
          upper: file://filters.py:initials
        prompts: ["{{ name | shout('?') }} {{ name | initials }} {{ name | upper }} {{ greeting }}"]
        providers: [echo]
        tests:
          - vars: {name: ada lovelace, greeting: "{{ 'hi' | shout }}"}
            assert: [{type: contains, value: "{{ name | initials }}"}]
        """,
    )
    result, rows = run_rows(config)
    assert result.exit_code == 0, result.stderr
    # a config's filter replaces a built-in of the same name (upper), as Nunjucks' addFilter does
    assert rows[0]["response"]["output"] == "ADA LOVELACE? al al HI!"


def test_a_later_suite_without_the_filters_does_not_see_them(tmp_path: Path) -> None:
    write(tmp_path / "shout.js", "module.exports = (value) => String(value).toUpperCase();\n")
    with_filters = write(
        tmp_path / "a.yaml",
        "nunjucksFilters: {upper: file://shout.js}\nprompts: ['{{ x | upper }}']\nproviders: [echo]\n"
        "tests: [{vars: {x: ab}}]\n",
    )
    without = write(
        tmp_path / "b.yaml", "prompts: ['{{ x | upper }}']\nproviders: [echo]\ntests: [{vars: {x: cd}}]\n"
    )
    assert run_rows(with_filters)[1][0]["response"]["output"] == "AB"
    assert run_rows(without)[1][0]["response"]["output"] == "CD"


def test_a_broken_filter_entry_is_a_located_config_error(tmp_path: Path) -> None:
    write(tmp_path / "filters.py", "def other(value):\n    return value\n")
    config = write(
        tmp_path / "c.yaml",
        """
        nunjucksFilters:
          gone: file://gone.js
          missing: file://filters.py
        prompts: ["{{ x }}"]
        providers: [echo]
        """,
    )
    result = evalh("validate", str(config))
    assert result.exit_code == 2
    assert "Traceback" not in result.stderr
    assert "c.yaml:3" in result.stderr and "gone.js was not found" in result.stderr
    assert "c.yaml:4" in result.stderr and "defines no function 'missing'" in result.stderr


def test_a_throwing_filter_fails_the_render_with_its_place(tmp_path: Path) -> None:
    write(tmp_path / "bad.js", "module.exports = (value) => { throw new Error('no ' + value); };\n")
    config = write(
        tmp_path / "c.yaml",
        """
        nunjucksFilters: {bad: file://bad.js}
        prompts: ["{{ x | bad }}"]
        providers: [echo]
        tests: [{vars: {x: way}}]
        """,
    )
    result, _ = run_rows(config)
    assert result.exit_code == 2, result.stderr
    assert "no way" in result.stderr and "prompts[0]" in result.stderr


def test_python_and_javascript_filters_render_templates_during_the_run(
    tmp_path: Path, loopback: LoopbackServer
) -> None:
    """An HTTP body renders inside the run (its event loop waits for the render): a Python filter
    works there too, beside Python assertions that keep the run's own workers busy."""
    loopback.route("POST", "/gen", lambda req: Reply.json({"output": req.json["text"]}))
    write(tmp_path / "f.py", "def tag(value):\n    return '<' + str(value) + '>'\n")
    write(tmp_path / "shout.js", "module.exports = (value) => String(value).toUpperCase();\n")
    check = "assert: [{{type: python, value: \"output == '<W{i}>'\"}}]"
    tests = "\n".join(f"  - vars: {{x: w{i}}}\n    " + check.format(i=i) for i in range(6))
    config = write(
        tmp_path / "c.yaml",
        f"""
nunjucksFilters: {{tag: file://f.py, shout: file://shout.js}}
prompts: ["{{{{ x }}}}"]
providers:
  - id: {loopback.url}/gen
    config: {{body: {{text: "{{{{ prompt | shout | tag }}}}"}}, responsePath: output}}
tests:
{tests}
""",
    )
    result, rows = run_rows(config)
    assert result.exit_code == 0, result.stderr
    assert [row["response"]["output"] for row in rows] == [f"<W{i}>" for i in range(6)]
    assert sorted(request.json["text"] for request in loopback.requests) == [f"<W{i}>" for i in range(6)]
