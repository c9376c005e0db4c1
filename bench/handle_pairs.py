"""The psycopg handle's sketch-confirmed pairs and clusters: SQL report against in-memory decision, in one run.

``SimHashColumn.pairs(k, sketch_column=...)`` and ``.clusters(...)`` used to run the SQL
report (``simpg.pairs`` / ``simpg.clusters`` with the sketch arguments, band keys on by
default) and read its rows; now they read ``(id, fingerprint, sketch, band keys)`` once
and decide with ``simpg.allpairs.decide`` (issue 29). This times both on the same table,
rounds interleaved (old, new, then new, old, ...) so the machine's noise hits both alike,
and checks that both give the same pairs (in the same order) and the same clusters.

The table is bench/pairs_sketch.py's: uniform random fingerprints plus 1% near copies and
0.1% exact copies, a random ``sketch bit(256)`` and four random band keys per row, half the
copies confirmed (their source's sketch but one bit, its band 0 key).

Usage:
    python bench/handle_pairs.py --rows 200000 --rounds 3     # a private embedded server
    python bench/handle_pairs.py --rows 200000 --dsn "host=... dbname=..."
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

import psycopg

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from bench.pairs_sketch import TABLE, load  # noqa: E402
from simpg.psycopg import SimHashColumn  # noqa: E402


def old_pairs(conn: psycopg.Connection, k: int) -> list[tuple[Any, ...]]:
    """What the handle ran before: the SQL report, ordered."""
    return conn.execute(f"SELECT * FROM simpg.pairs('{TABLE}', {k}, sketch_column => 'sketch') "
                        "ORDER BY key_a, key_b").fetchall()


def old_clusters(conn: psycopg.Connection, k: int) -> list[list[Any]]:
    """What the handle ran before: the SQL report, grouped as the handle grouped it."""
    groups: dict[Any, list[Any]] = {}
    for cluster_id, key, _ in conn.execute(f"SELECT * FROM simpg.clusters('{TABLE}', {k}, sketch_column => 'sketch') "
                                           "ORDER BY cluster_id, key"):
        groups.setdefault(cluster_id, []).append(key)
    return sorted(groups.values(), key=len, reverse=True)


def timed(run: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    result = run()
    return time.perf_counter() - start, result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("-k", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--dsn", help="a database with simpg installed (default: a private embedded server)")
    args = parser.parse_args(argv)
    if args.dsn:
        dsn = args.dsn
    else:
        os.environ.setdefault("SIMPG_HOME", tempfile.mkdtemp(prefix="simpg-bench-"))
        from simpg.embedded import embedded_dsn

        dsn = embedded_dsn()
    k = args.k
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.add_notice_handler(lambda _: None)  # the reports' per-pass progress NOTICEs
        load(conn, args.rows, k)
        index = SimHashColumn(conn, TABLE, "fp")
        variants: dict[str, Callable[[], Any]] = {
            "pairs: SQL report (before)": lambda: old_pairs(conn, k),
            "pairs: in memory (now)": lambda: [tuple(p) for p in index.pairs(k, sketch_column="sketch")],
            "clusters: SQL report (before)": lambda: old_clusters(conn, k),
            "clusters: in memory (now)": lambda: index.clusters(k, sketch_column="sketch"),
        }
        seconds: dict[str, list[float]] = {name: [] for name in variants}
        found: dict[str, Any] = {}
        for r in range(args.rounds):
            for name in list(variants) if r % 2 == 0 else list(reversed(variants)):
                took, found[name] = timed(variants[name])
                seconds[name].append(took)
                print(f"round {r + 1}: {name}: {took:.2f} s", file=sys.stderr)
        for what in ("pairs", "clusters"):
            assert found[f"{what}: SQL report (before)"] == found[f"{what}: in memory (now)"], f"{what} differ"
        conn.execute(f"DROP TABLE {TABLE}")
    rows = []
    for what in ("pairs", "clusters"):
        before = statistics.median(seconds[f"{what}: SQL report (before)"])
        now = statistics.median(seconds[f"{what}: in memory (now)"])
        size = len(found[f"{what}: in memory (now)"])
        rows.append({"what": what, "found": size, "before_s": round(before, 3), "now_s": round(now, 3),
                     "speedup": round(before / now, 1)})
    print(json.dumps({"rows": args.rows, "k": k, "rounds": args.rounds, "load_average": os.getloadavg(),
                      "medians": rows, "seconds": {n: [round(s, 3) for s in v] for n, v in seconds.items()}},
                     indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
