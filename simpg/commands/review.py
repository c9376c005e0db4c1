"""``simpg review``: reviewers' decisions on pairs of stored documents (:mod:`simpg.review.decisions`).

``apply FILE`` records the decisions a report exported (checked whole, written in one
transaction, or nothing written); ``mark A B --not-duplicate|--duplicate`` records one;
``undo A B`` deletes one; ``list`` prints a collection's. ``A`` and ``B`` are document ids
or sources of the reference table ``simpg_documents``. ``simpg dedup --append`` and the
reports on a stored collection apply them.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from simpg.commands._common import add_dsn_argument, database_dsn, plural
from simpg.exc import SimpgError


def register(subparsers: Any) -> None:
    """Add the review command and its subcommands."""
    p = subparsers.add_parser(
        "review", help="record, list and undo reviewers' decisions on pairs of documents",
        description="Reviewers' decisions on pairs of stored documents (table simpg_decisions): "
                    "applied by simpg dedup --append and the reports.")
    actions = p.add_subparsers(dest="action", metavar="ACTION", required=True)

    apply = actions.add_parser("apply", help="record the decisions of a file a report exported",
                               description="Check a simpg-decisions file whole and record its decisions "
                                           "in one transaction; a bad entry is named and nothing is written.")
    apply.add_argument("file", metavar="FILE", help="the exported JSON file")
    apply.add_argument("--reviewer", help="the reviewer's name, kept with each decision")
    add_dsn_argument(apply)
    apply.set_defaults(func=run_apply)

    mark = actions.add_parser("mark", help="record that two documents are (not) duplicates")
    mark.add_argument("a", metavar="A", help="document id or source")
    mark.add_argument("b", metavar="B", help="document id or source")
    verdict = mark.add_mutually_exclusive_group(required=True)
    verdict.add_argument("--not-duplicate", dest="verdict", action="store_const", const="not_duplicate",
                         help="never pair the two nor put them in one cluster")
    verdict.add_argument("--duplicate", dest="verdict", action="store_const", const="duplicate",
                         help="pair the two and merge their clusters")
    mark.add_argument("--collection", required=True, help="the documents' collection")
    mark.add_argument("--reviewer", help="the reviewer's name, kept with the decision")
    mark.add_argument("--note", help="why, kept with the decision")
    add_dsn_argument(mark)
    mark.set_defaults(func=run_mark)

    undo = actions.add_parser("undo", help="delete the decision on two documents")
    undo.add_argument("a", metavar="A", help="document id or source")
    undo.add_argument("b", metavar="B", help="document id or source")
    undo.add_argument("--collection", required=True, help="the documents' collection")
    add_dsn_argument(undo)
    undo.set_defaults(func=run_undo)

    listing = actions.add_parser("list", help="print a collection's decisions")
    listing.add_argument("--collection", required=True, help="the collection")
    listing.add_argument("--json", action="store_true", help="print JSON for machines")
    add_dsn_argument(listing)
    listing.set_defaults(func=run_list)


def _connect(args: argparse.Namespace) -> Any:
    import psycopg

    return psycopg.connect(database_dsn(args), autocommit=True)


def run_apply(args: argparse.Namespace) -> int:
    """``simpg review apply FILE``."""
    from simpg.review import decisions

    with _connect(args) as conn:
        recorded = decisions.apply_file(conn, args.file, reviewer=args.reviewer)
    apart = sum(d.verdict == "not_duplicate" for d in recorded)
    print(f"recorded {plural(len(recorded), 'decision')} ({apart} not duplicate, "
          f"{len(recorded) - apart} duplicate) from {args.file}")
    return 0


def run_mark(args: argparse.Namespace) -> int:
    """``simpg review mark A B``."""
    from simpg.review import decisions

    with _connect(args) as conn:
        d = decisions.record(conn, args.collection, args.a, args.b, args.verdict, who=args.reviewer,
                             note=args.note)
    print(f"recorded: {d.a} {d.source_a!r} and {d.b} {d.source_b!r} are {d.verdict.replace('_', ' ')}s"
          if d.verdict == "duplicate" else
          f"recorded: {d.a} {d.source_a!r} and {d.b} {d.source_b!r} are not duplicates")
    return 0


def run_undo(args: argparse.Namespace) -> int:
    """``simpg review undo A B``."""
    from simpg.review import decisions

    with _connect(args) as conn:
        if not decisions.forget(conn, args.collection, args.a, args.b):
            raise SimpgError(f"no decision on {args.a!r} and {args.b!r} in collection {args.collection!r}")
    print(f"deleted the decision on {args.a} and {args.b}")
    return 0


def run_list(args: argparse.Namespace) -> int:
    """``simpg review list``."""
    from simpg.review import decisions

    with _connect(args) as conn:
        found = decisions.load(conn, args.collection)
    if args.json:
        print(json.dumps({"collection": args.collection, "decisions": found.to_json()}, ensure_ascii=False))
        return 0
    if not found:
        print(f"no decisions in collection {args.collection!r}")
        return 0
    for d in found:
        by = d.reviewer or d.who
        when = d.decided_at.strftime("%Y-%m-%d %H:%M") if d.decided_at else ""
        note = f"  ({d.note})" if d.note else ""
        print(f"{d.verdict:<13}  {d.a:>6} {d.source_a}  |  {d.b:>6} {d.source_b}  {by} {when}{note}")
    return 0
