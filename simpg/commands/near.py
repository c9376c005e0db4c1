"""``simpg near``: the rows of an indexed table within k bits of fingerprints or texts.

Queries are fingerprints (decimal, or hex with ``0x``), ``--text``, or ``--file``
(fingerprinted with the same settings ``simpg dedup`` uses). The table defaults to the
reference table ``simpg_documents``, whose rows are shown with their source and title;
any other table indexed by simpg works too (``--table``, ``--column``). All queries
go to the database in one statement (:meth:`SimIndex.near_many`).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from typing import Any

from simpg import bits
from simpg.commands.dedup import add_common_arguments, check_k, database_dsn
from simpg.commands.install import add_dsn_argument
from simpg.exc import InvalidFingerprint, SimpgError


def register(subparsers: Any) -> None:
    """Add the near command."""
    p = subparsers.add_parser(
        "near", help="find the rows within k bits of fingerprints or texts",
        description="Look up fingerprints (or texts) in a table indexed by simpg.")
    p.add_argument("queries", nargs="*", metavar="FINGERPRINT",
                   help="unsigned 64-bit fingerprints, decimal or 0x hex")
    p.add_argument("--text", action="append", default=[], help="a text to fingerprint and look up")
    p.add_argument("--file", action="append", default=[], help="a UTF-8 file to fingerprint and look up")
    p.add_argument("--table", default="simpg_documents", help="indexed table (default: simpg_documents)")
    p.add_argument("--column", default="simhash", help="fingerprint column (default: simhash)")
    p.add_argument("--lang", choices=("auto", "en", "zh"), default="auto",
                   help="word splitting of --text/--file, as in simpg dedup (default: auto)")
    add_dsn_argument(p)
    add_common_arguments(p, k_default=None, k_help="(default: the radius the table's simpg index was built for)")
    p.set_defaults(func=run)


def parse_fingerprint(text: str) -> int:
    """A command-line fingerprint: ASCII decimal, or hex with 0x (no ``_``, ``+`` or other digits)."""
    if re.fullmatch("-?[0-9]+", text):
        value = int(text, 10)
    elif re.fullmatch("0[xX][0-9a-fA-F]+", text):
        value = int(text, 16)
    else:
        raise InvalidFingerprint(f"expected 64-bit fingerprint, got {text!r}")
    return bits.check(value)


def _queries(args: argparse.Namespace) -> list[tuple[str, int]]:
    from simpg.corpus import read_text
    from simpg.fingerprint import FingerprintConfig, fingerprint

    out = [(q, parse_fingerprint(q)) for q in args.queries]
    if args.text or args.file:
        config = FingerprintConfig(lang=args.lang)
        out += [(f"text {t[:40]!r}", fingerprint(t, config)) for t in args.text]
        out += [(path, fingerprint(read_text(path), config)) for path in args.file]  # one wording for bad files
    if not out:
        raise SimpgError("nothing to look up; give fingerprints, --text or --file")
    return out


def run(args: argparse.Namespace) -> int:
    """Look the queries up and print the neighbours."""
    import psycopg

    from simpg.psycopg import SimIndex

    queries = _queries(args)
    with psycopg.connect(database_dsn(args), autocommit=True) as conn:
        index = SimIndex(conn, args.table, args.column)
        k = check_k(args.k, index.info, f"the index on {args.table}.{args.column}")  # default: the index's own radius
        results = index.near_many([fp for _, fp in queries], k)
        details: dict[Any, tuple[str, str | None]] = {}
        if args.table == "simpg_documents":
            ids = sorted({n.id for found in results for n in found})
            details = {r[0]: (r[1], r[2]) for r in conn.execute(
                "SELECT id, source, title FROM simpg_documents WHERE id = ANY(%s)", [ids])}
    report: list[dict[str, Any]] = []
    for (label, fp), found in zip(queries, results, strict=True):
        rows = []
        for n in found:
            row: dict[str, Any] = {"id": n.id, "distance": n.distance}
            if n.id in details:
                row["source"], row["title"] = details[n.id]
            rows.append(row)
        report.append({"query": label, "fingerprint": fp, "neighbors": rows})
    if args.json:
        json.dump(report, sys.stdout, ensure_ascii=False, indent=2, default=str)
        sys.stdout.write("\n")
        return 0
    for item in report:
        print(f"{item['query']} (fingerprint {item['fingerprint']}): {len(item['neighbors'])} within {k} bits")
        if item["neighbors"]:
            id_w = max(2, *(len(str(r["id"])) for r in item["neighbors"]))
            print(f"  {'id':>{id_w}}  {'bits':>4}  source")
            for r in item["neighbors"]:
                print(f"  {r['id']!s:>{id_w}}  {r['distance']:>4}  {r.get('source', '')}")
    return 0
