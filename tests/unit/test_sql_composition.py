"""SQL text in simpg/ is composed with psycopg.sql, never by Python string formatting (issue 27, class 6).

``str.format`` over SQL that holds a quoted name reads the name's braces (a table
``t{hi}`` read another table), and f-strings and ``%`` put names in unquoted. This test
reads every module of the package and fails on:

* a ``.format(...)`` call on a string or f-string that looks like SQL, or on a variable
  named like a statement (``query``, ``sql``, ``statement``, ``ddl``): ``sql.SQL(...).format``
  is the one allowed form;
* an f-string or ``%`` formatting whose text looks like SQL (a statement keyword).

A line may carry ``# sql-text: <why>`` (or follow a comment line that does) when the
text is not run (a message that shows a statement to a person, say); the reason must
be written out. Names in SQL are put in
by ``sql.Identifier``, values by placeholders or ``sql.Literal`` (see simpg/sqlnames.py).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "simpg"
#: Statement keywords, upper case as simpg writes SQL (lower-case words are prose).
SQL_WORDS = re.compile(r"\b(SELECT|INSERT|UPDATE|DELETE|CREATE|ALTER|DROP|FROM|WHERE|COPY|ANALYZE|VACUUM|"
                       r"TRUNCATE|GRANT|REVOKE|COMMENT ON|SET (LOCAL|TRANSACTION|SESSION)|LOCK TABLE)\b")
STATEMENT_NAMES = re.compile(r"(^|_)(sql|query|statement|stmt|ddl)s?($|_)", re.IGNORECASE)
ALLOW = re.compile(r"#\s*sql-text:\s*\S.{8,}")


def _text(node: ast.AST) -> str | None:
    """The constant text of a string or f-string (without its replacement fields)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(v.value for v in node.values if isinstance(v, ast.Constant) and isinstance(v.value, str))
    return None


def _is_psycopg_sql(node: ast.AST) -> bool:
    """``sql.SQL(...)`` (or ``SQL(...)``): psycopg's composition, whose format() quotes what it puts in."""
    return (isinstance(node, ast.Call) and (
        (isinstance(node.func, ast.Attribute) and node.func.attr == "SQL")
        or (isinstance(node.func, ast.Name) and node.func.id == "SQL")))


def _receiver_name(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def offences(source: str, filename: str = "<source>") -> list[str]:
    """Where ``source`` formats SQL text in Python, as ``file:line: what`` (allowed lines left out)."""
    lines = source.splitlines()
    tree = ast.parse(source, filename)
    found: list[str] = []

    def allowed(node: ast.expr) -> bool:
        # on the node's lines, or on a comment line just above it
        first, last = node.lineno, getattr(node, "end_lineno", None) or node.lineno
        above = first - 1 if first > 1 and lines[first - 2].lstrip().startswith("#") else first
        return any(ALLOW.search(lines[i - 1]) for i in range(above, last + 1))

    def flag(node: ast.expr, what: str) -> None:
        if not allowed(node):
            found.append(f"{filename}:{node.lineno}: {what}")

    inside_format: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "format":
            receiver = node.func.value
            if _is_psycopg_sql(receiver):
                continue
            text = _text(receiver)
            if text is not None:
                inside_format.add(id(receiver))
                if SQL_WORDS.search(text):
                    flag(node, f"str.format on SQL text {text[:60]!r}")
            elif (name := _receiver_name(receiver)) and STATEMENT_NAMES.search(name):
                flag(node, f"str.format on {name!r}, a statement's text")
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
            text = _text(node.left)
            if text is not None and SQL_WORDS.search(text):
                inside_format.add(id(node.left))
                flag(node, f"% formatting of SQL text {text[:60]!r}")
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr) and id(node) not in inside_format:
            text = _text(node) or ""
            if SQL_WORDS.search(text):
                flag(node, f"f-string with SQL text {text[:60]!r}")
    return found


def test_no_sql_is_composed_by_string_formatting() -> None:
    found = [hit for path in sorted(PACKAGE.rglob("*.py"))
             for hit in offences(path.read_text(encoding="utf-8"), str(path.relative_to(PACKAGE.parent)))]
    assert found == [], "compose SQL with psycopg.sql (sql.SQL, sql.Identifier, sql.Literal):\n" + "\n".join(found)


def test_the_check_finds_each_form() -> None:
    """The forms issue 27 found, and the ones it would have next; the allowed ones pass."""
    bad = {
        "query.format(lo=1, hi=2)": "str.format on 'query'",
        "'SELECT {} FROM t'.format(name)": "str.format on SQL text",
        "f'SELECT {name} FROM t'": "f-string with SQL text",
        "'DROP TABLE %s' % name": "% formatting of SQL text",
        "sql.SQL(f'ALTER TABLE {name} ADD x int')": "f-string with SQL text",
        "copy_sql.format(table)": "str.format on 'copy_sql'",
    }
    for source, what in bad.items():
        hits = offences(source)
        assert len(hits) == 1 and what in hits[0], (source, hits)
    good = [
        "sql.SQL('SELECT {} FROM t').format(sql.Identifier(name))",
        "conn.execute('SELECT * FROM t WHERE id = %s', [1])",
        "f'no table {table!r}'",
        "f'run SELECT simpg.drop_index({name})'  # sql-text: a hint printed for a person, never run",
        "'{} rows'.format(n)",
    ]
    for source in good:
        assert offences(source) == [], source
