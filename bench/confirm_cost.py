"""What confirming with sketches costs online (issue 14 item 3): lookup time and bytes per row.

One run, one server, the same fingerprints (bench/generate.py, uniform with planted
neighbours) and the same queries, side by side:

* **today**: ``SimHashColumn.near(q)`` at k = 4 on the reference layout (6 blocks, 15 tables),
  no sketch column;
* **confirmed, same radius**: ``SimHashColumn.duplicates(q, sketch)`` at k = 4 on that layout,
  with a ``bit(256)`` sketch column (what bytes and time the confirmation adds);
* **confirmed, wider radius**: ``duplicates`` at k = 5, 6 (and more with ``--k``) on the
  planner's layout for that radius at this size, which is what buys recall (dedup's
  k = 7 is the quality target; docs/fingerprinting.md).

Lookups are interleaved round-robin over the variants (the machine's noise hits all of
them alike) and reported as p50 / p99 and the ratio to today's p50. Bytes per row are
measured with pg_relation_size / pg_indexes_size of each table (heap + every index).

Usage:
    python3 bench/confirm_cost.py --rows 1000000            # own server (~10 min)
    python3 bench/confirm_cost.py --rows 1000000 --k 5,6    # the radii to compare
    python3 bench/confirm_cost.py --dsn "host=... dbname=..."
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import psycopg

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

import generate  # noqa: E402
import pgserver  # noqa: E402

from simpg import planner, schema  # noqa: E402
from simpg.fingerprint.minhash import MAX_SKETCH_DISTANCE  # noqa: E402
from simpg.layout import Layout  # noqa: E402
from simpg.psycopg import SimHashColumn  # noqa: E402

M64 = (1 << 64) - 1


def say(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def build(conn: psycopg.Connection, name: str, fps: np.ndarray, sketches: np.ndarray | None,
          layout: Layout) -> dict[str, Any]:
    """A table of (id, fp[, sketch]) indexed with ``layout``; its bytes per row."""
    conn.execute(f"DROP TABLE IF EXISTS {name}")
    sketch_col = ", sketch bit(256)" if sketches is not None else ""
    conn.execute(f"CREATE TABLE {name} (id bigint PRIMARY KEY, fp bigint NOT NULL{sketch_col})")
    with conn.cursor().copy(f"COPY {name} FROM STDIN") as copy:
        for i, fp in enumerate(fps.tolist(), start=1):
            row: tuple[Any, ...] = (i, fp) if sketches is None else (i, fp, "x" + sketches[i - 1].tobytes().hex())
            copy.write_row(row)
    started = time.perf_counter()
    inner = f", inner_blocks => {layout.levels[1]}" if len(layout.levels) > 1 else ""
    conn.execute(f"SELECT simpg.create_index('{name}', 'fp', k => {layout.k}, blocks => {layout.levels[0]}{inner})")
    conn.execute(f"VACUUM ANALYZE {name}")
    heap, index = conn.execute("SELECT pg_relation_size(%s), pg_indexes_size(%s)", [name, name]).fetchone()
    n = len(fps)
    return {"table": name, "layout": layout.name, "tables": layout.tables,
            "build_seconds": time.perf_counter() - started, "heap_bytes_per_row": heap / n,
            "index_bytes_per_row": index / n, "bytes_per_row": (heap + index) / n}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--k", default="5,6", help="wider radii of confirmed lookups (default 5,6)")
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--dsn", help="use this server instead of starting one")
    args = parser.parse_args()
    n = args.rows
    data = generate.load(n, k=4, seed=1, queries=2000)
    rng = np.random.default_rng(14)
    sketches = rng.integers(0, 256, size=(n, 32), dtype=np.uint8)
    if args.dsn:
        dsn = args.dsn
    else:
        say("starting PostgreSQL 15")
        server = pgserver.start()
        schema.install_extension_files(sharedir=server.sharedir)
        dsn = server.dsn()
    conn = psycopg.connect(dsn, autocommit=True)
    schema.install(conn)
    today = Layout(4, (6,))
    variants: list[dict[str, Any]] = []
    say("today: k=4, 15 tables, no sketch column")
    variants.append({"name": "today: near k=4", "k": 4, "confirm": False,
                     **build(conn, "cost_today", data.fps, None, today)})
    say("confirmed at k=4, same layout, sketch column")
    variants.append({"name": "duplicates k=4", "k": 4, "confirm": True,
                     **build(conn, "cost_k4", data.fps, sketches, today)})
    for k in (int(x) for x in args.k.split(",")):
        layout = planner.recommend(k, n)
        say(f"confirmed at k={k}: {layout.name} ({layout.tables} tables)")
        variants.append({"name": f"duplicates k={k}", "k": k, "confirm": True,
                         **build(conn, f"cost_k{k}", data.fps, sketches, layout)})
    queries = [int(q) & M64 for q in data.queries[: args.queries]]
    query_sketches = [sketches[i % n].tobytes() for i in range(len(queries))]
    handles = [SimHashColumn.connect(dsn, v["table"], "fp", key_column="id") for v in variants]
    times: list[list[float]] = [[] for _ in variants]
    found = [0] * len(variants)
    say(f"{len(queries)} lookups x {args.rounds} rounds x {len(variants)} variants, interleaved")
    for v, h in zip(variants, handles, strict=True):  # warm up
        for q, s in zip(queries[:100], query_sketches, strict=False):
            h.duplicates(q, s, v["k"]) if v["confirm"] else h.near(q, v["k"])
    for _ in range(args.rounds):
        for q, s in zip(queries, query_sketches, strict=True):
            for x, (v, h) in enumerate(zip(variants, handles, strict=True)):
                started = time.perf_counter()
                got = h.duplicates(q, s, v["k"], max_sketch_distance=256) if v["confirm"] else h.near(q, v["k"])
                times[x].append(time.perf_counter() - started)
                found[x] += len(got)
    base_p50 = statistics.median(times[0])
    base_bytes = variants[0]["bytes_per_row"]
    lines = [f"# Confirming with sketches: cost per lookup and per row ({n:,} rows)", "",
             f"Command: `python3 bench/confirm_cost.py --rows {n} --k {args.k}`, {time.strftime('%Y-%m-%d %H:%M')}; "
             f"{len(queries)} queries x {args.rounds} rounds, interleaved; sketch limit 256 (every candidate's "
             f"sketch is compared; the default {MAX_SKETCH_DISTANCE} only drops rows).", "",
             "| variant | layout | tables | lookup p50 ms | p99 ms | p50 vs today | bytes/row | bytes vs today |",
             "|---|---|---:|---:|---:|---:|---:|---:|"]
    for v, t in zip(variants, times, strict=True):
        p50, p99 = statistics.median(t), float(np.percentile(t, 99))
        v.update(p50_ms=p50 * 1e3, p99_ms=p99 * 1e3, p50_ratio=p50 / base_p50,
                 bytes_ratio=v["bytes_per_row"] / base_bytes)
        lines.append(f"| {v['name']} | {v['layout']} | {v['tables']} | {p50 * 1e3:.3f} | {p99 * 1e3:.3f} | "
                     f"{p50 / base_p50:.2f}x | {v['bytes_per_row']:.0f} | {v['bytes_per_row'] / base_bytes:.2f}x |")
    print("\n".join(lines))
    out = HERE / "results" / f"confirm-cost-{n}.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps({"rows": n, "variants": variants}, indent=2))
    say(f"wrote {out}")


if __name__ == "__main__":
    main()
