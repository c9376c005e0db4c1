"""``simpg report --collection C --html report.html``: the review report of a stored collection.

The collection's rows in ``simpg_documents`` are paired and clustered with the decision
``simpg dedup`` makes (:func:`simpg.dedup.decide_stored`, the same options and
defaults), and written as one self-contained HTML page (:mod:`simpg.review.html`):
the summary, the clusters with their figures, each member's differences against its
representative, cross-cluster links, and buttons to record decisions and export them.

With ``--passages`` the collection's partial duplicates are reported too
(:func:`simpg.passage_report.from_collection`: candidates from the SQL function
``simpg.passage_pairs``, verified on the texts read), printed as ``simpg dedup --passages``
prints them (``--json``: the same JSON), and with ``--html`` in the page's "Copied
passages" section.

Without ``--dsn`` or ``SIMPG_DSN`` this reads the embedded default server.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from simpg.commands._common import add_dsn_argument, add_radius, check_max_sketch_distance, check_radius, database_dsn
from simpg.commands.dedup import add_passage_arguments, partial_options
from simpg.exc import SimpgError
from simpg.fingerprint import DEDUP_K, DEFAULT_K, MAX_SKETCH_DISTANCE, SKETCH_BITS
from simpg.layout import MAX_K


def register(subparsers: Any) -> None:
    """Add the report command."""
    p = subparsers.add_parser(
        "report", help="write the review report (HTML) of a collection stored by simpg dedup",
        description="Pair and cluster a collection of simpg_documents as simpg dedup does, and write "
                    "the clusters as one self-contained HTML page to review them.")
    p.add_argument("--collection", required=True, help="the collection (simpg dedup's --collection, default its PATH)")
    p.add_argument("--html", metavar="FILE", help="the HTML file to write (needed without --passages)")
    p.add_argument("--json", action="store_true", help="with --passages: print the report as JSON")
    add_dsn_argument(p)
    add_radius(p, help=f"largest number of differing bits (default: {DEDUP_K} with --confirm sketch, "
                       f"{DEFAULT_K} with --confirm none)")
    p.add_argument("--confirm", choices=("sketch", "none"), default="sketch",
                   help="sketch (default): pairs confirmed by the documents' sketches; none: fingerprints alone")
    p.add_argument("--max-sketch-distance", type=int, default=MAX_SKETCH_DISTANCE, metavar="BITS",
                   help=f"largest number of differing sketch bits that confirms a pair, 0 to {SKETCH_BITS} "
                        f"(default: {MAX_SKETCH_DISTANCE})")
    p.add_argument("--bands", action=argparse.BooleanOptionalAction, default=True,
                   help="with --confirm sketch, documents sharing a band key are candidates too (default: --bands)")
    p.add_argument("--clusters", dest="method", choices=("representative", "components"), default="representative",
                   help="representative (default) or components, as simpg dedup")
    add_passage_arguments(p)
    p.add_argument("--workers", type=int, help="with --passages: processes verifying the pairs (default: every CPU)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Decide the stored collection, write the page, print its path."""
    import psycopg

    from simpg import dedup
    from simpg.review import data, html

    if not args.html and not args.passages:
        raise SimpgError("nothing to report: give --html FILE, --passages, or both")
    if args.json and not args.passages:
        raise SimpgError("--json applies with --passages")
    if args.workers is not None and args.workers < 1:
        raise SimpgError(f"--workers must be 1 or more, got {args.workers}")
    partial = partial_options(args)
    check_max_sketch_distance(args.max_sketch_distance)
    k = (DEDUP_K if args.confirm == "sketch" else DEFAULT_K) if args.k is None else check_radius(args, MAX_K)
    decision = dedup.Decision(k=k, confirm=args.confirm == "sketch", max_sketch_distance=args.max_sketch_distance,
                              method=args.method, bands=args.bands and args.confirm == "sketch")
    with psycopg.connect(database_dsn(args), autocommit=True) as conn:
        passages = None
        if partial is not None:
            from simpg import passage_report
            from simpg.commands._common import progress

            def bar(items: Any, total: int | None, desc: str, weight: Any = None) -> Any:
                return progress(items, args, total, desc, weight=weight)

            clusters, _ = dedup.decide_stored(conn, args.collection, decision)
            passages = passage_report.from_collection(conn, args.collection, clusters, partial, progress=bar)
        page = (html.write(data.from_collection(conn, args.collection, decision, passages=passages), args.html)
                if args.html else None)
    if passages is not None:
        if args.json:
            json.dump({"collection": args.collection, "clusters": clusters, "passages": passages}, sys.stdout,
                      ensure_ascii=False, indent=2)
            sys.stdout.write("\n")
        else:
            from simpg.commands._passage_report import render

            sys.stdout.write(f"collection {args.collection!r}: {len(clusters)} clusters of near-duplicates\n")
            sys.stdout.write(render(passages))
    if page is not None:
        print(page if passages is None else f"simpg: review report written to {page}",
              file=sys.stderr if args.json else sys.stdout)
    return 0
