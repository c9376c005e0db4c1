"""``simpg check`` and ``simpg repair``: verify a table's simpg indexes, and put right what can be.

``simpg check`` prints one line per problem that ``simpg.check`` finds (missing prefix
columns or B-trees, invalid indexes, several layouts on a column, and with
``--verify-rows`` stored prefixes that ``simpg.permute`` no longer computes) and exits
0 when there is none, 1 when there are. ``simpg repair`` runs ``simpg.repair`` and
prints each statement it ran: invalid indexes dropped, missing B-trees built (not
concurrently: writers wait), and the prefix columns of an index that lost one dropped
(create it again afterwards). See docs/security.md.

Example:
    simpg check --dsn "dbname=app" --table articles --verify-rows
    simpg repair --dsn "dbname=app" --table articles --column simhash
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from dataclasses import asdict
from typing import Any

from simpg.commands._common import add_dsn_argument
from simpg.exc import SimpgError, translated
from simpg.layout import Layout
from simpg.results import IndexProblem

#: Problems simpg.repair puts right (the last by dropping the damaged index's columns).
REPAIRED = ("missing b-tree", "invalid index", "missing prefix column")


def register(subparsers: Any) -> None:
    """Add the check and repair commands."""
    check = subparsers.add_parser(
        "check", help="report the problems of a table's simpg indexes (exit status 1 if any)",
        description="Report the problems of a table's simpg indexes, one line each (simpg.check); "
                    "exit status 0 when there is none, 1 when there are.")
    _target_arguments(check)
    check.add_argument("--verify-rows", action="store_true",
                       help="also compare every stored prefix with what simpg.permute computes "
                            "(reads the whole table)")
    check.add_argument("--json", action="store_true", help="print JSON for machines")
    check.set_defaults(func=run_check)

    repair = subparsers.add_parser(
        "repair", help="drop invalid indexes and damaged simpg indexes, build missing B-trees",
        description="Run simpg.repair on a table and print the statements it ran. Missing B-trees "
                    "are built without CONCURRENTLY (writers to the table wait); an index that lost "
                    "a prefix column has its other prefix columns dropped: create it again afterwards.")
    _target_arguments(repair)
    repair.add_argument("--lock-timeout", default="5s",
                        help="longest wait for a table lock before giving up (default 5s)")
    repair.add_argument("--json", action="store_true", help="print JSON for machines")
    repair.set_defaults(func=run_repair)


def _target_arguments(p: argparse.ArgumentParser) -> None:
    add_dsn_argument(p)
    p.add_argument("--table", required=True, help="table (may be schema-qualified)")
    p.add_argument("--column", help="fingerprint column (default: every simpg index of the table)")


def _connect(args: argparse.Namespace) -> Any:
    import psycopg

    if not args.dsn:
        raise SimpgError("no database given; pass --dsn or set SIMPG_DSN")
    return psycopg.connect(args.dsn, autocommit=True)


def _run(conn: Any, statement: str, params: list[Any]) -> list[Any]:
    """Rows of one statement; simpg's clear database errors become SimpgError."""
    with translated():
        rows: list[Any] = conn.execute(statement, params).fetchall()
    return rows


def _indexes(conn: Any, table: str, column: str | None) -> list[Any]:
    """Every simpg index of the table (of the column), complete or not (``simpg.table_indexes``).

    Rows of ``(column, k, levels, prefix columns, index names)``, by column then layout;
    a damaged index has NULL among its prefix columns. simpg.table_indexes, not the
    simpg.indexes view, which leaves out the partitions of a partitioned table.
    """
    return _run(conn, "SELECT i.fingerprint_column, i.k, i.levels, i.prefix_columns, i.index_names "
                      "FROM simpg.table_indexes(%s::regclass) AS i "
                      "WHERE %s::name IS NULL OR i.fingerprint_column = %s::name "
                      "ORDER BY i.fingerprint_column, i.k, i.levels", [table, column, column])


def _columns(indexes: list[Any]) -> list[str]:
    """The fingerprint columns of the indexes, in their order."""
    return list(dict.fromkeys(row[0] for row in indexes))


def _complete(indexes: list[Any]) -> list[dict[str, Any]]:
    """The complete indexes (every prefix column there), as JSON-ready dicts."""
    return [{"column": c, "layout": Layout(k, tuple(levels)).name, "k": k, "levels": list(levels),
             "prefix_columns": list(prefixes), "index_names": list(names)}
            for c, k, levels, prefixes, names in indexes if None not in prefixes]


def _problems(conn: Any, table: str, columns: list[str], verify_rows: bool) -> list[IndexProblem]:
    """What SimHashColumn.check finds, column by column (simpg.check's own order)."""
    from simpg.psycopg import SimHashColumn  # not at import: simpg --help loads every command

    return [problem for column in columns
            for problem in SimHashColumn(conn, table, column).check(verify_rows=verify_rows)]


def _passage_columns(conn: Any, table: str, column: str | None) -> list[str]:
    """The table's passage columns (``simpg.passage_indexes``; only ``column`` if given)."""
    return [row[0] for row in _run(conn, "SELECT p.passage_column FROM simpg.passage_indexes AS p "
                                         "WHERE p.indexed_table = %s::regclass AND (%s::name IS NULL "
                                         "OR p.passage_column = %s::name) ORDER BY 1", [table, column, column])]


def _passage_problems(conn: Any, table: str, columns: list[str]) -> list[IndexProblem]:
    """What simpg.check finds on the passage columns: a missing, invalid or too coarse keys index."""
    return [IndexProblem(*row) for column in columns
            for row in _run(conn, "SELECT c.fingerprint_column, c.problem, c.detail "
                                  "FROM simpg.check(%s::regclass, %s, false) AS c", [table, column])]


def _table_name(conn: Any, table: str) -> str:
    """The table as PostgreSQL prints it (schema-qualified unless on the search path)."""
    return str(_run(conn, "SELECT %s::regclass::text", [table])[0][0])


def _no_index(table: str, column: str | None) -> SimpgError:
    return SimpgError(f"no simpg index on {table}{'.' + column if column else ''}")


def _command(name: str, args: argparse.Namespace) -> str:
    """The simpg command line that repairs what was checked, for hints."""
    column = f" --column {shlex.quote(args.column)}" if args.column else ""
    return f"simpg {name} --table {shlex.quote(args.table)}{column}"


def _hint(problems: list[Any], passage_problems: list[Any], args: argparse.Namespace) -> str:
    """What to do about the problems found (of the fingerprint indexes, of the passage indexes)."""
    kinds = {p.problem for p in problems}
    out = []
    if kinds & set(REPAIRED):
        text = f"run {_command('repair', args)}"
        if "missing prefix column" in kinds:
            text += " (it drops the damaged index's prefix columns: create the index again afterwards)"
        out.append(text)
    if kinds & {"several layouts", "stale prefix values"}:
        out.append("for several layouts or stale prefix values, simpg.drop_index(table, column) "
                   "and create the index again")
    if passage_problems:
        out.append("for a passage index, run the simpg.create_passage_index statement its line names")
    return "; ".join(out)


def run_check(args: argparse.Namespace) -> int:
    """Print the problems of the table's simpg indexes; 1 if there are any."""
    with _connect(args) as conn:
        table = _table_name(conn, args.table)
        found = _indexes(conn, args.table, args.column)
        passages = _passage_columns(conn, args.table, args.column)
        if not found and not passages:
            raise _no_index(table, args.column)
        fingerprint_problems = _problems(conn, args.table, _columns(found), args.verify_rows)
        passage_problems = _passage_problems(conn, args.table, passages)
        problems = fingerprint_problems + passage_problems
    indexes = _complete(found)
    if args.json:
        json.dump({"table": table, "column": args.column, "verify_rows": args.verify_rows,
                   "indexes": indexes, "problems": [asdict(p) for p in problems]},
                  sys.stdout, ensure_ascii=False, indent=2)
        sys.stdout.write("\n")
        return 1 if problems else 0
    for p in problems:
        print(f"{table}.{p.column}: {p.problem}: {p.detail}")
    if problems:
        count = f"{len(problems)} problem{'s' if len(problems) > 1 else ''}"
        print(f"{table}: {count}; {_hint(fingerprint_problems, passage_problems, args)}")
        return 1
    for index in indexes:
        print(f"{table}.{index['column']}: ok ({index['layout']}, {len(index['prefix_columns'])} "
              "prefix columns with their B-trees)")
    for column in passages:
        print(f"{table}.{column}: ok (passage index on its keys)")
    rows = ("stored prefix values verified" if args.verify_rows
            else "stored prefix values not read; --verify-rows compares them with simpg.permute")
    print(f"{table}: no problems ({rows})")
    return 0


def run_repair(args: argparse.Namespace) -> int:
    """Run simpg.repair, print its statements; 1 if problems are left that it cannot put right."""
    from simpg.psycopg import SimHashColumn

    with _connect(args) as conn:
        table = _table_name(conn, args.table)
        columns = _columns(_indexes(conn, args.table, args.column))
        if not columns:
            raise _no_index(table, args.column)
        before = _problems(conn, args.table, columns, False)
        with conn.transaction():
            _run(conn, "SELECT pg_catalog.set_config('lock_timeout', %s, true)", [args.lock_timeout])
            # one transaction: all of the table's repairs, or none when a lock is not had in time
            statements = [statement for column in columns
                          for statement in SimHashColumn(conn, args.table, column).repair()]
        after = _indexes(conn, args.table, args.column)
        left = _problems(conn, args.table, _columns(after), False)
        indexed = {index["column"] for index in _complete(after)}
    removed = sorted({p.column for p in before if p.problem == "missing prefix column"} - indexed)
    if args.json:
        json.dump({"table": table, "column": args.column, "statements": statements, "removed": removed,
                   "problems": [asdict(p) for p in left]}, sys.stdout, ensure_ascii=False, indent=2)
        sys.stdout.write("\n")
        return 1 if left else 0
    for statement in statements:
        print(f"{statement};")
    for column in removed:
        print(f"-- {table}.{column}: a prefix column was missing, so the others were dropped; "
              "create the index again (simpg.create_index, or simpg backfill --k)")
    for p in left:
        print(f"-- {table}.{p.column}: {p.problem}: {p.detail}")
    if left:
        print(f"-- {table}: {len(left)} problem{'s' if len(left) > 1 else ''} left; {_hint(left, [], args)}")
        return 1
    done = (f"{len(statements)} statement{'s' if len(statements) > 1 else ''} run" if statements
            else "nothing to repair")
    print(f"-- {table}: {done}; no problems left")
    return 0
