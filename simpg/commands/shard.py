r"""``simpg shard``: a table over several servers, with PostgreSQL's postgres_fdw (docs/shards.md).

``simpg shard create`` sets up a hash-partitioned table of the coordinator (``--dsn``)
over shard servers (``--shard NAME=CONNINFO``, in partition order): the simpg layout
once on the coordinator, then for each shard its foreign server and user mapping, its
table and simpg index (made on the shard, over its own connection), and its foreign
partition; it ends with ``simpg shard check``. Running it again resumes. ``simpg shard
check`` prints each problem of the shards (unreachable, no simpg, another layout, not
asynchronous) and exits 1 if there is one; ``simpg shard ddl`` prints the statements
that make a shard's table, to run with psql. The work is :mod:`simpg.shards`'.

``--distribution range`` sets up the range distribution instead (Google's design,
seeds 001/003): the table is any table of the coordinator with a unique key; each
permuted table of the layout becomes a table range-partitioned by its permuted value
over the shards, kept in step by triggers, so a lookup asks one shard per permuted
table. ``check`` and ``ddl`` work on both.

Example:
    simpg shard create --dsn "dbname=app" --table docs --column simhash -k 3 --rows 100M \
        --shard s1="host=db1 dbname=app" --shard s2="host=db2 dbname=app"
    simpg shard check --dsn "dbname=app" --table docs
"""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict
from typing import Any

from simpg.commands._common import add_dsn_argument, parse_rows
from simpg.exc import SimpgError


def register(subparsers: Any) -> None:
    """Add ``simpg shard`` and its subcommands."""
    shard = subparsers.add_parser(
        "shard", help="a table over several servers (postgres_fdw shards)",
        description="Shards on several servers with PostgreSQL's postgres_fdw: a hash-partitioned "
                    "table on the coordinator whose partitions are the shards' tables.")
    commands = shard.add_subparsers(dest="shard_command", metavar="SUBCOMMAND")

    create = commands.add_parser(
        "create", help="make the shards' tables and simpg indexes and attach them on the coordinator",
        description="Register the simpg layout on the coordinator's partitioned table, make each "
                    "shard's table and simpg index there, and attach it as a foreign partition "
                    "(modulus: the number of shards, remainder: its position). Resumes when run again.")
    _target(create)
    create.add_argument("--column", default="simhash", help="fingerprint column (default simhash)")
    create.add_argument("-k", type=int, default=3, help="radius of the index (default 3)")
    create.add_argument("--blocks", type=int, help="blocks of the layout's first level")
    create.add_argument("--inner-blocks", type=int, help="blocks of its second level")
    create.add_argument("--rows", type=_rows, help="rows expected over all shards, to size the layout "
                                                   "(10M, 1e9, ...) when --blocks is not given")
    create.add_argument("--distribution", choices=["hash", "range"], default="hash",
                        help="hash: rows spread by a hash of the partitioned table's key, every lookup asks "
                             "every shard (default); range: one table per permutation, range-partitioned by "
                             "its prefix, a lookup asks one shard per permuted table (docs/shards.md)")
    create.add_argument("--key", help="range: the table's unique key column (default: its primary key)")
    create.add_argument("--shard", action="append", required=True, metavar="NAME=CONNINFO",
                        help="a shard: its foreign server's name and connection string (repeat, in order)")
    create.add_argument("--json", action="store_true", help="print JSON for machines")
    create.set_defaults(func=run_create)

    check = commands.add_parser("check", help="report the problems of a table's shards (exit status 1 if any)",
                                description="Read each shard's simpg index through postgres_fdw and report "
                                            "what is wrong (simpg.check_shards); exit status 1 if anything is.")
    _target(check)
    check.add_argument("--column", help="fingerprint column (default: the table's one simpg index)")
    check.add_argument("--json", action="store_true", help="print JSON for machines")
    check.set_defaults(func=run_check)

    ddl = commands.add_parser("ddl", help="print the statements that make a shard's table and index",
                              description="Print simpg.shard_ddl: run the statements on a shard (psql) "
                                          "to make its table and simpg index by hand.")
    _target(ddl)
    ddl.add_argument("--column", help="fingerprint column (default: the table's one simpg index)")
    ddl.add_argument("--remote-schema", help="schema of the shard's table (default: the coordinator's)")
    ddl.add_argument("--remote-table", help="name of the shard's table (default: the coordinator's)")
    ddl.set_defaults(func=run_ddl)

    shard.set_defaults(func=lambda args: (shard.print_help(), 2)[1])


def _target(p: argparse.ArgumentParser) -> None:
    add_dsn_argument(p)
    p.add_argument("--table", required=True, help="the coordinator's partitioned table (may be schema-qualified)")


def _rows(text: str) -> int:

    try:
        return parse_rows(text)
    except (SimpgError, ValueError) as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def _connect(args: argparse.Namespace) -> Any:
    import psycopg

    if not args.dsn:
        raise SimpgError("no coordinator given; pass --dsn or set SIMPG_DSN")
    return psycopg.connect(args.dsn, autocommit=True)


def _print_problems(problems: list[Any], as_json: bool) -> int:
    if as_json:
        print(json.dumps({"problems": [asdict(p) for p in problems]}))
    else:
        for problem in problems:
            print(problem)
    return 1 if problems else 0


def run_create(args: argparse.Namespace) -> int:
    """Set the table up over the shards, then report what check_shards finds."""
    from simpg import shards

    shard_list = [shards.parse_shard(text) for text in args.shard]
    with _connect(args) as conn:
        problems = shards.create_shards(conn, args.table, args.column, shard_list, k=args.k, blocks=args.blocks,
                                        inner_blocks=args.inner_blocks, rows=args.rows,
                                        distribution=args.distribution, key_column=args.key)
        if args.distribution == "range":  # one line per shard: every permuted table has its range there
            attached = shards.range_shards(conn, args.table, args.column, table_number=0)
            tables = len(shards.range_layout(conn, args.table, args.column).tables)
        else:
            attached = shards.shards(conn, args.table)
    if args.json:
        print(json.dumps({"shards": [asdict(s) for s in attached], "problems": [asdict(p) for p in problems]}))
        return 1 if problems else 0
    for info in attached:
        if args.distribution == "range":
            print(f"{info.shard}: server {info.server}, {info.bound} "
                  f"(and the same for {tables - 1} more permuted tables)")
        else:
            print(f"{info.shard}: server {info.server}, {info.remote_schema}.{info.remote_table}, {info.bound}")
    return _print_problems(problems, False)


def run_check(args: argparse.Namespace) -> int:
    """Print the problems of the shards; exit status 1 if there is one."""
    from simpg import shards

    with _connect(args) as conn:
        return _print_problems(shards.check_shards(conn, args.table, args.column), args.json)


def run_ddl(args: argparse.Namespace) -> int:
    """Print the statements that make a shard's table and index."""
    from simpg import shards

    with _connect(args) as conn:
        if shards.distribution(conn, args.table) == "range":
            if args.remote_table is not None:
                raise SimpgError("--remote-table is for hash shards; "
                                 "range shards' tables have the permuted tables' names")
            statements = shards.range_shard_ddl(conn, args.table, column=args.column, remote_schema=args.remote_schema)
        else:
            statements = shards.shard_ddl(conn, args.table, column=args.column, remote_schema=args.remote_schema,
                                          remote_table=args.remote_table)
        for statement in statements:
            print(statement + ";")
    return 0
