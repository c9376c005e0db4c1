"""The SQL reports with and without the confirming sketch, side by side in one run (issue 14 item 5).

For each table size: uniform random 64-bit fingerprints plus 1% near copies (1 to 3 bits
flipped) and 0.1% exact copies, as bench/sql_pairs.py makes them; every row has a random
``sketch bit(256)`` and four random band keys (``sketch_b0`` .. ``_b3``, a B-tree each),
except that half the copies keep their source's sketch with one bit flipped (confirmed)
and share its band 0 key. Then, on the same server and data, the best of ``--repeat``
runs of:

* ``simpg.pairs(t, k)``, ``simpg.pairs(t, k, sketch_column => 'sketch')`` and the same
  ``bands => true``;
* ``simpg.clusters(t, k)`` and ``simpg.clusters(t, k, sketch_column => 'sketch')``.

It prints the times, the pairs each found, and each sketch variant's time as a ratio of
its fingerprint-only one. The confirmed pairs are checked to be a subset of the pairs
within k plus the band pairs before it reports.

Usage:
    python bench/pairs_sketch.py --rows 100000 1000000     # starts bench/pgserver.py's server
    python bench/pairs_sketch.py --rows 100000 --dsn "host=... dbname=..."
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any

import psycopg

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

TABLE = "simpg_bench_sketch_pairs"
RANDOM_SKETCH = "('x' || md5(random()::text) || md5(random()::text))::bit(256)"
RANDOM_KEY = "((random() * 4294967296)::bigint << 31) # (random() * 4294967296)::bigint"


def load(conn: psycopg.Connection, rows: int, k: int) -> None:
    conn.execute(f"DROP TABLE IF EXISTS {TABLE}")
    conn.execute(f"CREATE TABLE {TABLE} (id bigint PRIMARY KEY, fp bigint, sketch bit(256), "
                 "sketch_b0 bigint, sketch_b1 bigint, sketch_b2 bigint, sketch_b3 bigint)")
    conn.execute("SELECT setseed(0.17)")
    base = rows - rows // 100 - rows // 1000
    conn.execute(
        f"INSERT INTO {TABLE} SELECT g, ((random() * 4294967296)::bigint << 32) # (random() * 4294967296)::bigint, "
        f"{RANDOM_SKETCH}, {RANDOM_KEY}, {RANDOM_KEY}, {RANDOM_KEY}, {RANDOM_KEY} "
        f"FROM generate_series(1, {base}) AS g")
    # near copies (1 to 3 bits flipped), then exact copies; even ones keep the source's
    # sketch but one bit and its band 0 key
    for first, count, flips in ((base, rows // 100, True), (base + rows // 100, rows // 1000, False)):
        near = ("# (1::bigint << (g % 64)) # CASE WHEN g % 3 > 0 THEN 1::bigint << ((g * 7) % 64) ELSE 0 END "
                "# CASE WHEN g % 3 > 1 THEN 1::bigint << ((g * 13) % 64) ELSE 0 END") if flips else ""
        conn.execute(
            f"INSERT INTO {TABLE} SELECT {first} + g, t.fp {near}, "
            f"CASE WHEN g % 2 = 0 THEN t.sketch # ((B'1' || repeat('0', 255)::bit(255))::bit(256) >> (g % 256)) "
            f"ELSE {RANDOM_SKETCH} END, CASE WHEN g % 2 = 0 THEN t.sketch_b0 ELSE {RANDOM_KEY} END, "
            f"{RANDOM_KEY}, {RANDOM_KEY}, {RANDOM_KEY} "
            f"FROM generate_series(1, {count}) AS g JOIN {TABLE} AS t ON t.id = g * 37 % {base} + 1")
    for i in range(4):
        conn.execute(f"CREATE INDEX ON {TABLE} (sketch_b{i})")
    conn.execute(f"SELECT simpg.create_index('{TABLE}', 'fp', {k})")
    conn.execute(f"VACUUM ANALYZE {TABLE}")


def best(conn: psycopg.Connection, statement: str, repeat: int) -> tuple[float, Any]:
    times, result = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        result = conn.execute(statement).fetchall()
        times.append(time.perf_counter() - start)
    return min(times), result


def run(dsn: str, rows: int, k: int, repeat: int) -> dict[str, Any]:
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.add_notice_handler(lambda _: None)  # the per-pass progress NOTICEs
        load(conn, rows, k)
        sketch = "sketch_column => 'sketch'"
        variants = {
            "pairs": f"SELECT key_a, key_b, distance FROM simpg.pairs('{TABLE}', {k})",
            "pairs_sketch": f"SELECT key_a, key_b, distance FROM simpg.pairs('{TABLE}', {k}, {sketch})",
            "pairs_sketch_bands": f"SELECT key_a, key_b, distance FROM simpg.pairs('{TABLE}', {k}, {sketch}, "
                                  "bands => true)",
            "clusters": f"SELECT cluster_id, key FROM simpg.clusters('{TABLE}', {k})",
            "clusters_sketch": f"SELECT cluster_id, key FROM simpg.clusters('{TABLE}', {k}, {sketch})",
        }
        seconds, found = {}, {}
        for name, statement in variants.items():
            seconds[name], found[name] = best(conn, statement, repeat)
        within = {(a, b) for a, b, _ in found["pairs"]}
        confirmed = {(a, b) for a, b, _ in found["pairs_sketch"]}
        banded = {(a, b) for a, b, _ in found["pairs_sketch_bands"]}
        assert confirmed <= within and confirmed <= banded and confirmed, "the confirmed pairs are not a subset"
        return {
            "rows": rows, "k": k,
            "seconds": {name: round(s, 3) for name, s in seconds.items()},
            "pairs": {name: len(found[name]) for name in ("pairs", "pairs_sketch", "pairs_sketch_bands")},
            "rows_in_clusters": {name: len(found[name]) for name in ("clusters", "clusters_sketch")},
            "ratio": {name: round(seconds[name] / seconds[plain], 2)
                      for name, plain in (("pairs_sketch", "pairs"), ("pairs_sketch_bands", "pairs"),
                                          ("clusters_sketch", "clusters"))},
        }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[100_000])
    parser.add_argument("-k", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--dsn", default=os.environ.get("SIMPG_DSN"),
                        help="default: $SIMPG_DSN, else a server from bench/pgserver.py")
    args = parser.parse_args(argv)
    server = None
    dsn = args.dsn
    if not dsn:
        from bench import pgserver
        from simpg import schema

        server = pgserver.start()
        schema.install_extension_files(sharedir=server.sharedir)
        dsn = server.dsn()
        with psycopg.connect(dsn, autocommit=True) as conn:
            schema.install(conn)
    try:
        results = [run(dsn, rows, args.k, args.repeat) for rows in args.rows]
    finally:
        for stop in server._stop if server is not None else []:
            stop()  # type: ignore[operator]
    print(json.dumps({"load_average": os.getloadavg(), "results": results}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
