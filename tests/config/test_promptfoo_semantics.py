"""promptfoo suites run unchanged: the semantics that would silently change a verdict (issue 10, item 6).

Through the CLI in process: CSV ``__expected`` values trimmed as promptfoo trims them, list-valued vars
expanded into one test per value, chat prompts echoed as indented JSON, var files' trailing newlines
stripped.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

from typer.testing import CliRunner, Result

from evalh.cli.app import app


def evalh(*args: str) -> Result:
    return CliRunner().invoke(app, list(args))


def write(path: Path, text: str) -> Path:
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def run_rows(config: Path, *extra: str) -> tuple[Result, list[dict[str, Any]]]:
    report = config.parent / "out.json"
    result = evalh("run", str(config), "-o", str(report), "--no-table", "--no-progress-bar", *extra)
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr, result.stderr
    rows = json.loads(report.read_text(encoding="utf-8"))["results"]["results"] if report.exists() else []
    return result, rows


def test_csv_expected_values_are_trimmed_as_promptfoo_does(tmp_path: Path) -> None:
    write(
        tmp_path / "tests.csv",
        "__description,__expected,__providerOutput\n"
        'typed,"contains: Hello",Hello world\n'
        'list,"icontains-any: nope ,  WORLD",Hello world\n'
        "untyped,Paris ,Paris\n",
    )
    config = write(tmp_path / "c.yaml", "tests: file://tests.csv\n")
    result, rows = run_rows(config)
    verdicts = {row["description"]: row["success"] for row in rows}
    # "contains: Hello" looks for "Hello" (not " Hello"); an untyped cell is an equals of the cell
    # as written, trailing space included, as promptfoo compares it
    assert verdicts == {"typed": True, "list": True, "untyped": False}
    assert result.exit_code == 1


def test_a_list_valued_var_expands_into_one_test_per_value(tmp_path: Path) -> None:
    config = write(
        tmp_path / "c.yaml",
        """
        prompts: ["{{greeting}}, {{name}}"]
        providers: [echo]
        tests:
          - vars: {name: [Ada, Bob], greeting: [Hi, Yo], sizes: [1, 2]}
            assert: [{type: contains, value: "{{name}}"}]
          - vars: {name: [Cy, Di], greeting: Hey}
            options: {disableVarExpansion: true}
        """,
    )
    result, rows = run_rows(config)
    outputs = [row["response"]["output"] for row in rows]
    # the unexpanded list prints as Nunjucks prints it (JavaScript's String([...]))
    assert outputs == ["Hi, Ada", "Yo, Ada", "Hi, Bob", "Yo, Bob", "Hey, Cy,Di"], result.stderr
    assert [row["testIdx"] for row in rows] == [0, 1, 2, 3, 4]
    assert all(row["success"] for row in rows[:4])
    assert rows[0]["vars"]["sizes"] == [1, 2]  # not a list of strings: one value, as in promptfoo
    assert rows[4]["vars"]["name"] == ["Cy", "Di"]  # disableVarExpansion keeps the list as one value


def test_an_echoed_chat_prompt_is_indented_json(tmp_path: Path) -> None:
    config = write(
        tmp_path / "c.yaml",
        """
        prompts:
          - raw: [{role: system, content: Be brief}, {role: user, content: "Hi {{name}}"}]
        providers: [echo]
        tests:
          - vars: {name: Ada}
        """,
    )
    result, rows = run_rows(config)
    expected = [{"role": "system", "content": "Be brief"}, {"role": "user", "content": "Hi Ada"}]
    assert rows[0]["response"]["output"] == json.dumps(expected, indent=2)
    assert result.exit_code == 0


def test_var_files_and_block_vars_lose_their_trailing_newline(tmp_path: Path) -> None:
    (tmp_path / "topic.txt").write_text("\n  owls\n\n", encoding="utf-8")
    config = write(
        tmp_path / "c.yaml",
        """
        prompts: ["[{{topic}}] [{{style}}]"]
        providers: [echo]
        tests:
          - vars:
              topic: file://topic.txt
              style: |
                short
            assert: [{type: equals, value: "[owls] [short]"}]
        """,
    )
    result, rows = run_rows(config)
    assert rows[0]["response"]["output"] == "[owls] [short]"
    assert result.exit_code == 0


def test_a_pair_loop_walks_a_mapping_var_as_nunjucks_does(tmp_path: Path) -> None:
    config = write(
        tmp_path / "c.yaml",
        """
        prompts: ["{% for k, v in profile %}{{ k }}: {{ v }}\\n{% endfor %}"]
        providers: [echo]
        tests:
          - vars: {profile: {name: Ada, born: 1815}}
          - vars: {profile: [[name, Bob], [born, 1920]]}
        """,
    )
    result, rows = run_rows(config)
    assert [row["response"]["output"] for row in rows] == [
        "name: Ada\nborn: 1815\n",
        "name: Bob\nborn: 1920\n",
    ]
    assert result.exit_code == 0, result.stderr


def test_a_columns_named_scores_sum_score_times_weight_as_promptfoo_does(tmp_path: Path) -> None:
    config = write(
        tmp_path / "c.yaml",
        """
        prompts: ["{{text}}"]
        providers: [echo]
        tests:
          - vars: {text: alpha}
            assert:
              - {type: starts-with, value: al, metric: prefix, weight: 2}
          - vars: {text: beta}
            assert:
              - {type: starts-with, value: al, metric: prefix}
          - vars: {text: xyz}
            assert:
              - {type: starts-with, value: x, metric: other, weight: 3}
              - {type: contains, value: q, metric: other}
        """,
    )
    run_rows(config)
    report = json.loads((tmp_path / "out.json").read_text(encoding="utf-8"))
    metrics = report["results"]["prompts"][0]["metrics"]
    # promptfoo 0.123 (accumulateNamedMetric): each row adds its weighted mean x its summed weight, so
    # the column holds sum(score x weight): 1x2 + 0x1 for prefix, 1x3 + 0x1 for other
    assert metrics["namedScores"] == {"prefix": 2.0, "other": 3.0}
    assert metrics["namedScoresCount"] == {"prefix": 2, "other": 2}
    assert metrics["namedScoreWeights"] == {"prefix": 3.0, "other": 4.0}


def test_test_vars_and_nunjucks_filters_may_be_plain_paths_as_promptfoo_documents(tmp_path: Path) -> None:
    (tmp_path / "vars").mkdir()
    write(tmp_path / "vars" / "ada.yaml", "greeting: Hello\nname: Ada\n")
    write(tmp_path / "vars" / "grace.json", '{"greeting": "Hi", "name": "Grace"}')
    write(tmp_path / "vars" / "extra.yaml", "name: Lovelace\n")
    (tmp_path / "filters").mkdir()
    write(tmp_path / "filters" / "shout.js", "module.exports = (value) => `${value.toUpperCase()}!`;\n")
    config = write(
        tmp_path / "c.yaml",
        """
        prompts: ["{{greeting}} {{name | shout}}"]
        providers: [echo]
        nunjucksFilters:
          shout: ./filters/shout.js
        tests:
          - vars: vars/ada.yaml
          - vars: vars/*.json
          - vars: [vars/ada.yaml, vars/extra.yaml]
        """,
    )
    result, rows = run_rows(config)
    assert result.exit_code == 0, result.stderr
    assert [row["response"]["output"] for row in rows] == ["Hello ADA!", "Hi GRACE!", "Hello LOVELACE!"]
