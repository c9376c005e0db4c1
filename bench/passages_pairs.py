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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dsn", default=os.environ.get("SIMPG_DSN"), help="default: $SIMPG_DSN, else embedded")
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args(argv)
    dsn = args.dsn
    if not dsn:
        from simpg.embedded import embedded_dsn

        dsn = embedded_dsn()
    print(json.dumps(run(dsn, args.rows, args.seed, args.repeat), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
