"""simpg.pairs on fingerprints whose bits are not uniform, side by side in one run.

Issue 13 item 9: the reports joined on the index's prefixes, which are nearly constant
when the fingerprints carry few random bits (32-bit values in a bigint column, a corpus
of one template), so a pass compared almost every pair of rows. simpg.pair_masks now
measures the data and joins on bits fitted to it. For each data set this script times:

  simpg.pairs        what users run (the plan simpg.pair_masks picks, its sampling included)
  layout plan        the same statement joined on the index layout's prefixes (0.2.0-dev)
  nested loop        every pair of rows compared once (only up to --brute-rows rows)
  python fitted      simpg.allpairs.pair_chunks in memory, passes fitted to the data
  python layout      the same over pairs_layout's tables (0.2.0-dev)

checks that all variants return the same pairs, and prints seconds and ratios. It also
prints the two unit costs the planner's constant c_row rests on: seconds per row hashed
into a pass (uniform data, where passes compare almost nothing) and seconds per pair
compared (the nested loop).

Usage:
    python bench/pairs_skew.py                     # Debian PostgreSQL 15 started here
    python bench/pairs_skew.py --dsn "host=... dbname=..."
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
from typing import Any

import numpy as np
import psycopg

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from simpg import allpairs, bits  # noqa: E402

# name -> (rows, bit positions that vary, counted from bit 0; the rest come from a fixed base)
DATASETS: dict[str, tuple[int, list[int]]] = {
    "uniform 64 bits": (100_000, list(range(64))),
    "32-bit values (the issue's case)": (20_000, list(range(32))),
    "24 random bits": (50_000, random.Random(2).sample(range(64), 24)),
    "template: 16 bits vary": (20_000, random.Random(3).sample(range(64), 16)),
}


def fingerprints(rows: int, free: list[int], seed: int) -> list[int]:
    rng = random.Random(seed)
    base = 0 if len(free) == 32 and free == list(range(32)) else rng.getrandbits(64)
    out = []
    for _ in range(rows):
        fp = base
        for b in free:
            if rng.random() < 0.5:
                fp ^= 1 << b
        out.append(fp)
    for i in range(rows // 100):  # near copies: 1 to 3 of the free bits flipped
        fp = out[i]
        for b in rng.sample(free, rng.randint(1, 3)):
            fp ^= 1 << b
        out.append(fp)
    return out


def timed(conn: psycopg.Connection, sql: str) -> tuple[float, tuple[int, int]]:
    start = time.perf_counter()
    count, checksum = conn.execute(
        f"SELECT count(*), coalesce(sum(hashint8(p.key_a) # hashint8(p.key_b)), 0) FROM ({sql}) AS p"
    ).fetchone()
    return time.perf_counter() - start, (count, checksum)


def layout_statement(conn: psycopg.Connection, table: str, k: int) -> tuple[str, int]:
    """The pair statement joined on the index layout's own prefixes."""
    masks, sql = conn.execute(
        """
        SELECT m, format('WITH r AS MATERIALIZED (SELECT t.id AS key, t.fp, %%s FROM %%s AS t '
                         'WHERE t.fp IS NOT NULL) %%s',
                         simpg.mask_select('fp', m), %s::regclass,
                         simpg.prefix_join('a.key AS key_a, b.key AS key_b, simpg.hamming(a.fp, b.fp) AS distance',
                                           cardinality(m), %s::integer, 'key'))
        FROM simpg.indexes AS i, simpg.layout_masks(i.k, i.levels) AS m
        WHERE i.indexed_table = %s::regclass
        """,
        [table, k, table],
    ).fetchone()
    return sql, len(masks)


def run(dsn: str, k: int, brute_rows: int, seed: int) -> list[dict[str, Any]]:
    results = []
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS simpg")
        conn.execute("SET jit = off")
        conn.execute("SET enable_mergejoin = off")
        for n, (name, (rows, free)) in enumerate(DATASETS.items()):
            table = f"simpg_bench_skew_{n}"
            print(f"{name}: loading {rows} rows", file=sys.stderr, flush=True)
            conn.execute(f"DROP TABLE IF EXISTS {table}")
            conn.execute(f"CREATE TABLE {table} (id bigint PRIMARY KEY, fp bigint)")
            fps = fingerprints(rows, free, seed + n)
            with conn.cursor().copy(f"COPY {table} (id, fp) FROM STDIN") as copy:
                for i, fp in enumerate(fps):
                    copy.write_row((i, bits.to_db(fp)))
            conn.execute(f"SELECT simpg.create_index('{table}', 'fp', %s)", [k])
            conn.execute(f"ANALYZE {table}")
            levels = conn.execute(
                "SELECT levels FROM simpg.indexes WHERE indexed_table = %s::regclass", [table]
            ).fetchone()[0]
            start = time.perf_counter()
            masks = conn.execute(
                "SELECT simpg.pair_masks(i, %s::integer) FROM simpg.indexes AS i WHERE indexed_table = %s::regclass",
                [k, table],
            ).fetchone()[0]
            plan_s = time.perf_counter() - start
            print(f"{name}: timing", file=sys.stderr, flush=True)
            seconds: dict[str, float] = {}
            answers: dict[str, tuple[int, int]] = {}
            seconds["simpg.pairs"], answers["simpg.pairs"] = timed(
                conn, f"SELECT * FROM simpg.pairs('{table}', {k})"
            )
            layout_sql, layout_passes = layout_statement(conn, table, k)
            seconds["layout plan"], answers["layout plan"] = timed(conn, layout_sql)
            total = rows + rows // 100
            if total <= brute_rows:
                seconds["nested loop"], answers["nested loop"] = timed(
                    conn,
                    f"SELECT a.id AS key_a, b.id AS key_b FROM {table} AS a JOIN {table} AS b "
                    f"ON a.id < b.id AND simpg.hamming(a.fp, b.fp) <= {k}",
                )
            values = np.array(fps, dtype=np.uint64)
            for variant, layout in (("python fitted", None), ("python layout", allpairs.pairs_layout(k, total))):
                start = time.perf_counter()
                count = sum(len(i) for i, _, _ in allpairs.pair_chunks(values, k, layout))
                seconds[variant] = time.perf_counter() - start
                if count != answers["simpg.pairs"][0]:
                    raise SystemExit(f"{name}: {variant} found {count} pairs, simpg.pairs {answers['simpg.pairs'][0]}")
            if len(set(answers.values())) != 1:
                raise SystemExit(f"{name}: the variants disagree: {answers}")
            results.append({
                "data": name, "rows": total, "k": k, "levels": levels,
                "pairs": answers["simpg.pairs"][0],
                "passes": {"simpg.pairs": len(masks), "layout plan": layout_passes},
                "pair_masks_seconds": plan_s, "seconds": seconds,
            })
            conn.execute(f"DROP TABLE {table}")
    return results


def report(results: list[dict[str, Any]]) -> str:
    lines = [
        "| data | rows | pairs | passes (pairs / layout) | simpg.pairs s | layout plan s | nested loop s "
        "| layout / pairs | nested loop / pairs | pair_masks s | python fitted s | python layout s |",
        "|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        s = r["seconds"]
        loop = s.get("nested loop")
        pairs_s = s["simpg.pairs"]
        lines.append(
            f"| {r['data']} | {r['rows']:,} | {r['pairs']:,} "
            f"| {r['passes']['simpg.pairs']} / {r['passes']['layout plan']} "
            f"| {s['simpg.pairs']:.2f} | {s['layout plan']:.2f} | {'-' if loop is None else f'{loop:.2f}'} "
            f"| {s['layout plan'] / s['simpg.pairs']:.1f}x "
            f"| {'-' if loop is None else f'{loop / pairs_s:.1f}x'} | {r['pair_masks_seconds']:.3f} "
            f"| {s['python fitted']:.3f} | {s['python layout']:.3f} |"
        )
    uniform = results[0]
    per_row = uniform["seconds"]["simpg.pairs"] / (uniform["rows"] * uniform["passes"]["simpg.pairs"])
    looped = [r for r in results if "nested loop" in r["seconds"]]
    lines.append("")
    lines.append(f"seconds per row hashed into a pass (uniform data): {per_row * 1e9:.0f} ns")
    if looped:
        r = looped[0]
        per_pair = r["seconds"]["nested loop"] / (r["rows"] * (r["rows"] - 1) / 2)
        lines.append(f"seconds per pair compared (nested loop, {r['data']}): {per_pair * 1e9:.0f} ns")
        lines.append(f"ratio (simpg.pair_masks's c_row): {per_row / per_pair:.1f}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dsn", default=os.environ.get("SIMPG_DSN"),
                        help="default: $SIMPG_DSN, else Debian's PostgreSQL 15 started for the run")
    parser.add_argument("--k", type=int, default=3)
    parser.add_argument("--brute-rows", type=int, default=25_000,
                        help="run the nested loop on data sets up to this many rows")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    if args.dsn:
        print(report(run(args.dsn, args.k, args.brute_rows, args.seed)))
        return 0
    from bench import pgserver
    from simpg import schema

    server = pgserver.start()
    schema.install_extension_files(sharedir=server.sharedir)
    print(report(run(server.dsn(), args.k, args.brute_rows, args.seed)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
