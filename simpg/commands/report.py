"""``simpg report --collection C --html report.html``: the review report of a stored collection.

The collection's rows in ``simpg_documents`` are paired and clustered with the decision
``simpg dedup`` makes (:func:`simpg.dedup.decide_stored`, the same options and
defaults), and written as one self-contained HTML page (:mod:`simpg.review.html`):
the summary, the clusters with their figures, each member's differences against its
representative, cross-cluster links, and buttons to record decisions and export them.

Without ``--dsn`` or ``SIMPG_DSN`` this reads the embedded default server.
"""

from __future__ import annotations

import argparse
from typing import Any

from simpg.commands._common import add_dsn_argument, add_radius, check_max_sketch_distance, check_radius, database_dsn
from simpg.fingerprint import DEDUP_K, DEFAULT_K, MAX_SKETCH_DISTANCE, SKETCH_BITS
from simpg.layout import MAX_K


def register(subparsers: Any) -> None:
    """Add the report command."""
    p = subparsers.add_parser(
        "report", help="write the review report (HTML) of a collection stored by simpg dedup",
        description="Pair and cluster a collection of simpg_documents as simpg dedup does, and write "
                    "the clusters as one self-contained HTML page to review them.")
    p.add_argument("--collection", required=True, help="the collection (simpg dedup's --collection, default its PATH)")
    p.add_argument("--html", required=True, metavar="FILE", help="the HTML file to write")
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
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Decide the stored collection, write the page, print its path."""
    import psycopg

    from simpg import dedup
    from simpg.review import data, html

    check_max_sketch_distance(args.max_sketch_distance)
    k = (DEDUP_K if args.confirm == "sketch" else DEFAULT_K) if args.k is None else check_radius(args, MAX_K)
    decision = dedup.Decision(k=k, confirm=args.confirm == "sketch", max_sketch_distance=args.max_sketch_distance,
                              method=args.method, bands=args.bands and args.confirm == "sketch")
    with psycopg.connect(database_dsn(args), autocommit=True) as conn:
        report = data.from_collection(conn, args.collection, decision)
    print(html.write(report, args.html))
    return 0
