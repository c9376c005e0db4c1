"""Where simpg.create_index spends its time, and what would make it faster or smaller.

A prototype for proposals, not product code: it replays the statements that
``simpg.create_index`` runs (one ALTER TABLE adding every stored generated prefix
column, which rewrites the table; one CREATE INDEX per table; ANALYZE) step by step
on a copy of the same table, then tries variants side by side:

* PostgreSQL's default maintenance_work_mem (64MB) instead of the bench's 1GB;
* no parallel index build workers (max_parallel_maintenance_workers = 0);
* the B-trees built from two connections at once (CREATE INDEX takes a SHARE lock,
  so two builds on one table do not block each other);
* expression indexes on ``simpg.permute(...)`` instead of stored columns (no rewrite,
  no heap bytes; queries must then use the same expression);
* columns generated as the trivial ``fp # t`` instead of ``simpg.permute(...)``, to
  price the permutation in the table rewrite;
* fillfactor 100 for the B-trees (smaller when built; page splits on later inserts).

Usage:
    python bench/build_profile.py --rows 1000000
    python bench/build_profile.py --rows 10000000 --layout 5
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from pathlib import Path

import psycopg

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

import generate  # noqa: E402
import pgserver  # noqa: E402
from index_bench import copy_rows, new_table, sizes  # noqa: E402

from simpg import planner, schema  # noqa: E402
from simpg.layout import Layout  # noqa: E402

BASE = "profile_base"


def fresh(conn: psycopg.Connection, name: str) -> None:
    conn.execute(f"DROP TABLE IF EXISTS {name}")
    conn.execute(f"CREATE TABLE {name} (LIKE {BASE} INCLUDING ALL)")
    conn.execute(f"INSERT INTO {name} SELECT * FROM {BASE}")
    conn.execute(f"VACUUM ANALYZE {name}")


def expr(layout: Layout, t: int) -> str:
    levels = "{" + ",".join(map(str, layout.levels)) + "}"
    return f"simpg.permute(fp, {layout.k}, '{levels}'::integer[], {t})"


def timed(conn: psycopg.Connection, sql: str) -> float:
    started = time.perf_counter()
    conn.execute(sql)
    return time.perf_counter() - started


def replay(
    conn: psycopg.Connection,
    name: str,
    layout: Layout,
    *,
    trivial: bool = False,
    fillfactor: int | None = None,
    connections: list[psycopg.Connection] | None = None,
) -> dict:
    """create_index's statements one by one; returns seconds per step and bytes per row."""
    n = conn.execute(f"SELECT count(*) FROM {name}").fetchone()[0]
    heap0, index0 = sizes(conn, name)
    adds = ", ".join(
        f"ADD COLUMN fp_p{t} bigint GENERATED ALWAYS AS ({f'fp # {t}' if trivial else expr(layout, t)}) STORED"
        for t in range(layout.tables)
    )
    started = time.perf_counter()
    steps = {"alter_rewrite": timed(conn, f"ALTER TABLE {name} {adds}")}
    with_ = f" WITH (fillfactor = {fillfactor})" if fillfactor else ""
    statements = [f"CREATE INDEX {name}_p{t} ON {name} (fp_p{t}){with_}" for t in range(layout.tables)]
    steps["create_indexes"] = _run_all(conn, statements, connections)
    steps["analyze"] = timed(conn, f"ANALYZE {name} ({', '.join(f'fp_p{t}' for t in range(layout.tables))})")
    total = time.perf_counter() - started
    heap1, index1 = sizes(conn, name)
    return {
        "seconds": total,
        "steps": steps,
        "heap_bytes_per_row": (heap1 - heap0) / n,
        "index_bytes_per_row": (index1 - index0) / n,
    }


def _run_all(conn: psycopg.Connection, statements: list[str], connections: list[psycopg.Connection] | None) -> float:
    started = time.perf_counter()
    if not connections:
        for sql in statements:
            conn.execute(sql)
    else:  # round-robin over the connections, one thread each

        def work(c: psycopg.Connection, mine: list[str]) -> None:
            for sql in mine:
                c.execute(sql)

        threads = [
            threading.Thread(target=work, args=(c, statements[i :: len(connections)]))
            for i, c in enumerate(connections)
        ]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
    return time.perf_counter() - started


def expression_indexes(conn: psycopg.Connection, name: str, layout: Layout) -> dict:
    n = conn.execute(f"SELECT count(*) FROM {name}").fetchone()[0]
    heap0, index0 = sizes(conn, name)
    started = time.perf_counter()
    for t in range(layout.tables):
        conn.execute(f"CREATE INDEX {name}_e{t} ON {name} (({expr(layout, t)}))")
    conn.execute(f"ANALYZE {name}")
    total = time.perf_counter() - started
    heap1, index1 = sizes(conn, name)
    return {
        "seconds": total,
        "steps": {"create_indexes": total},
        "heap_bytes_per_row": (heap1 - heap0) / n,
        "index_bytes_per_row": (index1 - index0) / n,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--k", type=int, default=3)
    parser.add_argument("--layout", help="blocks, e.g. 5 or 4x4 (default: the recommendation)")
    parser.add_argument("--dsn")
    parser.add_argument("--quick", action="store_true", help="only the step-by-step replay and expression indexes")
    args = parser.parse_args()
    n, k = args.rows, args.k
    layout = Layout(k, tuple(int(x) for x in args.layout.split("x"))) if args.layout else planner.recommend(k, n)
    data = generate.load(n, k=k)
    if args.dsn:
        dsn = args.dsn
    else:
        server = pgserver.start()
        schema.install_extension_files(sharedir=server.sharedir)
        dsn = server.dsn()
    conn = psycopg.connect(dsn, autocommit=True)
    schema.install(conn)
    new_table(conn, BASE)
    copy_rows(conn, BASE, data.fps)
    conn.execute(f"VACUUM ANALYZE {BASE}")

    results: dict[str, dict] = {}
    name = "profile_t"

    quick = {"replayed step by step (bench settings)", "expression indexes, no stored columns"}

    def variant(label: str, setup: list[str], run) -> None:  # type: ignore[no-untyped-def]
        if args.quick and label not in quick:
            return
        print(f"{label} ...", file=sys.stderr, flush=True)
        fresh(conn, name)
        for sql in setup:
            conn.execute(sql)
        results[label] = run()
        conn.execute("RESET ALL")

    variant(
        "simpg.create_index",
        [],
        lambda: {
            "seconds": timed(
                conn,
                f"SELECT simpg.create_index('{name}', 'fp', {k}, {layout.levels[0]}"
                f"{', ' + str(layout.levels[1]) if len(layout.levels) > 1 else ''})",
            )
        },
    )
    variant("replayed step by step (bench settings)", [], lambda: replay(conn, name, layout))
    variant(
        "maintenance_work_mem = 64MB (PostgreSQL default)",
        ["SET maintenance_work_mem = '64MB'"],
        lambda: replay(conn, name, layout),
    )
    variant(
        "max_parallel_maintenance_workers = 0",
        ["SET max_parallel_maintenance_workers = 0"],
        lambda: replay(conn, name, layout),
    )
    extra = psycopg.connect(dsn, autocommit=True)
    extra.execute("SET max_parallel_maintenance_workers = 0")
    conn.execute("SET max_parallel_maintenance_workers = 0")
    variant(
        "indexes from 2 connections, no parallel workers",
        ["SET max_parallel_maintenance_workers = 0"],
        lambda: replay(conn, name, layout, connections=[conn, extra]),
    )
    variant("B-tree fillfactor 100", [], lambda: replay(conn, name, layout, fillfactor=100))
    variant(
        "columns generated as fp # t (prices simpg.permute in the rewrite)",
        [],
        lambda: replay(conn, name, layout, trivial=True),
    )
    variant("expression indexes, no stored columns", [], lambda: expression_indexes(conn, name, layout))

    print(f"### build profile: {layout.name} ({layout.tables} tables), {n:,} rows\n")
    print("| variant | total s | alter/rewrite s | CREATE INDEX s (all) | analyze s | heap B/row | index B/row |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for label, r in results.items():
        st = r.get("steps", {})
        alter, build, analyze = (
            f"{st[key]:.1f}" if key in st else "" for key in ("alter_rewrite", "create_indexes", "analyze")
        )
        heap, index = (r.get(key, float("nan")) for key in ("heap_bytes_per_row", "index_bytes_per_row"))
        cells = [label, f"{r['seconds']:.1f}", alter, build, analyze, f"{heap:.1f}", f"{index:.1f}"]
        print("| " + " | ".join(cells) + " |")
    out = HERE / "results" / f"build-{n}.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps({"rows": n, "layout": layout.name, "results": results}, indent=2))


if __name__ == "__main__":
    main()
