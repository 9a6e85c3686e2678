"""The sql family: is-sql and contains-sql (promptfoo's src/assertions/sql.ts), parsed with sqlglot."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.assertions.test_structured import run
from tests.assertions.test_text import check  # the value's declared shape, then the type's check
from tests.config.test_promptfoo_semantics import evalh, run_rows, write


@pytest.mark.parametrize(
    "output",
    [
        "SELECT id, name FROM users WHERE id = 1;",
        "select * from t where name = 'it''s'",
        "INSERT INTO t (a) SELECT b FROM c",
        "UPDATE t SET a = 1 WHERE b = 2",
        "DELETE FROM t WHERE a = 1",
        "WITH a AS (SELECT 1) SELECT * FROM a",
        "SELECT 1; SELECT 2",
    ],
)
def test_sql_passes(output: str) -> None:
    result = run("is-sql", output)
    assert result.passed, result.reason


@pytest.mark.parametrize(
    "output",
    ["hello", "hello world", "SELECT FROM WHERE", "SELEC * FROM x", "The query is SELECT 1", "", "1 + 1"],
)
def test_what_is_not_sql_fails_with_promptfoos_reason(output: str) -> None:
    result = run("is-sql", output)
    assert not result.passed
    assert result.reason == "SQL statement does not conform to the provided MySQL database syntax."


def test_the_dialect_decides() -> None:
    # T-SQL's TOP is not MySQL; backtick quoting is MySQL, not T-SQL
    assert run("is-sql", "SELECT TOP 5 * FROM t", {"databaseType": "TransactSQL"}).passed
    assert not run("is-sql", "SELECT TOP 5 * FROM t").passed


def test_allowed_tables_and_columns_use_node_sql_parsers_authorities() -> None:
    sql = "SELECT name FROM departments"
    allowed = {"allowedTables": ["(select|update|insert|delete)::null::departments"]}
    assert run("is-sql", sql, allowed).passed
    denied = run("is-sql", "SELECT name FROM salaries", allowed)
    assert not denied.passed
    assert denied.reason == (
        "SQL validation failed: authority = 'select::null::salaries' is required in table whiteList "
        "to execute SQL = 'SELECT name FROM salaries'."
    )
    columns = {"allowedColumns": ["select::null::name", "update::null::id"]}
    assert run("is-sql", sql, columns).passed
    assert not run("is-sql", "SELECT name, salary FROM departments", columns).passed
    # an alias names its table; * is (.*)
    aliased = {"allowedColumns": ["select::departments::name"]}
    assert run("is-sql", "SELECT d.name FROM departments d", aliased).passed
    assert not run("is-sql", "SELECT * FROM departments", columns).passed
    assert run("is-sql", "SELECT * FROM departments", {"allowedColumns": [r"select::null::\(\.\*\)"]}).passed


def test_contains_sql_reads_the_first_code_block() -> None:
    fenced = "Here you go:\n```sql\nSELECT id FROM users\n```\nEnjoy."
    assert run("contains-sql", fenced).passed
    assert not run("is-sql", fenced).passed
    assert run("contains-sql", "SELECT id FROM users").passed  # no block: the whole output
    assert not run("contains-sql", "```\nnot sql at all\n```").passed


def test_value_checks() -> None:
    assert check("is-sql", None) is None
    assert check("is-sql", {"databaseType": "PostgresQL"}) is None
    assert check("is-sql", {"databaseType": "duckdb"}) is None
    problem = check("is-sql", {"databaseType": "DB2"})
    assert problem is not None and "'DB2' is not a dialect" in problem
    problem = check("contains-sql", {"allowedTables": ["(unclosed"]})
    assert problem is not None and "allowedTables entry '(unclosed'" in problem


def test_through_the_cli_with_located_value_errors(tmp_path: Path) -> None:
    config = write(
        tmp_path / "c.yaml",
        """
        providers: [echo]
        prompts: ["{{q}}"]
        tests:
          - vars: {q: "SELECT name FROM departments"}
            assert:
              - type: is-sql
                value: {databaseType: MySQL, allowedTables: ["select::null::departments"]}
              - type: not-contains-sql
                value: {allowedTables: ["select::null::other"]}
          - vars: {q: "SELECT name FROM departments"}
            assert: [{type: not-is-sql}]
        """,
    )
    result, rows = run_rows(config)
    assert result.exit_code == 1, result.stderr
    assert rows[0]["success"] is True
    assert rows[1]["success"] is False  # not-is-sql of SQL
    bad = write(
        tmp_path / "bad.yaml",
        """
        providers: [echo]
        prompts: ["x"]
        tests:
          - assert:
              - type: is-sql
                value: SELECT 1
          - assert:
              - type: is-sql
                value: {databaseType: Cobol}
          - assert:
              - type: contains-sql
                value: {allowedTabels: [x]}
        """,
    )
    result = evalh("validate", str(bad))
    assert result.exit_code == 2
    assert "bad.yaml:7:9 tests[0].assert[0].value: must be a mapping" in result.stderr
    assert "tests[1].assert[0].value: is-sql: databaseType 'Cobol' is not a dialect" in result.stderr
    assert "tests[2].assert[0].value.allowedTabels: unknown key 'allowedTabels'" in result.stderr


# A valid use of each type of this family: tests/runner/test_threshold_contract.py runs every registered
# type's handler on its sample and checks it returns a Measurement (scoring decides). A new type adds its own.
CONTRACT_SAMPLES: dict[str, dict[str, Any]] = {
    "is-sql": {"value": {"databaseType": "PostgresQL"}, "output": "SELECT id FROM users"},
    "contains-sql": {"output": "Here:\n```sql\nSELECT id FROM users\n```"},
}
