"""SQL assertions: is-sql (the whole output is SQL) and contains-sql (the first fenced code block, or the
whole output, is SQL), as promptfoo's ``src/assertions/sql.ts``.

promptfoo parses with node-sql-parser; evalh with sqlglot (imported on first use). The value is optional:
``{databaseType, allowedTables, allowedColumns}``. ``databaseType`` is node-sql-parser's name of the
dialect (MySQL by default; PostgresQL, BigQuery, Sqlite, TransactSQL, ...) or a sqlglot dialect name. The
allow-lists use node-sql-parser's authority strings, each entry a case-insensitive regex of the whole
string: tables ``{statement}::{database or null}::{table}`` (``select::null::users``), columns
``{statement}::{table or null}::{column}`` (``select::null::name``; ``*`` is ``(.*)``). A column's
table alias is resolved to the table's name. Every authority the SQL needs must match an entry.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from evalh.assertions.base import AssertionContext
from evalh.assertions.registry import assertion
from evalh.common.deadlines import REGEX_TIMEOUT_S
from evalh.model import Measurement
from evalh.runtimes.patterns import compile_pattern, search

if TYPE_CHECKING:
    from sqlglot import exp

__all__ = ["DIALECTS", "sql_authorities"]

# node-sql-parser's `database` names -> sqlglot's dialects (lower-cased keys). sqlglot's own names work
# too; DB2, FlinkSQL and N1QL have no sqlglot dialect.
DIALECTS = {
    "mysql": "mysql",
    "mariadb": "mysql",
    "postgresql": "postgres",
    "bigquery": "bigquery",
    "hive": "hive",
    "redshift": "redshift",
    "sqlite": "sqlite",
    "transactsql": "tsql",
    "snowflake": "snowflake",
    "athena": "athena",
    "trino": "trino",
}
_FENCE = re.compile(r"```(?:sql)?([^`]+)```")  # promptfoo's: the first fenced block, ``` or ```sql
_NAMES = {
    "select": "select",
    "insert": "insert",
    "update": "update",
    "delete": "delete",
    "create": "create",
    "drop": "drop",
    "alter": "alter",
    "truncatetable": "truncate",
    "merge": "merge",
}

_VALUE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "databaseType": {"type": "string", "minLength": 1},
        "allowedTables": {"type": "array", "items": {"type": "string", "minLength": 1}},
        "allowedColumns": {"type": "array", "items": {"type": "string", "minLength": 1}},
    },
    "description": "Optional: {databaseType, allowedTables, allowedColumns}.",
}


def _dialect(value: Any) -> str | None:
    name = str((value or {}).get("databaseType") or "MySQL").lower()
    return DIALECTS.get(name) or (name if name in _sqlglot_dialects() else None)


@functools.cache
def _sqlglot_dialects() -> frozenset[str]:
    from sqlglot.dialects import Dialects

    return frozenset(dialect.value for dialect in Dialects if dialect.value)


def _check(value: Any, _config: Mapping[str, Any]) -> str | None:
    if value is None:
        return None
    if _dialect(value) is None:
        known = ", ".join(["MySQL", "MariaDB", "PostgresQL", "BigQuery", "Hive", "Redshift", "Sqlite"])
        return (
            f"databaseType {value['databaseType']!r} is not a dialect evalh's SQL parser knows "
            f"(node-sql-parser's names: {known}, TransactSQL, Snowflake, Athena, Trino; or a sqlglot "
            "dialect such as postgres, duckdb, oracle)"
        )
    for key in ("allowedTables", "allowedColumns"):
        for entry in value.get(key) or []:
            compiled = compile_pattern(_anchored(entry))
            if isinstance(compiled, str):
                return f"{key} entry {entry!r}: {compiled}"
    return None


def _anchored(entry: str) -> str:
    return f"(?i)^(?:{entry})$"


def _statement_kind(node: exp.Expr) -> str:
    """The statement a table or column belongs to: its nearest enclosing SELECT, INSERT, ..."""
    current: exp.Expr | None = node
    while current is not None:
        kind = _NAMES.get(current.key)
        if kind is not None:
            return kind
        current = current.parent
    return "select"


def sql_authorities(statements: Sequence[exp.Expr]) -> tuple[list[str], list[str]]:
    """node-sql-parser's table and column authority strings of parsed statements."""
    from sqlglot import exp

    tables: list[str] = []
    columns: list[str] = []
    for statement in statements:
        aliases = {table.alias_or_name: table.name for table in statement.find_all(exp.Table)}
        for table in statement.find_all(exp.Table):
            tables.append(f"{_statement_kind(table)}::{table.db or 'null'}::{table.name}")
        for column in statement.find_all(exp.Column):
            kind = _statement_kind(column)
            owner = aliases.get(column.table, column.table) if column.table else "null"
            name = "(.*)" if isinstance(column.this, exp.Star) else column.name
            columns.append(f"{kind}::{owner}::{name}")
        if isinstance(statement, exp.Select) and any(isinstance(e, exp.Star) for e in statement.expressions):
            columns.append("select::null::(.*)")
        columns.extend(_insert_columns(statement))
    return list(dict.fromkeys(tables)), list(dict.fromkeys(columns))


def _insert_columns(statement: exp.Expr) -> Iterator[str]:
    """``INSERT INTO t (a, b)``: the listed columns, which sqlglot keeps as a schema, not columns."""
    from sqlglot import exp

    for insert in statement.find_all(exp.Insert):
        target = insert.this
        if isinstance(target, exp.Schema) and isinstance(target.this, exp.Table):
            for identifier in target.expressions:
                yield f"insert::{target.this.name}::{identifier.name}"


def _parse(sql: str, dialect: str) -> list[exp.Expr] | None:
    """The statements of ``sql``, or None when it is not SQL (a bare expression like ``hello`` is not)."""
    import sqlglot
    from sqlglot import exp
    from sqlglot.errors import SqlglotError

    try:
        parsed = sqlglot.parse(sql, read=dialect)
    except (SqlglotError, RecursionError):
        return None
    statements = [statement for statement in parsed if statement is not None]
    if not statements or any(isinstance(s, exp.Condition | exp.Alias | exp.Tuple) for s in statements):
        return None
    return statements


def _denied(authorities: list[str], allowed: list[str]) -> str | None:
    """The first authority no allow-list entry matches (node-sql-parser's whiteListCheck)."""
    if not allowed:
        return None
    patterns = [compile_pattern(_anchored(entry)) for entry in allowed]
    for authority in authorities:
        if not any(
            not isinstance(p, str) and search(p, authority, REGEX_TIMEOUT_S) is not None for p in patterns
        ):
            return authority
    return None


def _measure_sql(sql: str, value: Any) -> Measurement:
    options = value or {}
    dialect = _dialect(options) or "mysql"
    shown = options.get("databaseType") or "MySQL"
    statements = _parse(sql, dialect)
    reasons: list[str] = []
    if statements is None:
        reasons.append(f"SQL statement does not conform to the provided {shown} database syntax.")
    else:
        tables, columns = sql_authorities(statements)
        for kind, found, allowed in (
            ("table", tables, options.get("allowedTables")),
            ("column", columns, options.get("allowedColumns")),
        ):
            denied = _denied(found, list(allowed or []))
            if denied is not None:
                reasons.append(
                    f"SQL validation failed: authority = '{denied}' is required in {kind} whiteList "
                    f"to execute SQL = '{sql}'."
                )
    if reasons:
        return Measurement.pass_fail(False, " ".join(reasons))
    return Measurement.pass_fail(True, f"Output is valid {shown} SQL")


@assertion(
    "is-sql",
    family="sql",
    description="The output is SQL of the value's databaseType (MySQL by default), using only the "
    "allowedTables / allowedColumns when given",
    value_schema=_VALUE_SCHEMA,
    check=_check,
)
def is_sql(ctx: AssertionContext) -> Measurement:
    return _measure_sql(ctx.output_text, ctx.value)


@assertion(
    "contains-sql",
    family="sql",
    description="The output's first ``` code block (or the whole output) is SQL, as for is-sql",
    value_schema=_VALUE_SCHEMA,
    check=_check,
)
def contains_sql(ctx: AssertionContext) -> Measurement:
    text = ctx.output_text
    match = _FENCE.search(text)
    return _measure_sql(match.group(1).strip() if match else text, ctx.value)
