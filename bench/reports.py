"""Side-by-side timings of the SQL report functions' design choices, in one run.

1. simpg.pairs: one equal-prefix self-join per table as a hash join (what the function
   does: SET enable_mergejoin = off, jit = off) against the planner's own choice (a
   merge join, JIT on) for the very same statement (simpg.pairs_query).
2. Connected components: simpg.fingerprint_clusters (union-find in PL/pgSQL over the
   pairs of distinct fingerprints) against a recursive CTE computing the same
   components (reachability over the pairs, smallest member as the label).

Both variants must give identical answers; the script checks that before it reports.

Usage:
    python bench/reports.py --dsn "host=... dbname=..." --rows 100000
    python bench/reports.py --rows 100000 --json     # embedded server

Data: random 64-bit fingerprints, plus near copies (1 to 3 bits flipped) of 10% of them
and chains of copies (each 1-2 bits from the previous), so clusters have 2 to 8 members;
--chain N adds one cluster of N rows, where a recursive CTE's reachability grows as N^2.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from typing import Any

import psycopg

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from simpg import bits  # noqa: E402

RECURSIVE_COMPONENTS = """
WITH RECURSIVE p AS MATERIALIZED ({pairs}),
e AS (SELECT key_a AS a, key_b AS b FROM p UNION ALL SELECT key_b, key_a FROM p),
reach(src, dst) AS (
    SELECT a, a FROM e
    UNION
    SELECT r.src, e.b FROM reach AS r JOIN e ON e.a = r.dst
)
SELECT src, min(dst) FROM reach GROUP BY src
"""


def make_data(rows: int, seed: int, chain: int = 0) -> list[int]:
    rng = random.Random(seed)
    fps = [rng.getrandbits(64) for _ in range(int(rows * 0.85) - chain)]
    fp = rng.getrandbits(64)
    for _ in range(chain):  # one long chain: a single cluster of `chain` rows
        fp ^= 1 << rng.randrange(64)
        fps.append(fp)
    while len(fps) < rows:
        fp = fps[rng.randrange(len(fps))]
        for _ in range(rng.choice([1, 1, 1, 2, 4])):  # a copy, or a short chain of copies
            for p in rng.sample(range(64), rng.randint(1, 2)):
                fp ^= 1 << p
            fps.append(fp)
    return fps[:rows]


def timed(
    conn: psycopg.Connection, query: str, settings: dict[str, str], repeat: int
) -> tuple[float, list[Any]]:
    """Best wall time of repeat runs of query under the given settings, and its rows."""
    best = float("inf")
    rows: list[Any] = []
    for _ in range(repeat):
        with conn.transaction():
            for name, value in settings.items():
                conn.execute(f"SET LOCAL {name} = {value}")
            start = time.perf_counter()
            rows = conn.execute(query).fetchall()
            best = min(best, time.perf_counter() - start)
    return best, rows


def run(dsn: str, rows: int, k: int, seed: int, repeat: int, chain: int = 0) -> dict[str, Any]:
    fps = make_data(rows, seed, chain)
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("DROP TABLE IF EXISTS simpg_bench_reports")
        conn.execute("CREATE TABLE simpg_bench_reports (id bigint PRIMARY KEY, simhash bigint)")
        with conn.cursor().copy("COPY simpg_bench_reports FROM STDIN") as copy:
            for i, fp in enumerate(fps, 1):
                copy.write_row((i, bits.to_db(fp)))
        conn.execute("SELECT simpg.create_index('simpg_bench_reports', 'simhash', %s)", [k])
        conn.execute("VACUUM ANALYZE simpg_bench_reports")
        layout = conn.execute("SELECT levels FROM simpg.indexes").fetchone()[0]
        pairs_sql = conn.execute(
            "SELECT simpg.pairs_query('simpg_bench_reports', %s)", [k]
        ).fetchone()[0]

        hash_s, hash_rows = timed(
            conn, pairs_sql, {"enable_mergejoin": "off", "jit": "off"}, repeat
        )
        plan_s, plan_rows = timed(conn, pairs_sql, {}, repeat)
        func_s, func_rows = timed(
            conn, f"SELECT * FROM simpg.pairs('simpg_bench_reports', {k})", {}, repeat
        )
        assert sorted(hash_rows) == sorted(plan_rows) == sorted(func_rows)

        uf_s, uf_rows = timed(
            conn,
            f"SELECT * FROM simpg.fingerprint_clusters('simpg_bench_reports', {k})",
            {},
            repeat,
        )
        # the CTE labels rows by key; map the union-find's fingerprint labels to rows to compare
        cte_s, cte_rows = timed(
            conn, RECURSIVE_COMPONENTS.format(pairs=pairs_sql), {"jit": "off"}, repeat
        )
        clusters_s, clusters_rows = timed(
            conn, f"SELECT * FROM simpg.clusters('simpg_bench_reports', {k}, method => 'components')", {}, repeat
        )
        reps_s, reps_rows = timed(
            conn, f"SELECT * FROM simpg.clusters('simpg_bench_reports', {k})", {}, repeat
        )
        stats_s, stats = timed(
            conn, f"SELECT * FROM simpg.duplicate_stats('simpg_bench_reports', {k})", {}, repeat
        )
        conn.execute("DROP TABLE simpg_bench_reports")

    by_key_cte = {src: label for src, label in cte_rows}
    by_key_sql = {key: cid for cid, key, _ in clusters_rows}
    assert by_key_cte == by_key_sql, "recursive CTE and simpg.clusters disagree"
    return {
        "rows": rows,
        "k": k,
        "levels": layout,
        "chain": chain,
        "pairs": len(func_rows),
        "clustered_rows": len(clusters_rows),
        "clustered_rows_representative": len(reps_rows),
        "distinct_fingerprints_clustered": len(uf_rows),
        "duplicate_stats": list(stats[0]),
        "seconds": {
            "pairs_hash_join": hash_s,
            "pairs_planner_choice": plan_s,
            "simpg.pairs": func_s,
            "components_union_find": uf_s,
            "components_recursive_cte": cte_s,
            "simpg.clusters (components)": clusters_s,
            "simpg.clusters (representative, the default)": reps_s,
            "simpg.duplicate_stats": stats_s,
        },
        "ratios": {
            "planner_choice / hash_join": plan_s / hash_s,
            "recursive_cte / union_find": cte_s / uf_s,
        },
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--dsn", default=os.environ.get("SIMPG_DSN"), help="default: $SIMPG_DSN, else embedded"
    )
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--k", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=3, help="runs per variant; the best counts")
    parser.add_argument(
        "--chain",
        type=int,
        default=0,
        help="also plant one chain of this many rows, each 1 bit from the last (one cluster)",
    )
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    dsn = args.dsn
    if not dsn:
        from simpg.embedded import embedded_dsn

        dsn = embedded_dsn()
    result = run(dsn, args.rows, args.k, args.seed, args.repeat, args.chain)
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print(
        f"{result['rows']} rows (chain {result['chain']}), k={result['k']}, "
        f"levels={result['levels']}: "
        f"{result['pairs']} pairs, "
        f"{result['clustered_rows']} rows in clusters"
    )
    print("| variant | seconds |\n|---|---:|")
    for name, seconds in result["seconds"].items():
        print(f"| {name} | {seconds:.3f} |")
    for name, ratio in result["ratios"].items():
        print(f"{name}: {ratio:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
