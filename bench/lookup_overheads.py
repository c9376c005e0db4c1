"""Where the time of a lookup from SQLAlchemy and from simpg.near() goes (issue 17).

bench/sql_api.py gives each form's p50 against the raw prepared statement; this script
takes the two slowest forms apart, on the same table (``b<rows>``, made by
psycopg_api.make_table when missing), one connection per form, taking turns query by
query, every answer compared with the raw statement's:

  raw prepared statement      as in sql_api.py
  Session, within()           select(Row.id).where(Row.simhash.within(q, 3)), then rollback
  Session, primary key        select(Row.id).where(Row.id == 5), then rollback: the
                              Session's own cost (BEGIN, the statement, ROLLBACK)
  Session on a lookup engine  Session, within() on simpg.sqlalchemy.lookup_engine
                              (autocommit: psycopg keeps the prepared statement)
  within()'s SQL, psycopg     the statement within() compiles to, sent by psycopg in a
                              transaction that is rolled back (no SQLAlchemy)
  ... without simpg.layout_is the same without the layout guard PostgreSQL runs whenever
                              it plans the statement
  simpg.near()                as in sql_api.py
  near, statement unchecked   a PL/pgSQL function (pg_temp) that only runs the session's
                              prepared statement simpg.near made: what a call costs
                              without simpg.near's checks

Usage:

    python bench/lookup_overheads.py --dsn "host=... dbname=bench" --rows 1000000
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import psycopg
from psycopg_api import make_table  # bench/ is the script's folder, so on sys.path
from sql_api import K, model_for, queries
from sqlalchemy import create_engine, select
from sqlalchemy.dialects import postgresql
from sqlalchemy.orm import Session

from simpg import bits
from simpg.psycopg import SimHashColumn
from simpg.psycopg.settings import LOOKUP_SETTINGS_SQL
from simpg.sqlalchemy import lookup_engine, url_from_dsn

UNCHECKED = """
CREATE FUNCTION pg_temp.near_unchecked(tbl anyelement, fp bigint, k integer) RETURNS SETOF anyelement
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp SET enable_seqscan = off SET plan_cache_mode = force_generic_plan
AS $$
BEGIN
    BEGIN  -- as simpg.near: a subtransaction, and the statement's name from the table
        RETURN QUERY EXECUTE format('EXECUTE %I(%L::bigint, %s::integer)',
                                    'simpg_near_' || simpg.lookup_rel(tbl)::oid || '_0', fp, k);
    EXCEPTION WHEN SQLSTATE 'SPG01' THEN RETURN;
    END;
END
$$"""


def forms(dsn: str, table: str) -> dict[str, Callable[[int], set[int] | None]]:
    index = SimHashColumn.connect(dsn, table, "simhash")
    layout, columns = index.info.layout, index.info.prefix_columns
    raw = psycopg.connect(dsn, autocommit=True)
    raw.execute(LOOKUP_SETTINGS_SQL)
    ranges = " OR ".join(f"t.{c} BETWEEN %s AND %s" for c in columns)
    raw_sql = f"SELECT t.id FROM {table} AS t WHERE ({ranges}) AND simpg.hamming(t.simhash, %s) <= {K}"

    def raw_near(q: int) -> set[int]:
        params = [bound for t in range(len(columns)) for bound in layout.prefix_range(q, t)]
        return {r[0] for r in raw.execute(raw_sql, [*params, bits.to_db(q)], prepare=True, binary=True)}

    model = model_for(table)
    session = Session(create_engine(url_from_dsn(dsn)))

    def orm(q: int) -> set[int]:
        found = set(session.scalars(select(model.id).where(model.simhash.within(q, K))))
        session.rollback()
        return found

    def orm_key(q: int) -> None:
        session.execute(select(model.id).where(model.id == 5)).all()
        session.rollback()

    # simpg.sqlalchemy.lookup_engine: autocommit (no BEGIN/ROLLBACK, and psycopg keeps its
    # prepared statements, which it drops at every rollback) and LOOKUP_SETTINGS
    lookup_session = Session(lookup_engine(url_from_dsn(dsn)))

    def orm_lookup(q: int) -> set[int]:
        found = set(lookup_session.scalars(select(model.id).where(model.simhash.within(q, K))))
        lookup_session.rollback()
        return found

    compiled = select(model.id).where(model.simhash.within(0, K)).compile(dialect=postgresql.psycopg.dialect())
    # its two parameters: the prefix ranges (a list) and the fingerprint
    (bounds_name,) = (n for n, v in compiled.params.items() if isinstance(v, list))
    (fp_name,) = (n for n in compiled.params if n != bounds_name)
    text = str(compiled)
    guard = text.index(" AND simpg.layout_is(")
    unguarded = text[:guard] + ")"  # the guard is the last condition, inside the outer parentheses

    def plain(sql: str) -> Callable[[int], set[int]]:
        conn = psycopg.connect(dsn)

        def run(q: int) -> set[int]:
            bounds = [bound for pair in layout.prefix_ranges(q) for bound in pair]
            found = {r[0] for r in conn.execute(sql, {bounds_name: bounds, fp_name: bits.to_db(q)})}
            conn.rollback()
            return found
        return run

    near_conn, unchecked_conn = (psycopg.connect(dsn, autocommit=True) for _ in range(2))
    unchecked_conn.execute(f"SELECT count(*) FROM simpg.near(NULL::{table}, 0, {K})")  # prepares the statement
    unchecked_conn.execute(UNCHECKED)

    def sql_near(conn: psycopg.Connection, function: str) -> Callable[[int], set[int]]:
        return lambda q: {r[0] for r in conn.execute(f"SELECT id FROM {function}(NULL::{table}, %s, {K})",
                                                     [bits.to_db(q)], prepare=True)}

    return {
        "raw prepared statement": raw_near,
        "Session, within()": orm,
        "Session, primary key": orm_key,
        "Session on a lookup engine, within()": orm_lookup,
        "within()'s SQL, psycopg": plain(text),
        "... without simpg.layout_is": plain(unguarded),
        "simpg.near()": sql_near(near_conn, "simpg.near"),
        "near, statement unchecked": sql_near(unchecked_conn, "pg_temp.near_unchecked"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dsn", required=True)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--queries", type=int, default=1000)
    args = parser.parse_args()
    table = f"b{args.rows}"
    with psycopg.connect(args.dsn, autocommit=True) as conn:
        make_table(conn, table, args.rows)
        qs = queries(conn, table, args.queries)
    named = list(forms(args.dsn, table).items())
    times: dict[str, list[float]] = {name: [] for name, _ in named}
    for i, q in enumerate(qs):
        answers = []
        for name, form in named[i % len(named):] + named[: i % len(named)]:  # taking turns
            t0 = time.perf_counter()
            found = form(q)
            if i >= 30:
                times[name].append(time.perf_counter() - t0)
            if found is not None:
                answers.append(found)
        assert all(a == answers[0] for a in answers), f"lookups disagree on {q}"
    base = statistics.median(times["raw prepared statement"])
    print(f"| {args.rows:,} rows, {len(qs) - 30} queries each | p50 ms | p50 / raw statement |\n|---|---:|---:|")
    for name, values in times.items():
        print(f"| {name} | {statistics.median(values) * 1e3:.3f} | {statistics.median(values) / base:.2f}x |")


if __name__ == "__main__":
    main()
