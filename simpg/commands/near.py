"""``simpg near``: the rows of an indexed table within k bits of fingerprints or texts.

Queries are fingerprints (decimal, or hex with ``0x``), ``--text``, or ``--file``
(fingerprinted with the same settings ``simpg dedup`` uses). The table defaults to the
reference table ``simpg_documents``, whose rows are shown with their source and title;
any other table indexed by simpg works too (``--table``, ``--column``). Fingerprint
queries go to the database in one statement (:meth:`SimHashColumn.near_many`). Text queries
on a table with a sketch column (``--sketch-column``, default ``sketch``) are confirmed
by sketches as ``simpg dedup`` confirms (:meth:`SimHashColumn.duplicates`), unless
``--confirm none``; when the table also has band key columns (``<sketch column>_b0`` ..
``_b3``, as ``simpg_documents`` has), rows sharing a band key with the text are
candidates too. ``--collection`` keeps the rows of one collection of ``simpg_documents``
(the embedded default database holds every run's collections: ``simpg collections list``).
``--passages`` looks texts up through a passage index instead: the rows that copied passages
of them (:mod:`simpg.commands._near_passages`).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from typing import Any

from simpg import bits
from simpg.commands._common import (
    add_common_arguments,
    add_dsn_argument,
    check_k,
    check_max_sketch_distance,
    database_dsn,
)
from simpg.commands._near_passages import LOOKUP_MAX_COMMON, max_common_argument
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
    p.add_argument("--collection", help="only documents of this collection of simpg_documents (simpg dedup "
                                        "--collection; default: all of them; simpg collections list)")
    p.add_argument("--column", default=None,
                   help="fingerprint column (default: simhash), or with --passages the passage column "
                        "(default: passages)")
    p.add_argument("--lang", choices=("auto", "en", "zh"), default="auto",
                   help="word splitting of --text/--file, as in simpg dedup (default: auto)")
    p.add_argument("--confirm", choices=("auto", "sketch", "none"), default="auto",
                   help="auto (default): confirm --text/--file matches by sketches when the table has the "
                        "sketch column; sketch: always (fingerprint queries are refused); none: never")
    p.add_argument("--sketch-column", default="sketch", help="the table's bit(256) sketches (default: sketch)")
    p.add_argument("--max-sketch-distance", type=int, default=None, metavar="BITS",
                   help="largest number of differing sketch bits that confirms a match (default: 36)")
    passages = p.add_argument_group("partial duplicates (--passages)")
    passages.add_argument("--passages", action="store_true",
                          help="find the rows that copied passages of --text/--file, through a passage index")
    passages.add_argument("--text-column", default=None, help="the table's text column (default: body)")
    passages.add_argument("--key-column", default=None, help="the key shown (default: the primary key)")
    passages.add_argument("--min-tokens", type=int, default=None, metavar="N",
                          help="shortest shared run of tokens that counts (default and least: the index's "
                               "larger window + 4, 50 for the default windows)")
    passages.add_argument("--min-containment", type=float, default=None, metavar="FRACTION",
                          help="keep rows of which this much is in the text, or the text in them (0 to 1)")
    passages.add_argument("--max-common", type=max_common_argument, default=LOOKUP_MAX_COMMON,
                          metavar="ROWS|SHARE",
                          help="skip the text's hashes the statistics put in more rows than this: a count, or a "
                               "share of the table's rows below 1, never under 1000 rows (boilerplate; default "
                               "0.001; none: skip nothing)")
    passages.add_argument("--limit", type=int, default=None, metavar="N", help="at most N rows per text")
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


Query = tuple[str, int, bytes | None, tuple[int, ...] | None]


def _queries(args: argparse.Namespace) -> list[Query]:
    """(label, fingerprint, sketch or None, band keys or None) of every query; texts get a sketch."""
    from simpg.corpus import read_text
    from simpg.fingerprint import FingerprintConfig, fingerprint, sketch_and_bands

    out: list[Query] = [(q, parse_fingerprint(q), None, None) for q in args.queries]
    if args.text or args.file:
        config = FingerprintConfig(lang=args.lang)
        texts = [(f"text {t[:40]!r}", t) for t in args.text]
        texts += [(path, read_text(path)) for path in args.file]  # one wording for bad files
        out += [(label, fingerprint(text, config), *sketch_and_bands(text)) for label, text in texts]
    if not out:
        raise SimpgError("nothing to look up; give fingerprints, --text or --file")
    return out


def run(args: argparse.Namespace) -> int:
    """Look the queries up and print the neighbours."""
    import psycopg

    if args.passages:
        from simpg.commands import _near_passages

        return _near_passages.run(args)
    for option in ("text_column", "key_column", "min_tokens", "min_containment", "limit"):
        if getattr(args, option) is not None:
            raise SimpgError(f"--{option.replace('_', '-')} applies to --passages lookups")
    args.column = args.column or "simhash"

    from simpg.fingerprint.minhash import band_columns
    from simpg.psycopg import SimHashColumn

    queries = _queries(args)
    check_max_sketch_distance(args.max_sketch_distance)
    if args.collection is not None and args.table != "simpg_documents":
        raise SimpgError(f"--collection applies to the table simpg_documents, not {args.table!r}")
    if args.confirm == "sketch" and any(sk is None for _, _, sk, _ in queries):
        raise SimpgError("--confirm sketch needs texts (--text, --file): a fingerprint has no sketch")
    with psycopg.connect(database_dsn(args), autocommit=True) as conn:
        index = SimHashColumn(conn, args.table, args.column)
        if any(sk is not None for _, _, sk, _ in queries):
            _check_config(conn, index, args)
        k = check_k(args, index.info, f"the index on {args.table}.{args.column}")  # default: the index's own radius
        confirm = args.confirm == "sketch" or (args.confirm == "auto" and _has_column(
            conn, args.table, args.sketch_column))
        # band keys as candidates too, where the table has their columns (simpg_documents does)
        banded = confirm and all(_has_column(conn, args.table, c) for c in band_columns(args.sketch_column, None))
        results: list[list[Any]] = index.near_many([fp for _, fp, _, _ in queries], k)
        if confirm:  # text queries, confirmed one by one
            results = [index.duplicates(fp, sk, k, band_keys=keys if banded else None, sketch_column=args.sketch_column,
                                        max_sketch_distance=args.max_sketch_distance) if sk is not None else found
                       for (_, fp, sk, keys), found in zip(queries, results, strict=True)]
        details: dict[Any, tuple[str, str | None]] = {}
        if args.table == "simpg_documents":
            if args.collection is not None:
                _check_collection(conn, args.collection)
            ids = sorted({n.id for found in results for n in found})
            details = {r[0]: (r[1], r[2]) for r in conn.execute(
                "SELECT id, source, title FROM simpg_documents WHERE id = ANY(%s) "
                "AND (%s::text IS NULL OR collection = %s)", [ids, args.collection, args.collection])}
            if args.collection is not None:  # every row within k, then those of the collection: still exact
                results = [[n for n in found if n.id in details] for found in results]
    report: list[dict[str, Any]] = []
    for (label, fp, _, _), found in zip(queries, results, strict=True):
        rows = []
        for n in found:
            row: dict[str, Any] = {"id": n.id, "distance": n.distance}
            if hasattr(n, "sketch_distance"):
                row["sketch_distance"], row["similarity"] = n.sketch_distance, round(n.similarity, 3)
            if n.id in details:
                row["source"], row["title"] = details[n.id]
            rows.append(row)
        report.append({"query": label, "fingerprint": fp, "neighbors": rows})
    bands_text = " or sharing a band key" if banded else ""
    if args.json:
        json.dump(report, sys.stdout, ensure_ascii=False, indent=2, default=str)
        sys.stdout.write("\n")
        return 0
    for item in report:
        confirmed = any("similarity" in r for r in item["neighbors"])
        how = ", confirmed by sketches" if confirmed else ""
        within = f"within {k} bits{bands_text if confirmed else ''}"
        print(f"{item['query']} (fingerprint {item['fingerprint']}): {len(item['neighbors'])} {within}{how}")
        if item["neighbors"]:
            id_w = max(2, *(len(str(r["id"])) for r in item["neighbors"]))
            sim = "   sim" if confirmed else ""
            print(f"  {'id':>{id_w}}  {'bits':>4}{sim}  source")
            for r in item["neighbors"]:
                cell = f"  {r['similarity']:.2f}" if confirmed else ""
                print(f"  {r['id']!s:>{id_w}}  {r['distance']:>4}{cell}  {r.get('source', '')}")
    return 0


def _check_config(conn: Any, index: Any, args: argparse.Namespace) -> None:
    """Texts are compared only with fingerprints of their config (a new simpg default is a new one)."""
    from simpg.fingerprint import FingerprintConfig
    from simpg.fingerprint.config import config_for_index

    config = FingerprintConfig(lang=args.lang)
    if args.table != "simpg_documents":
        # raises, naming both, when the index records another
        config_for_index(config, index.info.fingerprint_config, index.info.label)
        return
    row = conn.execute("SELECT fingerprint_config, count(*) FROM simpg_documents WHERE fingerprint_config <> %s "
                       "GROUP BY 1 ORDER BY 2 DESC LIMIT 1", [config.identity]).fetchone()
    if row is not None:
        raise SimpgError(f"{row[1]} rows of simpg_documents hold fingerprints made with config {row[0]}, "
                         f"not {config.identity} (--lang {args.lang}); run simpg dedup again on their "
                         "collection (it replaces it) to compare texts with them")


def _check_collection(conn: Any, collection: str) -> None:
    """--collection names one that simpg_documents holds (a typo is not an empty answer)."""
    if conn.execute("SELECT 1 FROM simpg_documents WHERE collection = %s LIMIT 1", [collection]).fetchone() is None:
        raise SimpgError(f"no collection {collection!r} in simpg_documents (simpg collections list shows them)")


def _has_column(conn: Any, table: str, column: str) -> bool:
    from simpg.backfill import column_type

    return column_type(conn, table, column) is not None
