"""Inserts/s with a near-duplicate check: the guard against a global lock and the racy way (issue 16).

One run, one server, one table of ``--rows`` fingerprints indexed at k=3, side by side:

* **racy**: look up (``simpg.near``-style prefix query), then insert if nothing is near:
  fast, and wrong under concurrency (tests/integration/test_guard.py shows the race);
* **global lock**: the same in a transaction that first takes one advisory lock for the
  whole table (examples/webapp before the guard): correct, one writer at a time;
* **guard**: a plain INSERT on the table with ``simpg.create_guard``: correct, writers
  wait only for writers of near fingerprints;
* **sketch guard**: the same with a ``bit(256)`` sketch and four band keys per row (a
  B-tree each) and ``create_guard(..., sketch_column => 'sketch', bands => true)``: the
  guard a web app should use (docs/guard.md); the last column compares it with **guard**.

Each mode runs with 1, 4 and 8 client threads (one connection each) for ``--seconds``,
inserting fresh random fingerprints (no conflicts: what is measured is the cost of the
check), and reports inserts/s, single-insert latency p50 and p99, and the ratios. The
modes alternate per client count so the machine's noise hits them alike.

Usage:
    python3 bench/guard_bench.py --rows 1000000 --dsn "$(cat /tmp/dev/dsn)"
    python3 bench/guard_bench.py --rows 100000 --seconds 5      # own server, quick
    python3 bench/guard_bench.py --embedded --rows 20000 --seconds 3   # PostgreSQL of the embedded wheel
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import psycopg

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

import pgserver  # noqa: E402

from simpg import bits, schema  # noqa: E402
from simpg.psycopg import SimHashColumn  # noqa: E402

K = 3
GLOBAL_LOCK = 814_160  # the advisory key of the "global lock" mode


def say(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


BANDS = [f"sketch_b{i}" for i in range(4)]


def setup(dsn: str, rows: int) -> None:
    """Four equal tables of ``rows`` random fingerprints, each with its simpg index (k=3); the
    sketch guard's also with random sketches and band keys."""
    rng = np.random.default_rng(16)
    fps = rng.integers(np.iinfo(np.int64).min, np.iinfo(np.int64).max, size=rows, dtype=np.int64).tolist()
    with psycopg.connect(dsn, autocommit=True) as conn:
        schema.install(conn)
        for table in ("bench_racy", "bench_lock", "bench_guard", "bench_sketch"):
            say(f"{table}: loading {rows:,} rows and indexing (k={K})")
            conn.execute(f"DROP TABLE IF EXISTS {table}")
            conn.execute(f"CREATE TABLE {table} (id bigint PRIMARY KEY, simhash bigint, sketch bit(256), "
                         + ", ".join(f"{b} bigint" for b in BANDS) + ")")
            with conn.cursor().copy(f"COPY {table} (id, simhash) FROM STDIN (FORMAT BINARY)") as copy:
                copy.set_types(["int8", "int8"])
                for i, fp in enumerate(fps, start=1):
                    copy.write_row((i, fp))
            conn.execute(f"SELECT simpg.create_index('{table}', 'simhash', {K})")
        # random sketches and band keys: no stored pair is confirmed, as with the fingerprints
        conn.execute("UPDATE bench_sketch SET sketch = ('x' || (SELECT string_agg(lpad(to_hex(floor(random() * "
                     "4294967296)::bigint), 8, '0'), '') FROM generate_series(1, 8) WHERE id IS NOT NULL))::bit(256), "
                     + ", ".join(f"{b} = floor((random() - 0.5) * 1.8e19)::bigint" for b in BANDS))
        for b in BANDS:
            conn.execute(f"CREATE INDEX ON bench_sketch ({b})")
        for table in ("bench_racy", "bench_lock", "bench_guard", "bench_sketch"):
            conn.execute(f"VACUUM ANALYZE {table}")
        conn.execute("SELECT simpg.create_guard('bench_guard', 'simhash')")
        conn.execute("SELECT simpg.create_guard('bench_sketch', 'simhash', sketch_column => 'sketch', bands => true)")


def run_mode(dsn: str, mode: str, clients: int, seconds: float, first_id: int) -> dict[str, Any]:
    table = {"racy": "bench_racy", "lock": "bench_lock", "guard": "bench_guard", "sketch guard": "bench_sketch"}[mode]
    latencies: list[list[float]] = [[] for _ in range(clients)]
    start = threading.Barrier(clients + 1)
    stop = threading.Event()
    errors: list[BaseException] = []

    def client(c: int) -> None:
        rng = random.Random(c * 7919 + first_id)
        try:
            with psycopg.connect(dsn, autocommit=True) as conn:
                index = SimHashColumn(conn, table, "simhash")
                n = 0
                start.wait()
                while not stop.is_set():
                    fp = rng.getrandbits(64)
                    id_ = first_id + c * 10_000_000 + n
                    n += 1
                    t0 = time.perf_counter()
                    if mode == "sketch guard":
                        sketch = "x" + rng.getrandbits(256).to_bytes(32, "big").hex()
                        conn.execute(f"INSERT INTO {table} (id, simhash, sketch, {', '.join(BANDS)}) "
                                     "VALUES (%s, %s, %s::bit(256), %s, %s, %s, %s)",
                                     [id_, bits.to_db(fp), sketch, *(rng.getrandbits(64) - 2**63 for _ in BANDS)])
                    elif mode == "guard":
                        conn.execute(f"INSERT INTO {table} (id, simhash) VALUES (%s, %s)", [id_, bits.to_db(fp)])
                    elif mode == "racy":
                        if not index.near(fp, K):
                            conn.execute(f"INSERT INTO {table} (id, simhash) VALUES (%s, %s)", [id_, bits.to_db(fp)])
                    else:
                        with conn.transaction():
                            conn.execute("SELECT pg_advisory_xact_lock(%s)", [GLOBAL_LOCK])
                            if not index.near(fp, K):
                                conn.execute(f"INSERT INTO {table} (id, simhash) VALUES (%s, %s)",
                                             [id_, bits.to_db(fp)])
                    latencies[c].append(time.perf_counter() - t0)
        except BaseException as err:  # noqa: BLE001 - reported below
            errors.append(err)

    threads = [threading.Thread(target=client, args=(c,)) for c in range(clients)]
    for t in threads:
        t.start()
    start.wait()
    time.sleep(seconds)
    stop.set()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    flat = [x for per in latencies for x in per]
    return {"mode": mode, "clients": clients, "inserts": len(flat), "inserts_per_s": len(flat) / seconds,
            "p50_ms": statistics.median(flat) * 1e3, "p99_ms": float(np.percentile(flat, 99)) * 1e3}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--clients", default="1,4,8")
    parser.add_argument("--dsn", help="use this server instead of starting one")
    parser.add_argument("--embedded", action="store_true",
                        help="start the embedded wheel's PostgreSQL instead of Debian's 15")
    args = parser.parse_args()
    if args.dsn:
        dsn = args.dsn
    elif args.embedded:
        say("starting the embedded PostgreSQL")
        dsn = pgserver.servers.start_embedded().dsn()
    else:
        say("starting PostgreSQL 15")
        server = pgserver.start()
        schema.install_extension_files(sharedir=server.sharedir)
        dsn = server.dsn()
    setup(dsn, args.rows)
    results = []
    first_id = 100_000_000
    for clients in (int(c) for c in args.clients.split(",")):
        for mode in ("racy", "lock", "guard", "sketch guard"):
            say(f"{mode}, {clients} client(s), {args.seconds:.0f} s")
            results.append(run_mode(dsn, mode, clients, args.seconds, first_id))
            first_id += 100_000_000
    with psycopg.connect(dsn) as conn:  # the guard kept its promise on what it stored
        pairs = conn.execute(f"SELECT count(*) FROM simpg.pairs('bench_guard', {K})").fetchone()
    lines = [f"# Writes with a near-duplicate check ({args.rows:,} rows, k={K})", "",
             f"Command: `python3 bench/guard_bench.py --rows {args.rows} --seconds {args.seconds:g}`, "
             f"{time.strftime('%Y-%m-%d %H:%M')}; fresh random fingerprints (no refusals); "
             f"pairs within k in the guarded table afterwards: {pairs[0] if pairs else '?'}.", "",
             "| clients | mode | inserts/s | p50 ms | p99 ms | guard vs this (inserts/s) | sketch guard vs this |",
             "|---:|---|---:|---:|---:|---:|---:|"]
    for r in results:
        guard, sketch = (next(x for x in results if x["clients"] == r["clients"] and x["mode"] == m)
                         for m in ("guard", "sketch guard"))
        lines.append(f"| {r['clients']} | {r['mode']} | {r['inserts_per_s']:,.0f} | {r['p50_ms']:.2f} | "
                     f"{r['p99_ms']:.2f} | {guard['inserts_per_s'] / r['inserts_per_s']:.2f}x | "
                     f"{sketch['inserts_per_s'] / r['inserts_per_s']:.2f}x |")
    print("\n".join(lines))
    out = HERE / "results" / f"guard-{args.rows}.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(results, indent=2))
    say(f"wrote {out}")


if __name__ == "__main__":
    main()
