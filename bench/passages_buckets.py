"""Bucketed keys for the passage index: GIN bytes and candidate-lookup cost against today's GIN, in one run.

A measurement, no product change. Today ``simpg.create_passage_index`` puts a GIN index on the
``bigint[]`` column of passage hashes: with no hash shared between rows every hash is a key of
its own (a 24-byte entry tuple and a line pointer each). Here the index is on a coarser key
per hash, its low ``b`` bits (``h & (2^b - 1)``, an int4; not the top bits: a winnowed hash is
the least of its window, so its top bits are mostly zero, and at 8,000 rows the top 16 bits of
446k hashes took only 15,973 of 65,536 values where the low 16 took 65,451), through an expression GIN index on
the scratch SQL function ``bucket_bench_keys(passages, b)`` (made in ``public`` by this
script), so that several rows share a key and GIN's compressed posting lists amortise the
entry. A lookup asks the bucket keys through the index and the exact hashes on the heap row::

    SELECT id FROM bucket_bench WHERE bucket_bench_keys(passages, b) && $keys AND passages && $hashes

against today's ``SELECT id FROM bucket_bench_exact WHERE passages && $hashes``; both must
return the same ids for every query (the script stops otherwise).

Rows: the ``(id, passages)`` of a table built by bench/passages_scale.py (``--source``, default
``passages_scale2_100000_1``: 100,000 rows of 5 KB English fitted to the real parts, ~56
hashes a row), copied into ``bucket_bench`` (the bucket indexes, one per b) and
``bucket_bench_exact`` (today's GIN, as create_passage_index makes it); the source table is
only read. Text bytes are the source's ``sum(octet_length(body))``, as the scale bench counts
them. Indexes are made after the load (CREATE INDEX); ``--insert-b`` also makes one b (and
today's) with the index first and the rows inserted into it (``INSERT ... SELECT`` in chunks
of 1,000 rows, fastupdate on, then VACUUM).

Queries (hashes, not texts; ~55 a query as a 5 KB text has):
  copy  4 to 11 consecutive hashes of a random stored row (a quoted passage of 60 to 150
        tokens has that many at ~11 hashes a KB and 6.5 bytes a token), the rest random;
  none  55 random hashes.
A warm-up pass of other queries of both kinds first, then each query is asked by every
variant in turn (the order rotating), on one connection; the client-side time of the
statement is taken. The lookup connection has the product's lookup settings
(``simpg.psycopg.configure_lookups``: generic plans, no sequential scans, as PassageColumn.near's
connection has them). Candidate heap rows per query (rows the bitmap gives the heap: found +
removed by the exact filter) and buffers come from ``EXPLAIN (ANALYZE, BUFFERS, TIMING OFF)``
of every query afterwards (not timed).

Usage:
    SIMPG_HOME=/tmp/simpg-buckets python bench/passages_buckets.py --bits 17 18 20 21 22 24 --insert-b 20 22
    python bench/passages_buckets.py --dsn "host=... dbname=..." --source passages_scale2_100000_1
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
from psycopg import sql

HASHES_PER_QUERY = 55

KEYS_FUNCTION = """
CREATE OR REPLACE FUNCTION public.bucket_bench_keys(passages bigint[], b int) RETURNS int4[]
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
RETURN ARRAY(SELECT (x & ((1::bigint << b) - 1))::int4 FROM unnest(passages) AS x)
"""


def keys_of(hashes: list[int], b: int) -> list[int]:
    """The bucket keys of hashes, as bucket_bench_keys makes them (the low b bits)."""
    return sorted({h & ((1 << b) - 1) for h in hashes})


def setup(conn: psycopg.Connection, source: str) -> dict[str, Any]:
    conn.execute(KEYS_FUNCTION)
    src = sql.Identifier(source)
    for table in ("bucket_bench", "bucket_bench_exact"):
        conn.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(sql.Identifier(table)))
        conn.execute(sql.SQL("CREATE TABLE {} AS SELECT id, passages FROM {} ORDER BY id").format(
            sql.Identifier(table), src))
        conn.execute(sql.SQL("ALTER TABLE {} ADD PRIMARY KEY (id)").format(sql.Identifier(table)))
    text_bytes, column_bytes, hashes, rows = conn.execute(sql.SQL(
        "SELECT sum(octet_length(body)), sum(pg_column_size(passages)), sum(cardinality(passages)), count(*) "
        "FROM {}").format(src)).fetchone()
    return {"source": source, "rows": rows, "text_bytes": int(text_bytes), "column_bytes": int(column_bytes),
            "hashes": int(hashes), "hashes_per_row": round(int(hashes) / rows, 1)}


def index_name(b: int | None, suffix: str = "") -> str:
    return f"bucket_bench_{'exact' if b is None else f'b{b}'}{suffix}_gin"


def build(conn: psycopg.Connection, table: str, b: int | None, name: str) -> float:
    expr = sql.SQL("passages") if b is None else sql.SQL("bucket_bench_keys(passages, {})").format(sql.Literal(b))
    started = time.perf_counter()
    conn.execute(sql.SQL("CREATE INDEX {} ON {} USING gin (({}))").format(
        sql.Identifier(name), sql.Identifier(table), expr))
    return round(time.perf_counter() - started, 1)


def keys_figures(conn: psycopg.Connection, b: int | None) -> dict[str, Any]:
    """Distinct keys, rows per key (the mean posting list: a row counted once per key it has), and the
    row pairs an all-pairs self-join on the keys would recheck (pairs of rows sharing a key, counted
    once per key they share: an upper bound of the distinct pairs)."""
    key = sql.SQL("x") if b is None else sql.SQL("x & ((1::bigint << {}) - 1)").format(sql.Literal(b))
    keys, row_keys, pairs = conn.execute(sql.SQL(
        "SELECT count(*), sum(c), sum(c * (c - 1) / 2) FROM (SELECT k, count(*)::numeric AS c FROM "
        "(SELECT DISTINCT id, {} AS k FROM bucket_bench, unnest(passages) AS x) s "
        "GROUP BY k) g").format(key)).fetchone()
    return {"distinct_keys": keys, "rows_per_key": round(float(row_keys) / keys, 1), "key_pairs": int(pairs)}


def insert_variant(conn: psycopg.Connection, b: int | None, rows: int) -> dict[str, Any]:
    """The index made first, the rows inserted into it in chunks, then VACUUM (flushes the pending list)."""
    table = f"bucket_bench_ins_{'exact' if b is None else f'b{b}'}"
    conn.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(sql.Identifier(table)))
    conn.execute(sql.SQL("CREATE TABLE {} (id bigint PRIMARY KEY, passages bigint[])").format(sql.Identifier(table)))
    name = index_name(b, "_ins")
    build(conn, table, b, name)
    started = time.perf_counter()
    for low in range(0, rows, 1000):
        conn.execute(sql.SQL("INSERT INTO {} SELECT id, passages FROM bucket_bench WHERE id > %s AND id <= %s "
                             "ORDER BY id").format(sql.Identifier(table)), [low, low + 1000])
    conn.execute(sql.SQL("VACUUM {}").format(sql.Identifier(table)))
    gin = conn.execute("SELECT pg_relation_size(%s::regclass)", [name]).fetchone()[0]
    out = {"gin_bytes": gin, "insert_and_vacuum_s": round(time.perf_counter() - started, 1)}
    conn.execute(sql.SQL("DROP TABLE {}").format(sql.Identifier(table)))
    return out


def make_queries(conn: psycopg.Connection, count: int, seed: int, rows: int) -> list[tuple[str, list[int], int | None]]:
    rng = np.random.default_rng(seed)
    out: list[tuple[str, list[int], int | None]] = []
    for _ in range(count):
        for kind in ("copy", "none"):
            hashes = rng.integers(-2**63, 2**63 - 1, HASHES_PER_QUERY, dtype=np.int64, endpoint=True).tolist()
            key = None
            if kind == "copy":
                key = int(rng.integers(1, rows + 1))
                stored = conn.execute("SELECT passages FROM bucket_bench WHERE id = %s", [key]).fetchone()[0]
                n = min(int(rng.integers(4, 12)), len(stored))
                start = int(rng.integers(0, len(stored) - n + 1))
                hashes[:n] = stored[start:start + n]
            out.append((kind, hashes, key))
    return out


def lookup_statement(b: int | None) -> tuple[sql.Composable, bool]:
    if b is None:
        return sql.SQL("SELECT id FROM bucket_bench_exact WHERE passages && %(h)s::bigint[]"), False
    return sql.SQL("SELECT id FROM bucket_bench WHERE bucket_bench_keys(passages, {}) && %(k)s::int4[] "
                   "AND passages && %(h)s::bigint[]").format(sql.Literal(b)), True


def ask(conn: psycopg.Connection, b: int | None, hashes: list[int]) -> tuple[float, set[int]]:
    statement, bucketed = lookup_statement(b)
    params: dict[str, Any] = {"h": hashes}
    if bucketed:
        assert b is not None
        params["k"] = keys_of(hashes, b)
    started = time.perf_counter()
    ids = {row[0] for row in conn.execute(statement, params).fetchall()}
    return time.perf_counter() - started, ids


def explain(conn: psycopg.Connection, b: int | None, hashes: list[int]) -> dict[str, Any]:
    statement, bucketed = lookup_statement(b)
    params: dict[str, Any] = {"h": hashes}
    if bucketed:
        assert b is not None
        params["k"] = keys_of(hashes, b)
    plan = conn.execute(sql.SQL("EXPLAIN (ANALYZE, BUFFERS, TIMING OFF, FORMAT JSON) ") + statement,
                        params).fetchone()[0][0]["Plan"]
    nodes, stack = [], [plan]
    while stack:
        node = stack.pop()
        nodes.append(node["Node Type"])
        stack.extend(node.get("Plans", []))
    heap = plan if plan["Node Type"] == "Bitmap Heap Scan" else None
    candidates = None
    if heap is not None:
        candidates = (heap["Actual Rows"] + heap.get("Rows Removed by Filter", 0)
                      + heap.get("Rows Removed by Index Recheck", 0))
    return {"nodes": nodes, "candidates": candidates, "found": plan["Actual Rows"],
            "heap_blocks": None if heap is None
            else heap.get("Exact Heap Blocks", 0) + heap.get("Lossy Heap Blocks", 0),
            "shared_buffers": plan.get("Shared Hit Blocks", 0) + plan.get("Shared Read Blocks", 0)}


def percentiles(seconds: list[float]) -> dict[str, float]:
    ms = sorted(s * 1000 for s in seconds)
    return {"n": len(ms), "p50_ms": round(statistics.median(ms), 2),
            "p99_ms": round(ms[min(len(ms) - 1, int(len(ms) * 0.99))], 2), "mean_ms": round(statistics.fmean(ms), 2)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dsn", default=os.environ.get("SIMPG_DSN"), help="default: $SIMPG_DSN, else embedded")
    parser.add_argument("--source", default="passages_scale2_100000_1", help="a table of bench/passages_scale.py")
    parser.add_argument("--bits", type=int, nargs="+", default=[16, 18, 20, 22, 24])
    parser.add_argument("--insert-b", type=int, nargs="*", default=[], help="b values also built index-first")
    parser.add_argument("--queries", type=int, default=100, help="queries of each kind (copy, none)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    if any(not 1 <= b <= 31 for b in args.bits + args.insert_b):
        parser.error("b must be 1 to 31 (a non-negative int4 key)")
    dsn = args.dsn
    if not dsn:
        os.environ.setdefault("SIMPG_HOME", "/tmp/simpg-buckets")
        from simpg.embedded import embedded_dsn

        dsn = embedded_dsn()
    from simpg.psycopg import configure_lookups

    variants: list[int | None] = [None, *args.bits]
    result: dict[str, Any] = {"load_before": os.getloadavg()}
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("SET maintenance_work_mem = '1GB'")
        data = result["data"] = setup(conn, args.source)
        text, hashes = data["text_bytes"], data["hashes"]
        column = {"column_bytes_per_hash": round(data["column_bytes"] / hashes, 1),
                  "ratio_column": round(data["column_bytes"] / text, 3)}
        sizes: dict[str, Any] = {}
        for b in variants:
            table = "bucket_bench_exact" if b is None else "bucket_bench"
            name = index_name(b)
            seconds = build(conn, table, b, name)
            gin = conn.execute("SELECT pg_relation_size(%s::regclass)", [name]).fetchone()[0]
            entry = {"build_s": seconds, "gin_bytes": gin, "gin_bytes_per_hash": round(gin / hashes, 1),
                     "ratio_gin": round(gin / text, 3), **column,
                     "ratio_total": round((gin + data["column_bytes"]) / text, 3)}
            entry.update(keys_figures(conn, b))  # today: the hashes themselves are the keys
            sizes["today" if b is None else f"b{b}"] = entry
            print(sizes["today" if b is None else f"b{b}"], file=sys.stderr, flush=True)
        conn.execute("ANALYZE bucket_bench")
        conn.execute("ANALYZE bucket_bench_exact")
        result["sizes"] = sizes
        for b in [None, *args.insert_b]:
            made = insert_variant(conn, b, data["rows"])
            made.update(gin_bytes_per_hash=round(made["gin_bytes"] / hashes, 1),
                        ratio_total=round((made["gin_bytes"] + data["column_bytes"]) / text, 3))
            result.setdefault("index_first", {})["today" if b is None else f"b{b}"] = made
            print("index first", b, made, file=sys.stderr, flush=True)
        save(result, args.out)
        warm = make_queries(conn, args.queries, args.seed + 1000, data["rows"])
        asked = make_queries(conn, args.queries, args.seed, data["rows"])
    with psycopg.connect(dsn, autocommit=True) as conn:
        configure_lookups(conn)  # the product's lookup connection: generic plans, no sequential scans
        for _, h, _ in warm:
            for b in variants:
                ask(conn, b, h)
        times: dict[str, dict[str, list[float]]] = {}
        for i, (kind, h, key) in enumerate(asked):
            answers = {}
            order = variants[i % len(variants):] + variants[:i % len(variants)]
            for b in order:
                seconds, ids = ask(conn, b, h)
                times.setdefault(kind, {}).setdefault("today" if b is None else f"b{b}", []).append(seconds)
                answers[b] = ids
            for b in args.bits:
                if answers[b] != answers[None]:
                    raise SystemExit(f"b {b} answered {sorted(answers[b])} where today's index answered "
                                     f"{sorted(answers[None])}")
            if key is not None and key not in answers[None]:
                raise SystemExit(f"copy query of row {key} did not find it")
        plans: dict[str, dict[str, Any]] = {}
        for kind, h, _ in asked:
            for b in variants:
                name = "today" if b is None else f"b{b}"
                plans.setdefault(kind, {}).setdefault(name, []).append(explain(conn, b, h))
        lookups: dict[str, Any] = {}
        for kind, per in times.items():
            for name, seconds in per.items():
                got = plans[kind][name]
                candidates = [p["candidates"] for p in got if p["candidates"] is not None]
                lookups.setdefault(kind, {})[name] = {
                    **percentiles(seconds),
                    "candidates_mean": round(statistics.fmean(candidates), 1) if candidates else None,
                    "candidates_max": max(candidates) if candidates else None,
                    "found_mean": round(statistics.fmean(p["found"] for p in got), 2),
                    "heap_blocks_mean": round(statistics.fmean(p["heap_blocks"] or 0 for p in got), 1),
                    "buffers_mean": round(statistics.fmean(p["shared_buffers"] for p in got), 1),
                    "plans": sorted({" > ".join(p["nodes"]) for p in got})}
        result["lookups"] = lookups
        result["one_plan_each"] = {kind: {name: got[0] for name, got in per.items()} for kind, per in plans.items()}
        result["rows_per_key_at_1m"] = {
            f"b{b}": round(sizes[f"b{b}"]["rows_per_key"] * 10, 1) for b in args.bits}
        result["b_for_same_rows_per_key_at_10x_rows"] = {f"b{b}": round(b + math.log2(10), 1) for b in args.bits}
        result["load_after"] = os.getloadavg()
    save(result, args.out)
    print(json.dumps(result, indent=2))
    return 0


def save(result: dict[str, Any], out: Path | None) -> None:
    if out:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    sys.exit(main())
