"""``simpg collections list`` / ``simpg collections drop NAME``: the collections of ``simpg_documents``.

Every ``simpg dedup`` run loads its documents as one collection (default: the path it
was given), and they stay: the embedded default database is one per OS user, so runs
pile up there, and ``simpg near`` searches all of them unless ``--collection`` names
one. ``list`` shows each collection with its number of documents and when it was first
and last loaded (a table, or ``--json``); ``drop`` deletes one collection's documents.
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import datetime
from typing import Any

from simpg.commands._common import add_dsn_argument, database_dsn, plural
from simpg.exc import SimpgError
from simpg.reference import TABLE


def register(subparsers: Any) -> None:
    """Add ``collections list`` and ``collections drop``."""
    top = subparsers.add_parser(
        "collections", help="list or drop the collections simpg dedup loaded (table simpg_documents)",
        description="The collections of simpg_documents: one per simpg dedup run (--collection, default: PATH).")
    commands = top.add_subparsers(dest="collections_command", metavar="ACTION")
    listing = commands.add_parser("list", help="each collection: documents, first and last loaded")
    listing.add_argument("--json", action="store_true", help="print JSON for machines")
    add_dsn_argument(listing)
    listing.set_defaults(func=run_list)
    drop = commands.add_parser("drop", help="delete the documents of one collection")
    drop.add_argument("name", metavar="NAME", help="the collection (as simpg collections list shows it)")
    add_dsn_argument(drop)
    drop.set_defaults(func=run_drop)
    top.set_defaults(func=lambda args: _usage(top))


def _usage(parser: argparse.ArgumentParser) -> int:
    parser.print_help(sys.stderr)
    return 2


def _table_exists(conn: Any) -> bool:
    return conn.execute("SELECT to_regclass(%s) IS NOT NULL", [TABLE]).fetchone()[0] is True


def collections(conn: Any) -> list[dict[str, Any]]:
    """Each collection of simpg_documents: name, documents, first and last loaded (ISO 8601), by name."""
    from psycopg import sql

    if not _table_exists(conn):
        return []
    rows = conn.execute(sql.SQL("SELECT collection, count(*), min(created_at), max(created_at) FROM {} "
                                "GROUP BY collection ORDER BY collection").format(sql.Identifier(TABLE))).fetchall()
    return [{"name": name, "documents": count, "first_loaded": first.isoformat(), "last_loaded": last.isoformat()}
            for name, count, first, last in rows]


def run_list(args: argparse.Namespace) -> int:
    """Print the collections."""
    import psycopg

    with psycopg.connect(database_dsn(args), autocommit=True) as conn:
        found = collections(conn)
    if args.json:
        json.dump(found, sys.stdout, ensure_ascii=False, indent=2)
        sys.stdout.write("\n")
        return 0
    if not found:
        print("no collections (simpg dedup PATH loads one)")
        return 0
    name_w = max(len("collection"), *(len(c["name"]) for c in found))
    docs_w = max(len("documents"), *(len(str(c["documents"])) for c in found))
    print(f"{'collection':<{name_w}}  {'documents':>{docs_w}}  {'first loaded':<19}  last loaded")
    for c in found:
        print(f"{c['name']:<{name_w}}  {c['documents']:>{docs_w}}  {_local(c['first_loaded'])}  "
              f"{_local(c['last_loaded'])}")
    return 0


def _local(iso: str) -> str:
    """An ISO 8601 time as this machine's local time, to the second."""
    return datetime.fromisoformat(iso).astimezone().strftime("%Y-%m-%d %H:%M:%S")


def run_drop(args: argparse.Namespace) -> int:
    """Delete the documents of one collection."""
    import psycopg
    from psycopg import sql

    with psycopg.connect(database_dsn(args), autocommit=True) as conn:
        deleted = conn.execute(sql.SQL("DELETE FROM {} WHERE collection = %s").format(sql.Identifier(TABLE)),
                               [args.name]).rowcount if _table_exists(conn) else 0
    if deleted == 0:
        raise SimpgError(f"no collection {args.name!r} in simpg_documents (simpg collections list shows them)")
    print(f"dropped collection {args.name!r}: {plural(deleted, 'document')} deleted")
    return 0
