"""``simpg near --passages``: the rows that copied passages of a text (partial duplicates, issue 30).

Each ``--text`` / ``--file`` is looked up through a passage index
(:class:`simpg.psycopg.PassageColumn`): every row sharing a run of at least ``--min-tokens``
tokens (default: the index's guarantee, the larger window + 4) with the text, verified on both texts,
most shared hashes first (then by key), with the containment both ways and each shared passage's
character offsets. The table defaults to the reference table ``simpg_documents`` (its
``passages`` column, filled by ``simpg dedup``; ``--collection`` keeps one collection);
any table with a passage index works too (``--table``, ``--column``, ``--text-column``).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from simpg.commands._common import database_dsn
from simpg.exc import SimpgError
from simpg.passage_report import quote, unfilled_rows
from simpg.reference import PASSAGE_COLUMN, TEXT_COLUMN
from simpg.reference import TABLE as REFERENCE_TABLE


def reference_passages(conn: Any) -> Any:
    """The :class:`~simpg.psycopg.PassageColumn` on ``simpg_documents.passages`` (its text: ``body``).

    The one place that knows where the reference table keeps its passage hashes: a
    ``passages bigint[]`` column with a passage index, which ``ensure_reference_schema``
    adds and ``simpg dedup`` fills.
    """
    from simpg.backfill import column_type
    from simpg.psycopg import PassageColumn

    if column_type(conn, REFERENCE_TABLE, PASSAGE_COLUMN) is None:
        raise SimpgError(f"{REFERENCE_TABLE} has no {PASSAGE_COLUMN} column: its documents were stored by a "
                         "simpg without passage hashes; run simpg dedup again on their collection")
    return PassageColumn(conn, REFERENCE_TABLE, PASSAGE_COLUMN, text_column=TEXT_COLUMN)


#: simpg.passages.lookup.DEFAULT_MAX_COMMON, without importing numpy to parse the arguments
LOOKUP_MAX_COMMON = 0.001


def max_common_argument(text: str) -> int | float | None:
    """``--max-common``: a count of rows (documents), a share of them (0 < x < 1), or ``none``."""
    from simpg.fingerprint.errors import InvalidConfig
    from simpg.passages.checks import checked_max_common

    if text.lower() == "none":
        return None
    try:
        value = float(text)
        return checked_max_common(int(value) if value.is_integer() else value)
    except (ValueError, OverflowError, InvalidConfig):
        raise argparse.ArgumentTypeError(f"expected a number of rows, a share of them between 0 and 1, or none, "
                                         f"got {text!r}") from None


def run(args: argparse.Namespace) -> int:
    """Look the texts up through the passage index and print the matching rows."""
    import psycopg
    from psycopg import sql

    from simpg.corpus import read_text

    if args.queries:
        raise SimpgError("--passages looks up texts (--text, --file), not fingerprints")
    texts = [(f"text {t[:40]!r}", t) for t in args.text] + [(path, read_text(path)) for path in args.file]
    if not texts:
        raise SimpgError("nothing to look up; give --text or --file")
    reference = args.table == REFERENCE_TABLE
    if args.collection is not None and not reference:
        raise SimpgError(f"--collection applies to the table {REFERENCE_TABLE}, not {args.table!r}")
    report: list[dict[str, Any]] = []
    unfilled = 0
    with psycopg.connect(database_dsn(args), autocommit=True) as conn:
        if reference:
            from simpg.commands.near import _check_collection

            if args.column not in (None, PASSAGE_COLUMN) or args.text_column not in (None, TEXT_COLUMN):
                raise SimpgError(f"{REFERENCE_TABLE} keeps its passages in {PASSAGE_COLUMN} and its texts in "
                                 f"{TEXT_COLUMN}; --column and --text-column apply to other tables")
            index = reference_passages(conn)
            if args.collection is not None:
                _check_collection(conn, args.collection)
            unfilled = unfilled_rows(conn, args.collection)
        else:
            from simpg.psycopg import PassageColumn

            index = PassageColumn(conn, args.table, args.column or PASSAGE_COLUMN,
                                  text_column=args.text_column or TEXT_COLUMN, key_column=args.key_column)
        # with --collection the limit applies to the collection's rows, after the lookup
        limit = None if args.collection is not None else args.limit
        for label, text in texts:
            found = index.near(text, min_tokens=args.min_tokens, min_containment=args.min_containment,
                               max_common=args.max_common, limit=limit)
            matches = [m.as_dict() for m in found]
            if reference:
                details = {r[0]: r[1:] for r in conn.execute(
                    sql.SQL("SELECT id, source, title, collection FROM {} WHERE id = ANY(%s)").format(
                        sql.Identifier(REFERENCE_TABLE)), [[m["key"] for m in matches]])}
                if args.collection is not None:  # every match, then those of the collection: still exact
                    matches = [m for m in matches if details[m["key"]][2] == args.collection][:args.limit]
                for m in matches:
                    m["source"], m["title"] = details[m["key"]][:2]
            for m in matches:
                for p in m["passages"]:
                    p["quote"] = quote(text, p["text_start"], p["text_end"])
            report.append({"query": label, **({"unfilled_rows": unfilled} if reference else {}),
                           "min_tokens": args.min_tokens or index.info.guarantee,
                           "skipped_hashes": list(found.skipped), "matches": matches})
    if unfilled:
        from simpg.passage_report import fill_hint

        where = f"of collection {args.collection!r}" if args.collection is not None else f"of {REFERENCE_TABLE}"
        print(f"simpg: {unfilled} rows {where} have no passage hashes (stored by an older simpg) and cannot be "
              f"found; {fill_hint(args.collection or 'C')}", file=sys.stderr)
    if args.json:
        json.dump(report, sys.stdout, ensure_ascii=False, indent=2, default=str)
        sys.stdout.write("\n")
        return 0
    for item in report:
        skipped = item["skipped_hashes"]
        note = f" ({len(skipped)} common hashes skipped: --max-common none skips none)" if skipped else ""
        print(f"{item['query']}: {len(item['matches'])} rows share a passage of {item['min_tokens']} tokens "
              f"or more{note}")
        for m in item["matches"]:
            where = f"  {m['source']}" if "source" in m else ""
            print(f"  {m['key']}{where}")
            print(f"    {m['row_in_text']:.0%} of the row is in the text, {m['text_in_row']:.0%} of the text is "
                  f"in the row; {m['passage_count']} passages, {m['shared_tokens']} tokens")
            for p in m["passages"]:
                print(f"    text {p['text_start']}-{p['text_end']}, row {p['row_start']}-{p['row_end']} "
                      f"({p['tokens']} tokens): \"{p['quote']}\"")
    return 0
