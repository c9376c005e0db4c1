"""SQL all-pairs reports against the Python engine, side by side in one run (issue 17).

For each table size: uniform random 64-bit fingerprints plus 1% near copies (1 to 3
bits flipped) and 0.1% exact copies, a simpg index built with
``simpg.create_index(t, 'fp', k)``, then, on the same server and data:

* ``simpg.pairs`` as the table's owner: candidates from the prefix B-trees (issue 17);
* ``simpg.pairs`` as a role that may read only ``id`` and ``fp``: the join over the
  whole table, a hash join per pass (what every caller got before issue 17);
* ``simpg.clusters`` (both methods) and ``simpg.duplicate_stats`` as the owner;
* the Python engine: ``SimHashColumn.pairs`` (reads ``(id, fp)`` and runs
  :mod:`simpg.allpairs`), ``SimHashColumn.clusters``, and the ``simpg find-all`` command on a
  file of the same fingerprints.

Every variant must find the same number of pairs; the script checks before it reports.

Usage:
    python bench/sql_pairs.py --rows 1000000            # starts bench/pgserver.py's server
    python bench/sql_pairs.py --rows 1000000 10000000 --dsn "host=... dbname=..."
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

import psycopg
from psycopg import sql

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

TABLE = "simpg_bench_pairs"
ROLE = "simpg_bench_reader"


def load(conn: psycopg.Connection, rows: int, k: int) -> None:
    """The table: rows uniform fingerprints, 1% near copies, 0.1% exact copies."""
    conn.execute(f"DROP TABLE IF EXISTS {TABLE}")
    conn.execute(f"CREATE TABLE {TABLE} (id bigint PRIMARY KEY, fp bigint)")
    conn.execute("SELECT setseed(0.17)")
    base = rows - rows // 100 - rows // 1000
    conn.execute(
        f"INSERT INTO {TABLE} SELECT g, ((random() * 4294967296)::bigint << 32) "
        f"# (random() * 4294967296)::bigint FROM generate_series(1, {base}) AS g"
    )
    # near copies: 1 to 3 of the 64 bits flipped; exact copies
    conn.execute(
        f"INSERT INTO {TABLE} SELECT {base} + g, t.fp # (1::bigint << (g % 64)) "
        f"# CASE WHEN g % 3 > 0 THEN 1::bigint << ((g * 7) % 64) ELSE 0 END "
        f"# CASE WHEN g % 3 > 1 THEN 1::bigint << ((g * 13) % 64) ELSE 0 END "
        f"FROM generate_series(1, {rows // 100}) AS g JOIN {TABLE} AS t ON t.id = g * 37 % {base} + 1"
    )
    conn.execute(
        f"INSERT INTO {TABLE} SELECT {base} + {rows // 100} + g, t.fp "
        f"FROM generate_series(1, {rows // 1000}) AS g JOIN {TABLE} AS t ON t.id = g * 53 % {base} + 1"
    )
    conn.execute(f"SELECT simpg.create_index('{TABLE}', 'fp', %s)", [k])
    conn.execute(f"VACUUM ANALYZE {TABLE}")


def best(fn: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    """Best wall time of repeat calls of fn, and its last result."""
    seconds = float("inf")
    result = None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        seconds = min(seconds, time.perf_counter() - start)
    return seconds, result


def scalar(conn: psycopg.Connection, query: str) -> Any:
    row = conn.execute(query).fetchone()
    return row[0] if row else None


def run(dsn: str, rows: int, k: int, repeat: int) -> dict[str, Any]:
    from simpg import bits
    from simpg.psycopg import SimHashColumn

    with psycopg.connect(dsn, autocommit=True) as conn:
        start = time.perf_counter()
        load(conn, rows, k)
        load_s = time.perf_counter() - start
        conn.execute(f"DROP ROLE IF EXISTS {ROLE}")
        conn.execute(f"CREATE ROLE {ROLE} LOGIN")
        conn.execute(f"GRANT SELECT (id, fp) ON {TABLE} TO {ROLE}")
        levels = scalar(conn, f"SELECT levels FROM simpg.indexes WHERE indexed_table = '{TABLE}'::regclass")
        count = f"SELECT count(*) FROM simpg.pairs('{TABLE}', {k})"
        seconds: dict[str, float] = {}
        seconds["simpg.pairs (B-tree candidates)"], sql_pairs = best(lambda: scalar(conn, count), repeat)
        with conn.transaction():
            conn.execute(sql.SQL("SET LOCAL ROLE {}").format(sql.Identifier(ROLE)))
            seconds["simpg.pairs (whole-table hash joins, before)"], old_pairs = best(
                lambda: scalar(conn, count), repeat)
        seconds["simpg.clusters (representative)"], clustered = best(
            lambda: scalar(conn, f"SELECT count(*) FROM simpg.clusters('{TABLE}', {k})"), repeat)
        seconds["simpg.clusters (components)"], _ = best(
            lambda: scalar(conn, f"SELECT count(*) FROM simpg.clusters('{TABLE}', {k}, method => 'components')"),
            repeat)
        seconds["simpg.duplicate_stats"], stats = best(
            lambda: conn.execute(f"SELECT * FROM simpg.duplicate_stats('{TABLE}', {k})").fetchone(), repeat)

        index = SimHashColumn(conn, TABLE, "fp")
        seconds["SimHashColumn.pairs (Python engine)"], py_pairs = best(
            lambda: sum(1 for _ in index.pairs(k)), repeat)
        seconds["SimHashColumn.clusters (Python engine)"], py_clusters = best(
            lambda: sum(len(c) for c in index.clusters(k)), repeat)
        fps = [bits.from_db(fp) for (fp,) in conn.execute(f"SELECT fp FROM {TABLE} ORDER BY id")]
        conn.execute(f"DROP TABLE {TABLE}")
        conn.execute(f"DROP ROLE {ROLE}")

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "fps.txt")
        with open(path, "w") as f:
            f.writelines(f"{fp}\n" for fp in fps)
        out = os.path.join(tmp, "pairs.txt")
        command = [sys.executable, "-m", "simpg", "find-all", "-d", str(k), "-i", path, "-o", out]
        seconds["simpg find-all (file to file)"], _ = best(
            lambda: subprocess.run(command, check=True, cwd=ROOT), repeat)
        with open(out) as f:
            cli_pairs = sum(1 for _ in f)

    # find-all prints each pair of distinct fingerprints once; the reports count rows
    assert sql_pairs == old_pairs == py_pairs, (sql_pairs, old_pairs, py_pairs)
    assert clustered == py_clusters, (clustered, py_clusters)
    pairs_s = seconds["simpg.pairs (B-tree candidates)"]
    return {
        "rows": rows,
        "k": k,
        "levels": levels,
        "pairs": sql_pairs,
        "find_all_lines": cli_pairs,
        "clustered_rows": clustered,
        "duplicate_stats": list(stats),
        "load_and_index_seconds": load_s,
        "seconds": seconds,
        "ratios": {
            "pairs: before / B-tree": seconds["simpg.pairs (whole-table hash joins, before)"] / pairs_s,
            "pairs: SQL / SimHashColumn.pairs": pairs_s / seconds["SimHashColumn.pairs (Python engine)"],
            "pairs: SQL / find-all": pairs_s / seconds["simpg find-all (file to file)"],
            "clusters (representative) / pairs": seconds["simpg.clusters (representative)"] / pairs_s,
            "clusters (components) / pairs": seconds["simpg.clusters (components)"] / pairs_s,
            "clusters: SQL / SimHashColumn.clusters": seconds["simpg.clusters (representative)"]
            / seconds["SimHashColumn.clusters (Python engine)"],
        },
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--dsn", default=os.environ.get("SIMPG_DSN"),
                        help="default: $SIMPG_DSN, else a server from bench/pgserver.py")
    parser.add_argument("--rows", type=int, nargs="+", default=[1_000_000])
    parser.add_argument("--k", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=2, help="runs per variant; the best counts")
    parser.add_argument("--json", action="store_true")
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
        with psycopg.connect(dsn, autocommit=True) as conn:
            version = scalar(conn, "SHOW server_version")
            work_mem = scalar(conn, "SHOW work_mem")
        results = [run(dsn, rows, args.k, args.repeat) for rows in args.rows]
    finally:
        for stop in server._stop if server is not None else []:
            stop()  # type: ignore[operator]
    if args.json:
        print(json.dumps({"server_version": version, "work_mem": work_mem, "results": results}, indent=2))
        return 0
    print(f"PostgreSQL {version}, work_mem {work_mem}")
    for result in results:
        print(f"\n{result['rows']:,} rows, k={result['k']}, levels={result['levels']}: "
              f"{result['pairs']:,} pairs, {result['clustered_rows']:,} rows in clusters")
        print("| variant | seconds |\n|---|---:|")
        for name, seconds in result["seconds"].items():
            print(f"| {name} | {seconds:.2f} |")
        for name, ratio in result["ratios"].items():
            print(f"{name}: {ratio:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
