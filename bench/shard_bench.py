"""One server against a coordinator and two shard servers (postgres_fdw), in one run.

Starts three Debian PostgreSQL 15 servers (bench/pgserver.py's settings with 1 GB of
shared buffers each, since three share the machine): the first holds the one-server
table and is also the coordinator; the other two are the shards. Loads the same N
random fingerprints (k=3, the layout simpg.default_levels picks for N) into:

* ``single``: one table on one server, COPY then ``simpg.create_index``;
* ``sharded``: a hash-partitioned table on the coordinator over the two shards
  (``simpg.shards.create_shards``: the shards' simpg indexes exist before the load),
  loaded by ``INSERT ... SELECT`` through the coordinator (postgres_fdw batch_size 1000).

Then, on each, with the answers compared between the two and with a numpy popcount:
single lookups from one client on a lookup connection (SimHashColumn.connect /
configure_lookups: generic plans), p50, p99, lookups/s; lookups/s of ``--clients``
clients (threads, a connection each); batches (near_many of 100),
bytes per row (table and indexes, summed over the shards), and all pairs within k
(SimHashColumn.pairs, which reads every row once). Prints a table with ratios and writes
JSON. Usage:

    python bench/shard_bench.py --rows 1000000 --json /tmp/shard_bench.json
"""

from __future__ import annotations

import argparse
import json
import statistics
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
from simpg.psycopg import SimHashColumn, configure_lookups  # noqa: E402
from simpg.shards import Shard, ShardedColumn, create_shards  # noqa: E402

SETTINGS = {**pgserver.SETTINGS, "shared_buffers": "1GB", "effective_cache_size": "4GB", "huge_pages": "off"}


def percentile(values: list[float], q: float) -> float:
    return float(np.percentile(np.array(values), q))


def time_lookups(lookup: Any, queries: list[int]) -> dict[str, float]:
    times = []
    start = time.perf_counter()
    for q in queries:
        t = time.perf_counter()
        lookup(q)
        times.append(time.perf_counter() - t)
    total = time.perf_counter() - start
    return {"p50_ms": percentile(times, 50) * 1e3, "p99_ms": percentile(times, 99) * 1e3,
            "mean_ms": statistics.fmean(times) * 1e3, "lookups_per_s": len(queries) / total}


def _sharded_lookup(dsn: str) -> Any:
    conn = psycopg.connect(dsn, autocommit=True)
    configure_lookups(conn)
    return ShardedColumn(conn, "sharded", "simhash", key_column="id").near


def throughput(make: Any, queries: list[int], clients: int, seconds: float) -> float:
    """Lookups per second of ``clients`` threads, each with its own connection, for ``seconds``."""
    counts = [0] * clients
    barrier = threading.Barrier(clients + 1)
    stop = [0.0]

    def work(i: int) -> None:
        lookup = make()
        barrier.wait()
        n = 0
        while time.perf_counter() < stop[0]:
            lookup(queries[(i * 997 + n) % len(queries)])
            n += 1
        counts[i] = n

    threads = [threading.Thread(target=work, args=(i,)) for i in range(clients)]
    for th in threads:
        th.start()
    stop[0] = time.perf_counter() + 3600
    barrier.wait()
    start = time.perf_counter()
    stop[0] = start + seconds
    for th in threads:
        th.join()
    return sum(counts) / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--queries", type=int, default=2000)
    parser.add_argument("--clients", type=int, default=4, help="clients of the throughput figure")
    parser.add_argument("--seconds", type=float, default=10.0, help="length of the throughput figure")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    n = args.rows
    rng = np.random.default_rng(18)
    fps = rng.integers(0, 2**64, size=n, dtype=np.uint64)
    ids = np.arange(1, n + 1, dtype=np.int64)
    picks = rng.integers(0, n, size=args.queries)
    flips = rng.integers(0, 64, size=(args.queries, 2))
    queries = [int(fps[i]) ^ (1 << int(a)) ^ (1 << int(b)) for i, (a, b) in zip(picks, flips, strict=True)]

    started = [pgserver.start(settings=SETTINGS) for _ in range(3)]
    coord, *shard_servers = started
    schema.install_extension_files(sharedir=coord.sharedir)
    for server in started:
        with psycopg.connect(server.dsn(), autocommit=True) as conn:
            conn.execute("CREATE DATABASE bench")
        with psycopg.connect(server.dsn("bench"), autocommit=True) as conn:
            schema.install(conn)
    out: dict[str, Any] = {"rows": n, "queries": args.queries}
    with psycopg.connect(coord.dsn("bench"), autocommit=True) as conn:
        levels = conn.execute("SELECT simpg.default_levels(3, %s)", [n]).fetchall()[0][0]
        out["layout"] = f"k3:{'x'.join(map(str, levels))}"
        blocks, inner = levels[0], (levels[1] if len(levels) > 1 else None)

        # -- one server
        conn.execute("CREATE TABLE single (id bigint PRIMARY KEY, simhash bigint)")
        single = SimHashColumn(conn, "single", "simhash")
        t = time.perf_counter()
        with conn.cursor().copy("COPY single (id, simhash) FROM STDIN (FORMAT BINARY)") as copy:
            copy.set_types(["int8", "int8"])
            for i in range(n):
                copy.write_row((int(ids[i]), bits.to_db(int(fps[i]))))
        load = time.perf_counter() - t
        t = time.perf_counter()
        single.create(3, blocks, inner)
        conn.execute("VACUUM ANALYZE single")
        out["single_build_s"] = {"load": load, "index": time.perf_counter() - t}
        out["single_bytes_per_row"] = conn.execute(
            "SELECT pg_total_relation_size('single') / %s::float8", [n]).fetchall()[0][0]

        # -- coordinator + 2 shards
        conn.execute("CREATE TABLE sharded (id bigint NOT NULL, simhash bigint) PARTITION BY HASH (id)")
        t = time.perf_counter()
        problems = create_shards(conn, "sharded", "simhash",
                                 [Shard(f"s{i + 1}", s.dsn("bench")) for i, s in enumerate(shard_servers)],
                                 k=3, blocks=blocks, inner_blocks=inner)
        assert problems == [], problems
        setup = time.perf_counter() - t
        t = time.perf_counter()
        step = 100_000
        for lo in range(0, n, step):
            conn.execute("INSERT INTO sharded (id, simhash) SELECT * FROM unnest(%s::bigint[], %s::bigint[])",
                         [ids[lo:lo + step].tolist(), fps[lo:lo + step].view(np.int64).tolist()])
        load = time.perf_counter() - t
        t = time.perf_counter()
        for server in shard_servers:
            with psycopg.connect(server.dsn("bench"), autocommit=True) as shard:
                shard.execute("VACUUM ANALYZE sharded")
        out["sharded_build_s"] = {"setup": setup, "load_through_coordinator": load,
                                  "vacuum_analyze": time.perf_counter() - t}
        size = 0
        for server in shard_servers:
            with psycopg.connect(server.dsn("bench")) as shard:
                size += shard.execute("SELECT pg_total_relation_size('sharded')").fetchall()[0][0]
        out["sharded_bytes_per_row"] = size / n

        # lookups on connections of their own, set up for them (SimHashColumn.connect,
        # configure_lookups: one generic plan per statement), as docs/python.md advises;
        # on a plain connection planning took 2.4 ms of a one-server lookup here
        single = SimHashColumn.connect(coord.dsn("bench"), "single", "simhash")
        lookups = psycopg.connect(coord.dsn("bench"), autocommit=True)
        configure_lookups(lookups)
        sharded = ShardedColumn(lookups, "sharded", "simhash", key_column="id")
        # answers: both against numpy for a sample, then against each other for all
        for q in queries[:50]:
            d = np.bitwise_count(fps ^ np.uint64(q))
            hit = sorted((int(ids[i]), int(d[i])) for i in np.nonzero(d <= 3)[0])
            assert sorted(single.near(q)) == hit == sorted(sharded.near(q)), q
        for name, lookup in (("single", single.near), ("sharded", sharded.near)):
            for q in queries[:200]:  # warm the caches
                lookup(q)
            out[f"{name}_near"] = time_lookups(lookup, queries)
        for name, make in (("single", lambda: SimHashColumn.connect(coord.dsn("bench"), "single", "simhash").near),
                           ("sharded", lambda: _sharded_lookup(coord.dsn("bench")))):
            out[f"{name}_lookups_per_s_{args.clients}_clients"] = throughput(make, queries, args.clients,
                                                                             args.seconds)
        batch = queries[:1000]
        for name, many in (("single", single.near_many), ("sharded", sharded.near_many)):
            t = time.perf_counter()
            answers = [many(batch[i:i + 100]) for i in range(0, len(batch), 100)]
            out[f"{name}_near_many_100"] = {"ms_per_lookup": (time.perf_counter() - t) / len(batch) * 1e3}
            out[f"{name}_answers"] = answers
        assert out.pop("single_answers") == out.pop("sharded_answers")
        for name, index in (("single", single), ("sharded", sharded)):
            t = time.perf_counter()
            pairs = sum(1 for _ in index.pairs(3))
            out[f"{name}_pairs"] = {"s": time.perf_counter() - t, "pairs": pairs}
        assert out["single_pairs"]["pairs"] == out["sharded_pairs"]["pairs"]
        single.close()
        lookups.close()
        plan = [r[0] for r in conn.execute(
            "EXPLAIN (ANALYZE, VERBOSE, COSTS OFF) " + conn.execute(
                "SELECT simpg.near_query('sharded', %s, 3)", [bits.to_db(queries[0])]).fetchall()[0][0])]
        out["sharded_plan"] = plan
    for server in started:
        for stop in server._stop:
            stop()  # type: ignore[operator]

    def ratio(a: float, b: float) -> str:
        return f"{b / a:.2f}x"

    s, c = out["single_near"], out["sharded_near"]
    rows = [
        ("lookup p50 (ms)", f"{s['p50_ms']:.3f}", f"{c['p50_ms']:.3f}", ratio(s["p50_ms"], c["p50_ms"])),
        ("lookup p99 (ms)", f"{s['p99_ms']:.3f}", f"{c['p99_ms']:.3f}", ratio(s["p99_ms"], c["p99_ms"])),
        ("lookups/s, 1 client", f"{s['lookups_per_s']:.0f}", f"{c['lookups_per_s']:.0f}",
         ratio(s["lookups_per_s"], c["lookups_per_s"])),
        (f"lookups/s, {args.clients} clients", f"{out[f'single_lookups_per_s_{args.clients}_clients']:.0f}",
         f"{out[f'sharded_lookups_per_s_{args.clients}_clients']:.0f}",
         ratio(out[f"single_lookups_per_s_{args.clients}_clients"],
               out[f"sharded_lookups_per_s_{args.clients}_clients"])),
        ("near_many(100), ms per lookup", f"{out['single_near_many_100']['ms_per_lookup']:.3f}",
         f"{out['sharded_near_many_100']['ms_per_lookup']:.3f}",
         ratio(out["single_near_many_100"]["ms_per_lookup"], out["sharded_near_many_100"]["ms_per_lookup"])),
        ("build: load + index (s)", f"{sum(out['single_build_s'].values()):.1f}",
         f"{sum(out['sharded_build_s'].values()):.1f}",
         ratio(sum(out["single_build_s"].values()), sum(out["sharded_build_s"].values()))),
        ("bytes per row (table + indexes)", f"{out['single_bytes_per_row']:.1f}",
         f"{out['sharded_bytes_per_row']:.1f}", ratio(out["single_bytes_per_row"], out["sharded_bytes_per_row"])),
        ("pairs within 3 (s)", f"{out['single_pairs']['s']:.2f}", f"{out['sharded_pairs']['s']:.2f}",
         ratio(out["single_pairs"]["s"], out["sharded_pairs"]["s"])),
    ]
    print(f"{n:,} rows, layout {out['layout']}, {args.queries} lookups; sharded / single in the last column")
    print(f"| {'':32} | one server | coordinator + 2 shards | ratio |")
    for row in rows:
        print(f"| {row[0]:32} | {row[1]:>10} | {row[2]:>22} | {row[3]:>5} |")
    print("build detail:", json.dumps({"single": out["single_build_s"], "sharded": out["sharded_build_s"]}))
    print("pairs:", out["single_pairs"]["pairs"])
    if args.json:
        args.json.write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
