"""Adding simpg to a big table: how long the application's writes stall, step by step.

Side by side on one table of --rows rows (default 1M, text ~250 bytes a row):

* the online path of ``simpg backfill`` (simpg.commands.backfill): add a nullable
  column, fill fingerprints in batches, then ALTER TABLE ADD the generated prefix
  columns (one rewrite), CREATE INDEX CONCURRENTLY each, ANALYZE, register;
* the one-shot ``SELECT simpg.create_index(...)`` on the same (already fingerprinted)
  table, which holds its ACCESS EXCLUSIVE lock through the rewrite, every index
  build and ANALYZE.

A probe thread meanwhile inserts one row and reads one row by key every 20 ms and
records its slowest round trip per phase: that is the stall an application sees.

    python bench/backfill_bench.py --rows 1000000
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
from pathlib import Path

import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench import pgserver  # noqa: E402
from simpg import schema  # noqa: E402
from simpg.commands.backfill import add_fingerprint_column, backfill_fingerprints, build_index  # noqa: E402


class Probe(threading.Thread):
    """Insert + point read every 20 ms; the slowest round trip per phase."""

    def __init__(self, dsn: str) -> None:
        super().__init__(daemon=True)
        self.dsn = dsn
        self.phase = "idle"
        self.worst: dict[str, float] = {}
        self.count: dict[str, int] = {}
        self.stop = threading.Event()

    def run(self) -> None:
        with psycopg.connect(self.dsn, autocommit=True) as conn:
            while not self.stop.is_set():
                phase = self.phase
                t = time.perf_counter()
                conn.execute(
                    "INSERT INTO items (body) VALUES ('probe row written during the migration')"
                )
                conn.execute("SELECT body FROM items WHERE id = 12345").fetchone()
                took = time.perf_counter() - t
                self.worst[phase] = max(self.worst.get(phase, 0.0), took)
                self.count[phase] = self.count.get(phase, 0) + 1
                time.sleep(0.02)


def timed(probe: Probe, phase: str, fn, *args, **kwargs):
    probe.phase = phase
    t = time.perf_counter()
    out = fn(*args, **kwargs)
    took = time.perf_counter() - t
    time.sleep(0.1)  # let the probe finish a round trip inside the phase
    probe.phase = "idle"
    return took, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--batch-size", type=int, default=5000)
    parser.add_argument("--dsn", help="superuser DSN of an existing server (default: start one)")
    args = parser.parse_args()

    admin = args.dsn or pgserver.start().dsn()
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute("DROP DATABASE IF EXISTS simpg_backfill_bench")
        conn.execute("CREATE DATABASE simpg_backfill_bench")
    info = psycopg.conninfo.conninfo_to_dict(admin)
    info["dbname"] = "simpg_backfill_bench"
    dsn = psycopg.conninfo.make_conninfo(**info)

    with psycopg.connect(dsn, autocommit=True) as conn:
        schema.install(conn)
        conn.execute("CREATE TABLE items (id bigserial PRIMARY KEY, body text)")
        conn.execute(
            "INSERT INTO items (body) SELECT 'item ' || g || ': ' || "
            "(SELECT string_agg(w, ' ') FROM (SELECT (ARRAY['alpha','beta','gamma','delta',"
            "'epsilon',"
            "'zeta','eta','theta','iota','kappa','lambda','mu'])[1 + (g * 7 + i * 13) %% 12] AS w "
            "FROM generate_series(1, 30) AS i) AS words) FROM generate_series(1, %s) AS g",
            (args.rows,),
        )
        conn.execute("VACUUM ANALYZE items")
        size = conn.execute("SELECT pg_size_pretty(pg_total_relation_size('items'))").fetchone()[0]
        probe = Probe(dsn)
        probe.start()
        results = []
        took, _ = timed(probe, "add column", add_fingerprint_column, conn, "items", "simhash")
        results.append(("add nullable bigint column", took))
        took, filled = timed(
            probe,
            "fill",
            backfill_fingerprints,
            conn,
            "items",
            "body",
            "simhash",
            batch_size=args.batch_size,
        )
        results.append(
            (f"fill fingerprints ({filled.rows:,} rows, batches of {args.batch_size:,})", took)
        )
        probe.phase = "index"
        index = build_index(conn, "items", "simhash", k=3, blocks=5)
        time.sleep(0.1)
        probe.phase = "idle"
        results.append(
            ("ALTER TABLE ADD 10 generated prefix columns (rewrite)", index.alter_seconds)
        )
        results.append(("CREATE INDEX CONCURRENTLY x 10", index.index_seconds))
        results.append(("ANALYZE + register_index", index.analyze_seconds))
        online_worst = {p: probe.worst.get(p, 0.0) for p in ("add column", "fill", "index")}

        conn.execute("SELECT simpg.drop_index('items', 'simhash')")
        conn.execute("VACUUM items")
        took, _ = timed(
            probe,
            "create_index",
            conn.execute,
            "SELECT simpg.create_index('items', 'simhash', k => 3, blocks => 5)",
        )
        one_shot = took
        probe.stop.set()
        probe.join()

    print(f"## Adding simpg to a big table ({args.rows:,} rows, {size})\n")
    print("| step (online path) | time (s) |")
    print("| --- | ---: |")
    for name, secs in results:
        print(f"| {name} | {secs:.2f} |")
    print(f"| one-shot `simpg.create_index` (k=3, 5 blocks) | {one_shot:.2f} |")
    print("\n| phase | slowest insert + read of a concurrent client (s) | probes |")
    print("| --- | ---: | ---: |")
    for phase in ("add column", "fill", "index", "create_index"):
        print(f"| {phase} | {probe.worst.get(phase, 0.0):.3f} | {probe.count.get(phase, 0)} |")
    worst_online = max(online_worst.values())
    print(
        f"\nslowest stall, online path: {worst_online:.2f} s (during the prefix-column ALTER); "
        f"one-shot create_index: {probe.worst.get('create_index', 0.0):.2f} s; "
        f"ratio {probe.worst.get('create_index', 0.0) / worst_online:.1f}x"
    )


if __name__ == "__main__":
    main()
