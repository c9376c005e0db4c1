"""Side-by-side timings of simpg.passage_pairs (sql/functions/45_passages.sql) and the
alternatives it was chosen over, in one run, on synthetic passage hashes.

1. ``passage_pairs``: what the function runs (simpg.passage_pairs_query): each row's
   distinct hashes (a small DISTINCT per row, so arrays stored unsorted or with repeats
   count right), the common ones left out, hash-joined with themselves, grouped by pair.
2. ``trusting``: the same without the per-row DISTINCT (right only if every array is
   distinct): the price of never trusting the stored arrays.
3. ``postings``: each hash's posting list (array_agg of keys), its pairs generated from
   the list, grouped by pair.

All variants must give identical answers (the data is sorted and distinct); the script
checks that before it reports. The same table is then timed with max_common NULL (skip
nothing: the boilerplate rows pair with each other).

Usage:
    python bench/passages_pairs.py --rows 100000            # embedded server
    python bench/passages_pairs.py --dsn "host=... dbname=..." --rows 100000

``--report``: the whole all-pairs passage report, end to end, on the table bench/passages_scale.py
built (``passages_scale2_1000000_<seed>``, or ``--table``, read only; embedded server in $SIMPG_HOME, default
/tmp/simpg-passages-scale2). Stages, each timed and counted: the SQL candidates
(``simpg.passage_pairs(table, 'passages', 1, max_common)``); the pre-filter
(``simpg.passages.pairs.prefiltered``: every candidate's document read in key order in batches,
tokenised once, only its filter keys kept); the verification of the pairs it keeps
(``simpg.passages.verified_pairs``, their texts read by key). With ``--rows`` below the table's
size, the first N rows (by id) are copied to a temporary table with its own passage index.
``--old`` also verifies every candidate without the pre-filter (what the report did before) and
stops unless both give the same pairs with the same comparisons:
    python bench/passages_pairs.py --report --rows 100000 --old --workers 2
    python bench/passages_pairs.py --report --workers 2     # 1,000,000 rows

Data: per row 37 random hashes (a 5 KB text at w = 46); 20% of rows copy a run of 5 to 15
hashes of an earlier row (a shared passage); 2% carry the same 10 boilerplate hashes
(a licence paragraph), which the statistics put above max_common = 1000 at 100,000 rows.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from typing import Any

import psycopg
import psycopg.sql

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

TRUSTING = """
WITH e AS MATERIALIZED (SELECT t.id AS key, u.h FROM pdocs AS t CROSS JOIN LATERAL unnest(t.passages) AS u(h)
                        WHERE u.h IS NOT NULL AND u.h <> ALL (%(skip)s::bigint[]))
SELECT a.key AS key_a, b.key AS key_b, count(*)::integer AS shared
FROM e AS a JOIN e AS b ON b.h = a.h AND a.key < b.key
GROUP BY a.key, b.key HAVING count(*) >= 1
"""

POSTINGS = """
WITH p AS MATERIALIZED (
    SELECT array_agg(t.id ORDER BY t.id) AS keys
    FROM pdocs AS t CROSS JOIN LATERAL unnest(t.passages) AS u(h)
    WHERE u.h IS NOT NULL AND u.h <> ALL (%(skip)s::bigint[])
    GROUP BY u.h HAVING count(*) > 1)
SELECT p.keys[i] AS key_a, p.keys[j] AS key_b, count(*)::integer AS shared
FROM p CROSS JOIN LATERAL generate_subscripts(p.keys, 1) AS i
CROSS JOIN LATERAL generate_series(i + 1, cardinality(p.keys)) AS j
GROUP BY 1, 2
"""


def make_rows(n: int, seed: int) -> list[list[int]]:
    rng = random.Random(seed)
    boiler = [rng.randrange(-(1 << 63), 1 << 63) for _ in range(10)]
    rows: list[list[int]] = []
    for i in range(n):
        values = {rng.randrange(-(1 << 63), 1 << 63) for _ in range(37)}
        if i and rng.random() < 0.2:
            source = sorted(rows[rng.randrange(i)])
            start = rng.randrange(len(source))
            values.update(source[start:start + rng.randrange(5, 16)])
        if rng.random() < 0.02:
            values.update(boiler)
        rows.append(sorted(values))
    return rows


def timed(conn: psycopg.Connection, query: str, params: Any = None, repeat: int = 1) -> tuple[float, set[Any]]:
    best, result = float("inf"), set()
    for _ in range(repeat):
        start = time.perf_counter()
        result = set(conn.execute(query, params).fetchall())
        best = min(best, time.perf_counter() - start)
    return best, result


def run(dsn: str, rows: int, seed: int, repeat: int) -> dict[str, Any]:
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("DROP TABLE IF EXISTS pdocs")
        conn.execute("CREATE TABLE pdocs (id bigint PRIMARY KEY, passages bigint[])")
        with conn.cursor().copy("COPY pdocs (id, passages) FROM STDIN") as copy:
            for key, values in enumerate(make_rows(rows, seed), start=1):
                copy.write_row((key, values))
        start = time.perf_counter()
        conn.execute("SELECT simpg.create_passage_index('pdocs', 'passages')")
        build = time.perf_counter() - start
        skip = conn.execute("SELECT simpg.common_passage_hashes('pdocs', 'passages', 1000)").fetchone()[0]
        conn.execute("SET work_mem = '64MB'")
        conn.execute("SET jit = off")
        t_fn, got = timed(conn, "SELECT * FROM simpg.passage_pairs('pdocs', 'passages', 1, 1000)", repeat=repeat)
        t_trust, trusting = timed(conn, TRUSTING, {"skip": skip}, repeat)
        t_post, postings = timed(conn, POSTINGS, {"skip": skip}, repeat)
        if not got == trusting == postings:
            raise SystemExit("the variants disagree")
        t_all, everything = timed(conn, "SELECT * FROM simpg.passage_pairs('pdocs', 'passages', 1, NULL)")
        size = conn.execute("SELECT pg_relation_size('pdocs_passages_gin_idx'), pg_table_size('pdocs')").fetchone()
        conn.execute("DROP TABLE pdocs")
    return {
        "rows": rows, "skipped_hashes": len(skip), "pairs": len(got), "pairs_skip_nothing": len(everything),
        "gin_build_s": round(build, 2), "gin_bytes": size[0], "table_bytes": size[1],
        "passage_pairs_s": round(t_fn, 2), "trusting_s": round(t_trust, 2), "postings_s": round(t_post, 2),
        "passage_pairs_skip_nothing_s": round(t_all, 2),
        "ratio_passage_pairs_to_trusting": round(t_fn / t_trust, 2),
        "ratio_passage_pairs_to_postings": round(t_fn / t_post, 2),
    }


def _read_candidates(conn: psycopg.Connection, table: str, max_common: int | None) -> tuple[list[int], list[int]]:
    """The SQL candidates in key order, read through COPY (6M rows: a few seconds to parse)."""
    import numpy as np

    statement = psycopg.sql.SQL(
        "COPY (SELECT key_a, key_b FROM simpg.passage_pairs({}::regclass, 'passages', 1, {}) "
        "ORDER BY key_a, key_b) TO STDOUT").format(psycopg.sql.Literal(table), psycopg.sql.Literal(max_common))
    with conn.cursor().copy(statement) as copy:
        data = b"".join(bytes(block) for block in copy)
    pairs = np.array(data.split(), dtype=np.int64).reshape(-1, 2)
    return pairs[:, 0].tolist(), pairs[:, 1].tolist()


def _bodies_in_key_order(dsn: str, table: str, batch: int = 2000) -> Any:
    """(id, body) of every row, in key order, read ``batch`` rows at a time (a server-side cursor)."""
    with psycopg.connect(dsn) as conn, conn.cursor(name="bodies") as cur:
        cur.itersize = batch
        cur.execute(psycopg.sql.SQL("SELECT id, body FROM {} ORDER BY id").format(psycopg.sql.Identifier(table)))
        for key, body in cur:
            yield key, body or ""


def _bodies(conn: psycopg.Connection, table: str, ids: list[int], batch: int = 5000) -> dict[int, str]:
    texts: dict[int, str] = {}
    query = psycopg.sql.SQL("SELECT id, body FROM {} WHERE id = ANY(%s) ORDER BY id").format(
        psycopg.sql.Identifier(table))
    for s in range(0, len(ids), batch):
        for key, body in conn.execute(query, [ids[s:s + batch]]):
            texts[key] = body or ""
    return texts


def _old_batch(item: tuple[dict[int, str], list[int], list[int], int]) -> list[tuple[int, int, Any]]:
    """The report before the pre-filter: compare() of every candidate of a batch, kept by pair_kept."""
    from simpg.passages.pairs import pair_kept, verify_batch

    texts, a_list, b_list, min_tokens = item
    return [(x, y, c) for x, y, c in zip(a_list, b_list, verify_batch(texts, a_list, b_list), strict=True)
            if pair_kept(c, min_tokens, None)]


def _subset(conn: psycopg.Connection, table: str, rows: int, window: int) -> str:
    """The first ``rows`` rows of ``table`` in a temporary table with its own passage index."""
    conn.execute("CREATE TEMP TABLE pairs_subset (id bigint PRIMARY KEY, body text, passages bigint[])")
    conn.execute(psycopg.sql.SQL("INSERT INTO pairs_subset SELECT id, body, passages FROM {} ORDER BY id LIMIT %s")
                 .format(psycopg.sql.Identifier(table)), [rows])
    conn.execute("SELECT simpg.create_passage_index('pairs_subset', 'passages', %s)", [window])
    conn.execute("ANALYZE pairs_subset")
    return "pairs_subset"


def report(dsn: str, table: str, rows: int | None, min_tokens: int, max_common: int | None, workers: int,
           old: bool) -> dict[str, Any]:
    from simpg.fingerprint.batch import _each
    from simpg.passages import verified_pairs
    from simpg.passages.pairs import VERIFY_BATCH, prefiltered

    result: dict[str, Any] = {"table": table, "min_tokens": min_tokens, "max_common": max_common,
                              "workers": workers, "load_before": os.getloadavg()}
    with psycopg.connect(dsn, autocommit=True) as conn:
        total = conn.execute(psycopg.sql.SQL("SELECT count(*) FROM {}").format(psycopg.sql.Identifier(table))
                             ).fetchone()[0]
        rel = table
        if rows is not None and rows < total:
            window = conn.execute("SELECT passage_window FROM simpg.passage_indexes WHERE indexed_table = %s::regclass",
                                  [table]).fetchone()[0]
            started = time.perf_counter()
            rel = _subset(conn, table, rows, window)
            result["subset_s"] = round(time.perf_counter() - started, 1)
        result["rows"] = rows if rows is not None and rows < total else total
        conn.execute("SET max_parallel_workers_per_gather = 2")
        started = time.perf_counter()
        a, b = _read_candidates(conn, rel, max_common)
        result["candidates"] = len(a)
        result["candidates_s"] = round(time.perf_counter() - started, 1)
        print(json.dumps(result), file=sys.stderr, flush=True)
        started = time.perf_counter()
        documents = _bodies_in_key_order(dsn, table) if rel == table else (
            (k, t) for k, t in conn.execute("SELECT id, body FROM pairs_subset ORDER BY id"))
        keep = prefiltered(documents, a, b, min_tokens=min_tokens, workers=workers)
        kept_a = [x for x, k in zip(a, keep.tolist(), strict=True) if k]
        kept_b = [y for y, k in zip(b, keep.tolist(), strict=True) if k]
        result["after_prefilter"] = len(kept_a)
        result["prefilter_s"] = round(time.perf_counter() - started, 1)
        print(json.dumps(result), file=sys.stderr, flush=True)
        started = time.perf_counter()
        texts = _bodies(conn, rel, sorted({*kept_a, *kept_b}))
        pairs = verified_pairs(texts, kept_a, kept_b, min_tokens=min_tokens, workers=workers)
        result["verified_pairs"] = len(pairs)
        result["verify_s"] = round(time.perf_counter() - started, 1)
        result["new_total_s"] = round(result["candidates_s"] + result["prefilter_s"] + result["verify_s"], 1)
        print(json.dumps(result), file=sys.stderr, flush=True)
        if old:
            started = time.perf_counter()
            texts = _bodies(conn, rel, sorted({*a, *b}))
            items = (({d: texts[d] for d in {*a[s:s + VERIFY_BATCH], *b[s:s + VERIFY_BATCH]}},
                      a[s:s + VERIFY_BATCH], b[s:s + VERIFY_BATCH], min_tokens)
                     for s in range(0, len(a), VERIFY_BATCH))
            found = [p for batch in _each(_old_batch, items, workers, 1, "spawn") for p in batch]  # type: ignore[arg-type]
            result["old_verify_s"] = round(time.perf_counter() - started, 1)
            result["old_total_s"] = round(result["candidates_s"] + result["old_verify_s"], 1)
            if {(x, y): c for x, y, c in found} != {(p.a, p.b): p.comparison for p in pairs}:
                raise SystemExit("the pre-filtered report differs from verifying every candidate")
            result["identical_pairs"] = True
            result["ratio_old_to_new_verification"] = round(
                result["old_verify_s"] / (result["prefilter_s"] + result["verify_s"]), 1)
    result["load_after"] = os.getloadavg()
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dsn", default=os.environ.get("SIMPG_DSN"), help="default: $SIMPG_DSN, else embedded")
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--report", action="store_true",
                        help="the end-to-end report on the table of bench/passages_scale.py")
    parser.add_argument("--table", default=None,
                        help="with --report: the table (default passages_scale2_1000000_<seed>)")
    parser.add_argument("--old", action="store_true", help="with --report: also verify every candidate, and compare")
    parser.add_argument("--min-tokens", type=int, default=50, help="with --report (50: the guarantee of window 46)")
    parser.add_argument("--max-common", type=int, default=1000, help="with --report; 0 skips nothing")
    parser.add_argument("--workers", type=int, default=2, help="with --report: processes tokenising and verifying")
    args = parser.parse_args(argv)
    dsn = args.dsn
    if not dsn:
        if args.report:
            os.environ.setdefault("SIMPG_HOME", "/tmp/simpg-passages-scale2")
        from simpg.embedded import embedded_dsn

        dsn = embedded_dsn()
    if args.report:
        rows = args.rows if "--rows" in (argv if argv is not None else sys.argv) else None
        table = args.table or f"passages_scale2_1000000_{args.seed}"
        print(json.dumps(report(dsn, table, rows, args.min_tokens, args.max_common or None, args.workers,
                                args.old), indent=2))
        return 0
    print(json.dumps(run(dsn, args.rows, args.seed, args.repeat), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
