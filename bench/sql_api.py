"""Raw SQL at the speed of the Python API: every way to look up and report, side by side.

Issue 17's benchmark. On one table of N fingerprints (``b<rows>``, k=3, 5 blocks: 10
tables, made by psycopg_api.make_table when missing), in one run:

single lookups, one connection each, taking turns query by query (p50, p99, and the
ratio of each p50 to the raw statement's):

  raw prepared statement   the OR of the 10 prefix ranges, computed in Python, sent as a
                           prepared binary statement on a connection with SimHashColumn's
                           lookup settings (one generic plan, no sequential scan)
  SimHashColumn.near            simpg.psycopg (sync)
  AsyncSimHashColumn.near       simpg.psycopg (asyncio)
  SQLAlchemy Session       select(Model).where(Model.simhash.within(q, 3)) (simhash_index),
                           then a rollback, as a request ends; on an ordinary engine and
                           on simpg.sqlalchemy.lookup_engine (autocommit, lookup settings)
  simpg.near()             SELECT * FROM simpg.near(NULL::t, q, 3), prepared by psycopg
  sequential scan          WHERE simpg.hamming(simhash, q) <= 3 (a few queries only)

batches of --batch queries in one statement (time per lookup, lookups/s):

  SimHashColumn.near_many       simpg.psycopg
  simpg.near_many()        SELECT * FROM simpg.near_many(NULL::t, fps, 3)
  LATERAL simpg.near()     SELECT ... FROM unnest(fps) AS q, LATERAL simpg.near(NULL::t, q.fp, 3)

and every pair within k (and clusters), once each: SQL simpg.pairs/simpg.clusters,
SimHashColumn.pairs/clusters, and ``simpg find-all`` on the fingerprints as a text file.

Every form's answers are compared (the lookups with each other, pairs by count and set).
Usage:

    python bench/sql_api.py --dsn "host=... dbname=bench" --rows 1000000
    python bench/sql_api.py --dsn ... --rows 10000000 --skip-reports
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
from psycopg_api import make_table  # bench/ is the script's folder, so on sys.path
from sqlalchemy import BigInteger, create_engine, select
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column

from simpg import bits
from simpg.psycopg import AsyncSimHashColumn, SimHashColumn
from simpg.psycopg.settings import LOOKUP_SETTINGS_SQL
from simpg.sqlalchemy import SimHash, lookup_engine, simhash_index, url_from_dsn

K = 3


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(int(len(ordered) * p), len(ordered) - 1)]


def model_for(table: str) -> type:
    class Base(DeclarativeBase):
        pass

    class Row(Base):
        __tablename__ = table
        id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
        simhash: Mapped[int] = mapped_column(SimHash)

    simhash_index(Row.simhash, k=K, blocks=5)  # the layout make_table built
    return Row


def queries(conn: psycopg.Connection, table: str, n: int) -> list[int]:
    """Half stored fingerprints with one bit flipped (hits), half random (mostly misses)."""
    stored = [bits.from_db(r[0]) for r in conn.execute(
        f"SELECT simhash FROM {table} TABLESAMPLE SYSTEM (1) LIMIT %s", [n // 2]).fetchall()]
    rng = np.random.default_rng(17)
    qs = [fp ^ (1 << int(rng.integers(64))) for fp in stored]
    qs += [int(x) for x in rng.integers(0, 2**64, size=n - len(qs), dtype=np.uint64)]
    return qs


def single_lookups(dsn: str, table: str, qs: list[int], seq_queries: int) -> list[dict[str, Any]]:
    index = SimHashColumn.connect(dsn, table, "simhash")
    layout, columns = index.info.layout, index.info.prefix_columns
    raw = psycopg.connect(dsn, autocommit=True)
    # the session settings of SimHashColumn's lookup connections: one generic plan, read through the B-trees
    raw.execute(LOOKUP_SETTINGS_SQL)
    ranges = " OR ".join(f"t.{c} BETWEEN %s AND %s" for c in columns)
    raw_sql = f"SELECT t.id FROM {table} AS t WHERE ({ranges}) AND simpg.hamming(t.simhash, %s) <= {K}"

    def raw_near(q: int) -> set[int]:
        params: list[int] = []
        for t in range(len(columns)):
            params += layout.prefix_range(q, t)
        rows = raw.execute(raw_sql, [*params, bits.to_db(q)], prepare=True, binary=True).fetchall()
        return {r[0] for r in rows}

    sql_conn = psycopg.connect(dsn, autocommit=True)

    def sql_near(q: int) -> set[int]:
        rows = sql_conn.execute(f"SELECT id FROM simpg.near(NULL::{table}, %s, {K})", [bits.to_db(q)],
                                prepare=True).fetchall()
        return {r[0] for r in rows}

    model = model_for(table)
    engine = create_engine(url_from_dsn(dsn))
    session = Session(engine)

    def orm_near(q: int) -> set[int]:
        found = set(session.scalars(select(model.id).where(model.simhash.within(q, K))))
        session.rollback()  # end the transaction, as a request would
        return found

    lookup_session = Session(lookup_engine(url_from_dsn(dsn)))

    def orm_lookup_near(q: int) -> set[int]:
        found = set(lookup_session.scalars(select(model.id).where(model.simhash.within(q, K))))
        lookup_session.rollback()  # as a request would end (no ROLLBACK reaches the server)
        return found

    loop = asyncio.new_event_loop()
    aindex = loop.run_until_complete(AsyncSimHashColumn.connect(dsn, table, "simhash"))

    def async_near(q: int) -> set[int]:
        return {n.id for n in loop.run_until_complete(aindex.near(q, K))}

    forms: dict[str, Callable[[int], set[int]]] = {
        "raw prepared statement": raw_near,
        "SimHashColumn.near": lambda q: {n.id for n in index.near(q, K)},
        "AsyncSimHashColumn.near": async_near,
        "SQLAlchemy Session, within()": orm_near,
        "SQLAlchemy Session on lookup_engine, within()": orm_lookup_near,
        "simpg.near() from SQL": sql_near,
    }
    times: dict[str, list[float]] = {name: [] for name in forms}
    order = list(forms.items())
    warm = 30
    for i, q in enumerate(qs):
        answers = []
        for name, form in order[i % len(order):] + order[: i % len(order)]:  # taking turns
            t0 = time.perf_counter()
            answers.append(form(q))
            if i >= warm:
                times[name].append(time.perf_counter() - t0)
        assert all(a == answers[0] for a in answers), f"lookups disagree on {q}"
        if i % 100 == 0:
            print(f"  single lookups: {i}/{len(qs)}", file=sys.stderr)
    seq: list[float] = []
    for q in qs[:seq_queries]:
        t0 = time.perf_counter()
        got = {r[0] for r in raw.execute(f"SELECT id FROM {table} WHERE simpg.hamming(simhash, %s) <= {K}",
                                         [bits.to_db(q)]).fetchall()}
        seq.append(time.perf_counter() - t0)
        assert got == raw_near(q)
    times["sequential scan"] = seq
    base = statistics.median(times["raw prepared statement"])
    results = [{"form": name, "samples": len(v), "p50_ms": statistics.median(v) * 1e3, "p99_ms": pct(v, 0.99) * 1e3,
                "ratio": statistics.median(v) / base} for name, v in times.items()]
    loop.run_until_complete(aindex.close())
    loop.close()
    session.close()
    engine.dispose()
    for c in (raw, sql_conn):
        c.close()
    index.close()
    return results


def batches(dsn: str, table: str, qs: list[int], batch: int, repeat: int) -> list[dict[str, Any]]:
    index = SimHashColumn.connect(dsn, table, "simhash")
    conn = psycopg.connect(dsn, autocommit=True)
    chunks = [qs[i:i + batch] for i in range(0, len(qs), batch)]

    def api(chunk: list[int]) -> set[tuple[int, int]]:
        return {(i + 1, n.id) for i, found in enumerate(index.near_many(chunk, K)) for n in found}

    def sql_many(chunk: list[int]) -> set[tuple[int, int]]:
        rows = conn.execute(f"SELECT n.query, (n.hit).id FROM simpg.near_many(NULL::{table}, %s, {K}) AS n",
                            [[bits.to_db(q) for q in chunk]]).fetchall()
        return set(rows)

    def lateral(chunk: list[int]) -> set[tuple[int, int]]:
        rows = conn.execute(f"SELECT q.i, n.id FROM unnest(%s::bigint[]) WITH ORDINALITY AS q(fp, i) "
                            f"CROSS JOIN LATERAL simpg.near(NULL::{table}, q.fp, {K}) AS n",
                            [[bits.to_db(q) for q in chunk]]).fetchall()
        return set(rows)

    forms = {"SimHashColumn.near_many": api, "simpg.near_many() from SQL": sql_many,
             "LATERAL simpg.near() from SQL": lateral}
    totals: dict[str, list[float]] = {name: [] for name in forms}
    for _ in range(repeat):
        for chunk in chunks:
            answers = []
            for name, form in forms.items():
                t0 = time.perf_counter()
                answers.append(form(chunk))
                totals[name].append((time.perf_counter() - t0) / len(chunk))
            assert all(a == answers[0] for a in answers), "batched lookups disagree"
    base = statistics.median(totals["SimHashColumn.near_many"])
    index.close()
    conn.close()
    return [{"form": name, "batch": batch, "per_lookup_ms": statistics.median(v) * 1e3,
             "lookups_per_s": 1 / statistics.median(v), "ratio": statistics.median(v) / base}
            for name, v in totals.items()]


def reports(dsn: str, table: str) -> list[dict[str, Any]]:
    index = SimHashColumn.connect(dsn, table, "simhash")
    conn = psycopg.connect(dsn, autocommit=True)
    out: list[dict[str, Any]] = []

    def timed(name: str, fn: Callable[[], Any]) -> Any:
        print(f"  {name} ...", file=sys.stderr)
        t0 = time.perf_counter()
        value = fn()
        out.append({"form": name, "seconds": time.perf_counter() - t0})
        return value

    sql_pairs = timed("simpg.pairs() from SQL", lambda: {
        (a, b) for a, b, _ in conn.execute(f"SELECT key_a, key_b, distance FROM simpg.pairs('{table}', {K})")})
    api_pairs = timed("SimHashColumn.pairs", lambda: {(min(p.a, p.b), max(p.a, p.b)) for p in index.pairs(K)})
    assert sql_pairs == api_pairs, "pairs disagree"
    sql_clusters = timed("simpg.clusters() from SQL", lambda: conn.execute(
        f"SELECT count(DISTINCT cluster_id) FROM simpg.clusters('{table}', {K})").fetchone()[0])
    api_clusters = timed("SimHashColumn.clusters", lambda: len(index.clusters(K)))
    assert sql_clusters == api_clusters, "clusters disagree"
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "fps.txt"
        with open(path, "w") as f, conn.cursor().copy(
                f"COPY (SELECT simhash FROM {table} ORDER BY id) TO STDOUT") as copy:
            for chunk in copy:
                f.write(bytes(chunk).decode())
        # the CLI wants unsigned decimals
        fps = np.loadtxt(path, dtype=np.int64).astype(np.uint64)
        np.savetxt(path, fps, fmt="%d")
        found = timed("simpg find-all -d 3 (text file in, JSON lines out)", lambda: subprocess.run(
            [sys.executable, "-m", "simpg", "find-all", "-d", str(K), "-i", str(path), "--lines"],
            check=True, capture_output=True, text=True).stdout.count("\n"))
    assert found == len(sql_pairs), (found, len(sql_pairs))
    base = out[1]["seconds"]
    for row in out:
        row["ratio"] = row["seconds"] / base
    index.close()
    conn.close()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dsn", required=True)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--seq-queries", type=int, default=5)
    parser.add_argument("--batch", type=int, default=1000)
    parser.add_argument("--skip-reports", action="store_true")
    args = parser.parse_args()
    table = f"b{args.rows}"
    with psycopg.connect(args.dsn, autocommit=True) as conn:
        make_table(conn, table, args.rows)
        conn.execute(f"SELECT pg_prewarm(c.oid) FROM pg_class AS c WHERE c.relname LIKE '{table}%%'"
                     if conn.execute("SELECT 1 FROM pg_extension WHERE extname = 'pg_prewarm'").fetchone()
                     else "SELECT 1")
        qs = queries(conn, table, args.queries)
        version = conn.execute("SHOW server_version").fetchone()[0]
    print(f"## {args.rows:,} rows, k={K}, PostgreSQL {version}, {time.strftime('%Y-%m-%d %H:%M')}\n")
    print("| single lookup | samples | p50 ms | p99 ms | p50 / raw statement |\n|---|---:|---:|---:|---:|")
    for r in single_lookups(args.dsn, table, qs, args.seq_queries):
        print(f"| {r['form']} | {r['samples']} | {r['p50_ms']:.3f} | {r['p99_ms']:.3f} | {r['ratio']:.2f}x |")
    print(f"\n| batch of {args.batch} | per lookup ms | lookups/s | / SimHashColumn.near_many |\n|---|---:|---:|---:|")
    for r in batches(args.dsn, table, qs, args.batch, repeat=3):
        print(f"| {r['form']} | {r['per_lookup_ms']:.4f} | {r['lookups_per_s']:,.0f} | {r['ratio']:.2f}x |")
    if not args.skip_reports:
        print("\n| every pair within 3 | seconds | / SimHashColumn.pairs |\n|---|---:|---:|")
        for r in reports(args.dsn, table):
            print(f"| {r['form']} | {r['seconds']:.2f} | {r['ratio']:.2f}x |")


if __name__ == "__main__":
    main()
