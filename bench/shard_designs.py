"""Two ways to spread a simpg index over shard servers, measured in one run (issue 18, item 3).

* ``hash``: rows spread by a hash of their key (simpg.shards, docs/shards.md): each shard
  holds its rows with all T prefix columns; a lookup sends every shard one query with
  the T prefix ranges and the distance filter.
* ``range``: Google's design (seeds 001/003), as simpg builds it (``simpg.shards``
  with ``distribution="range"``, sql/functions/76_range_shards.sql): the rows in a table
  of the coordinator, and one table per permutation t, ``(p, key, fp)`` with ``p`` the
  permuted fingerprint, RANGE-partitioned by ``p`` over the shards (``--shards`` equal
  ranges of the signed 64-bit value: with 2, p < 0 on s1 and p >= 0 on s2; the top bits
  that choose the shard are always in the prefix) with a covering B-tree
  ``(p) INCLUDE (key, fp)``, loaded by COPY from the coordinator to each shard;
  ``ShardedColumn.near`` sends one query per permutation, each pruned to the one shard
  that holds its prefix.

Both on the same coordinator and ``--shards`` shard servers (Debian PostgreSQL 15, bench/pgserver.py
settings with 1 GB of shared buffers each), N random fingerprints, k=3 and the layout
simpg.default_levels picks. Measures lookup p50/p99 from one client, lookups/s from
``--clients`` clients, bytes per row over the shards; answers compared with each other
and with a numpy popcount. On one machine the shards share its cores, so lookups/s
cannot show how either design scales with machines; the round trips and the work per
lookup are what this measures; so are the writes through the coordinator (single rows, then
1,000 rows in one statement), the lookups from SQL (``simpg.near`` on the hash-sharded table,
``simpg.range_near``, p50 over 500 queries) and batches of 100 through
``ShardedColumn.near_many`` (time per lookup), and ``simpg.range_in_step`` alone, the catalog
check each range lookup runs first (issue 27, class 5). Usage:

    python bench/shard_designs.py --rows 1000000 --json /tmp/designs.json
    python bench/shard_designs.py --rows 1000000 --shards 4
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench import pgserver  # noqa: E402
from simpg import bits, schema  # noqa: E402
from simpg.layout import Layout  # noqa: E402
from simpg.psycopg import configure_lookups  # noqa: E402
from simpg.shards import Shard, ShardedColumn, create_shards  # noqa: E402

SETTINGS = {**pgserver.SETTINGS, "shared_buffers": "1GB", "effective_cache_size": "4GB", "huge_pages": "off"}


def latencies(lookup: Any, queries: list[int]) -> dict[str, float]:
    for q in queries[:200]:
        lookup(q)
    times = []
    start = time.perf_counter()
    for q in queries:
        t = time.perf_counter()
        lookup(q)
        times.append(time.perf_counter() - t)
    total = time.perf_counter() - start
    return {"p50_ms": float(np.percentile(times, 50)) * 1e3, "p99_ms": float(np.percentile(times, 99)) * 1e3,
            "lookups_per_s": len(queries) / total}


def throughput(make: Any, queries: list[int], clients: int, seconds: float) -> float:
    counts = [0] * clients
    stop = time.perf_counter() + seconds
    barrier = threading.Barrier(clients)

    def work(i: int) -> None:
        lookup = make()
        barrier.wait()
        n = 0
        while time.perf_counter() < stop:
            lookup(queries[(i * 997 + n) % len(queries)])
            n += 1
        counts[i] = n

    threads = [threading.Thread(target=work, args=(i,)) for i in range(clients)]
    start = time.perf_counter()
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    return sum(counts) / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--queries", type=int, default=2000)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--shards", type=int, default=2, help="shard servers (2 or more)")
    parser.add_argument("--writes", type=int, default=200, help="single-row inserts and deletes timed")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    if args.shards < 2:
        parser.error(f"--shards must be 2 or more, got {args.shards}")
    n = args.rows
    rng = np.random.default_rng(18)
    fps = rng.integers(0, 2**64, size=n, dtype=np.uint64)
    ids = np.arange(1, n + 1, dtype=np.int64)
    picks = rng.integers(0, n, size=args.queries)
    flips = rng.integers(0, 64, size=(args.queries, 2))
    queries = [int(fps[i]) ^ (1 << int(a)) ^ (1 << int(b)) for i, (a, b) in zip(picks, flips, strict=True)]

    started = [pgserver.start(settings=SETTINGS) for _ in range(1 + args.shards)]
    coord, *shard_servers = started
    schema.install_extension_files(sharedir=coord.sharedir)
    for server in started:
        with psycopg.connect(server.dsn(), autocommit=True) as conn:
            conn.execute("CREATE DATABASE bench")
        with psycopg.connect(server.dsn("bench"), autocommit=True) as conn:
            schema.install(conn)
    out: dict[str, Any] = {"rows": n, "clients": args.clients, "shards": args.shards,
                           "load_average_start": os.getloadavg()}
    id_list, fp_list = ids.tolist(), fps.view(np.int64).tolist()
    try:
        with psycopg.connect(coord.dsn("bench"), autocommit=True) as conn:
            levels = conn.execute("SELECT simpg.default_levels(3, %s)", [n]).fetchall()[0][0]
            layout = Layout(3, tuple(levels))
            out["layout"] = layout.name

            # -- hash: simpg.shards, loaded through the coordinator (INSERT, batch_size 1000)
            conn.execute("CREATE TABLE hashed (id bigint NOT NULL, simhash bigint) PARTITION BY HASH (id)")
            shard_list = [Shard(f"s{i + 1}", s.dsn("bench")) for i, s in enumerate(shard_servers)]
            create_shards(conn, "hashed", "simhash", shard_list,
                          k=3, blocks=levels[0], inner_blocks=levels[1] if len(levels) > 1 else None)
            t0 = time.perf_counter()
            conn.execute("INSERT INTO hashed (id, simhash) SELECT * FROM unnest(%s::bigint[], %s::bigint[])",
                         [id_list, fp_list])
            out["hash_load_s"] = time.perf_counter() - t0

            # -- range: simpg's range distribution of a table of the coordinator (COPY to each shard)
            conn.execute("CREATE TABLE ranged (id bigint PRIMARY KEY, simhash bigint)")
            conn.execute("INSERT INTO ranged (id, simhash) SELECT * FROM unnest(%s::bigint[], %s::bigint[])",
                         [id_list, fp_list])
            t0 = time.perf_counter()
            problems = create_shards(conn, "ranged", "simhash", shard_list, k=3, blocks=levels[0],
                                     inner_blocks=levels[1] if len(levels) > 1 else None, distribution="range")
            assert problems == [], problems
            out["range_build_s"] = time.perf_counter() - t0
            size = {"hash": 0, "range": 0}
            for server in shard_servers:
                with psycopg.connect(server.dsn("bench"), autocommit=True) as shard:
                    shard.execute("VACUUM ANALYZE hashed")
                    size["hash"] += shard.execute("SELECT pg_total_relation_size('hashed')").fetchall()[0][0]
                    size["range"] += shard.execute(
                        "SELECT sum(pg_total_relation_size(c.oid)) FROM pg_class c "
                        "WHERE c.relname ~ '^ranged_simhash_r[0-9]+$' AND c.relkind = 'r'").fetchall()[0][0]
            out["bytes_per_row"] = {k: float(v) / n for k, v in size.items()}

            def hash_lookup() -> Any:
                lc = psycopg.connect(coord.dsn("bench"), autocommit=True)
                configure_lookups(lc)
                index = ShardedColumn(lc, "hashed", "simhash", key_column="id")
                return lambda q: [(x.id, x.distance) for x in index.near(q)]

            def range_lookup() -> Any:
                lc = psycopg.connect(coord.dsn("bench"), autocommit=True)
                configure_lookups(lc)
                index = ShardedColumn(lc, "ranged", "simhash")
                return lambda q: [(x.id, x.distance) for x in index.near(q)]

            h, r = hash_lookup(), range_lookup()
            for q in queries[:100]:
                d = np.bitwise_count(fps ^ np.uint64(q))
                want = sorted((int(ids[i]), int(d[i])) for i in np.nonzero(d <= 3)[0])
                assert sorted(h(q)) == want == sorted(r(q)), q
            for q in queries:
                assert sorted(h(q)) == sorted(r(q)), q
            for name, fn in (("hash", h), ("range", r)):
                out[f"{name}_latency"] = latencies(fn, queries)
            for name, make in (("hash", hash_lookup), ("range", range_lookup)):
                out[f"{name}_lookups_per_s_{args.clients}_clients"] = throughput(make, queries, args.clients,
                                                                                 args.seconds)
            # from SQL: simpg.near on the hash-sharded table, simpg.range_near (the foreign
            # partitions named, scanned at once); and batches of 100 through ShardedColumn.near_many
            sc = psycopg.connect(coord.dsn("bench"), autocommit=True)

            def sql_hash(q: int) -> list[tuple[int, int]]:
                rows = sc.execute("SELECT id, simhash FROM simpg.near(NULL::hashed, %s, 3)", [bits.to_db(q)])
                return [(i, bits.hamming(q, bits.from_db(f))) for i, f in rows.fetchall()]

            def sql_range(q: int) -> list[tuple[int, int]]:
                return [tuple(r) for r in sc.execute("SELECT key, distance FROM simpg.range_near('ranged', %s, 3)",
                                                     [bits.to_db(q)]).fetchall()]

            some = queries[:500]
            for q in some[:50]:
                assert sorted(sql_hash(q)) == sorted(h(q)) == sorted(sql_range(q)), q
            for name, fn in (("hash", sql_hash), ("range", sql_range)):
                out[f"{name}_sql_latency"] = latencies(fn, some)
            # the check every range lookup runs first (simpg.range_in_step: the partitions and
            # triggers are as when the range shards were filled), alone, beside range_near's p50
            out["range_in_step_latency"] = latencies(
                lambda q: sc.execute("SELECT simpg.range_in_step('ranged', 'simhash')").fetchall(), some)
            for name, table, key_column in (("hash", "hashed", "id"), ("range", "ranged", None)):
                index = ShardedColumn(sc, table, "simhash", key_column=key_column)
                batched = queries[:1000]  # fewer with --queries below 1,000: the time is per lookup made
                t0 = time.perf_counter()
                found = [index.near_many(batched[i:i + 100], 3) for i in range(0, len(batched), 100)]
                out[f"{name}_near_many_ms_per_lookup"] = (time.perf_counter() - t0) / len(batched) * 1e3
                assert [sorted((x.id, x.distance) for x in f) for batch in found for f in batch] == \
                    [sorted(h(q)) for q in batched]
            sc.close()
            # writes through the coordinator: one row a statement (hash: one remote row; range:
            # one per permuted table, by the triggers), then 1,000 rows in one statement
            for name, table in (("hash", "hashed"), ("range", "ranged")):
                first = n + 1
                t0 = time.perf_counter()
                for i in range(args.writes):
                    conn.execute(f"INSERT INTO {table} (id, simhash) VALUES (%s, %s)", [first + i, first + i])
                out[f"{name}_insert_ms"] = (time.perf_counter() - t0) / args.writes * 1e3
                t0 = time.perf_counter()
                for i in range(args.writes):
                    conn.execute(f"DELETE FROM {table} WHERE id = %s", [first + i])
                out[f"{name}_delete_ms"] = (time.perf_counter() - t0) / args.writes * 1e3
                t0 = time.perf_counter()
                conn.execute(f"INSERT INTO {table} (id, simhash) SELECT g, g FROM generate_series(%s::bigint, %s) AS g",
                             [first, first + 999])
                out[f"{name}_insert_1000_rows_s"] = time.perf_counter() - t0
                conn.execute(f"DELETE FROM {table} WHERE id >= %s", [first])
            lc = psycopg.connect(coord.dsn("bench"), autocommit=True)
            statement = lc.execute("SELECT simpg.range_near_query('ranged', %s, 3)",
                                   [int(np.uint64(queries[0]).view(np.int64))]).fetchall()[0][0]
            out["range_plan"] = [row[0] for row in lc.execute("EXPLAIN (ANALYZE, COSTS OFF) " + statement)]
            lc.close()
    finally:
        for server in started:
            for stop in server._stop:
                stop()  # type: ignore[operator]
    out["load_average_end"] = os.getloadavg()
    print(json.dumps({k: v for k, v in out.items() if k != "range_plan"}, indent=1))
    print("\n".join(line for line in out["range_plan"] if "Scan" in line or "Time" in line))
    if args.json:
        args.json.write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
