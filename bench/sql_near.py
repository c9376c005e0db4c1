"""simpg.near() in SQL against its 0.1.0 definition, side by side on one table.

``simpg.near`` spends most of a call in ``simpg.near_query``, which computes each
table's prefix range with the PL/pgSQL layout functions before the statement is
planned and run. This loads the 0.1.0 definitions of near, near_query and the layout
functions they call into a schema ``simpg_before`` (from sql/simpg--0.1.0.sql, as
released), then times both on the same queries, taking turns, and checks that they
return the same rows:

    python bench/sql_near.py --dsn "host=... dbname=postgres" --rows 1000000

The table is psycopg_api.py's ``b<rows>`` (created when missing).
"""

from __future__ import annotations

import argparse
import re
import statistics
import time
from pathlib import Path

import numpy as np
import psycopg
from psycopg_api import make_table  # bench/ is the script's folder, so on sys.path

from simpg import bits

RELEASED = Path(__file__).resolve().parent.parent / "sql" / "simpg--0.1.0.sql"
#: The 0.1.0 functions simpg.near runs, in an order they can be created in.
BEFORE = ["binomial", "narrowest_prefix", "table_count", "table_order", "prefix_bits", "table_segments",
          "near_query", "near"]


def load_before(conn: psycopg.Connection) -> None:
    """``simpg_before.<name>`` for each of BEFORE, calling each other (and simpg's others)."""
    script = RELEASED.read_text()
    conn.execute("DROP SCHEMA IF EXISTS simpg_before CASCADE")
    conn.execute("CREATE SCHEMA simpg_before")
    for name in BEFORE:
        start = script.index(f"CREATE FUNCTION simpg.{name}(")
        first = script.index(";\n", start)
        # a $$ body (its AS $$ comes before any ';'), or a SQL-standard body ending at the first ';'
        end = script.index("\n$$;\n", start) + len("\n$$;") if "AS $$" in script[start:first] else first + 1
        definition = script[start:end]
        for other in BEFORE:
            definition = re.sub(rf"\bsimpg\.{other}\(", f"simpg_before.{other}(", definition)
        conn.execute(definition)


def timed(conn: psycopg.Connection, statement: str, params: list[object]) -> tuple[float, list[int]]:
    t0 = time.perf_counter()
    rows = conn.execute(statement, params).fetchall()
    return time.perf_counter() - t0, sorted(r[0] for r in rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dsn", required=True)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--queries", type=int, default=500)
    args = parser.parse_args()
    name = f"b{args.rows}"
    with psycopg.connect(args.dsn, autocommit=True) as conn:
        make_table(conn, name, args.rows)
        load_before(conn)
        stored = [bits.from_db(r[0]) for r in conn.execute(
            f"SELECT simhash FROM {name} TABLESAMPLE SYSTEM (1) LIMIT %s", [args.queries // 2]).fetchall()]
        rng = np.random.default_rng(2)
        qs = [fp ^ (1 << int(rng.integers(64))) for fp in stored]
        qs += [int(x) for x in rng.integers(0, 2**64, size=args.queries - len(qs), dtype=np.uint64)]
        # (function, its statement) for this version and for 0.1.0, taking turns
        pairs = {
            "simpg.near": f"SELECT id FROM {{}}.near(NULL::{name}, %s, 3)",
            "simpg.near_query": f"SELECT length({{}}.near_query('{name}', %s, 3))",
        }
        variants = {(fn, schema): statement.format(schema)
                    for fn, statement in pairs.items() for schema in ("simpg", "simpg_before")}
        times: dict[tuple[str, str], list[float]] = {v: [] for v in variants}
        answers: dict[tuple[str, str], list[list[int]]] = {v: [] for v in variants}
        order = list(variants.items())
        for i, q in enumerate(qs):
            for label, statement in order[i % 2 :] + order[: i % 2]:
                elapsed, ids = timed(conn, statement, [bits.to_db(q)])
                if i >= 20:  # warm-up
                    times[label].append(elapsed)
                answers[label].append(ids)
        assert answers["simpg.near", "simpg"] == answers["simpg.near", "simpg_before"], "near differs from 0.1.0"
        # an analyst's batch: all queries in one statement, a LATERAL near per query (best of 3)
        lateral: dict[str, list[float]] = {"simpg": [], "simpg_before": []}
        batch_answers = {}
        for _ in range(3):
            for schema in lateral:
                elapsed, ids = timed(conn, f"SELECT n.id FROM unnest(%s::bigint[]) AS q(fp), "
                                           f"LATERAL {schema}.near(NULL::{name}, q.fp, 3) AS n",
                                     [[bits.to_db(q) for q in qs]])
                lateral[schema].append(elapsed)
                batch_answers[schema] = ids
        assert batch_answers["simpg"] == batch_answers["simpg_before"]
        conn.execute("DROP SCHEMA simpg_before CASCADE")
    found = sum(map(len, answers["simpg.near", "simpg"]))
    print(f"# simpg.near in SQL: {name}, k=3, {len(qs)} queries (half stored rows with one bit flipped), "
          f"{found} rows found, the same by both definitions\n")
    print("| function | this version p50 ms | 0.1.0 p50 ms | ratio |\n|---|---|---|---|")
    for fn in pairs:
        now, before = statistics.median(times[fn, "simpg"]), statistics.median(times[fn, "simpg_before"])
        print(f"| {fn} | {now * 1e3:.3f} | {before * 1e3:.3f} | {now / before:.2f} |")
    now, before = min(lateral["simpg"]) / len(qs), min(lateral["simpg_before"]) / len(qs)
    print(f"| simpg.near, {len(qs)} in one statement (LATERAL), per lookup | {now * 1e3:.3f} | "
          f"{before * 1e3:.3f} | {now / before:.2f} |")


if __name__ == "__main__":
    main()
