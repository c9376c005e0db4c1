"""check() and repair() of SimHashColumn, AsyncSimHashColumn and SimHashIndex on damaged indexes, on real servers.

Each test damages an index by hand as a crash, a careless DBA or an interrupted build
would (a prefix column dropped, a B-tree dropped, an invalid B-tree left by a failed
``CREATE INDEX CONCURRENTLY``, stored prefixes that ``simpg.permute`` no longer
computes, a second layout on the column), then checks that check() names it, that
repair() puts right what it can, that check() is clean afterwards, and that the
answers equal brute force.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import psycopg
import pytest
from sqlalchemy import BigInteger, Column, MetaData, Table, create_engine, text

from simpg import bits
from simpg.exc import SimpgError
from simpg.layout import Layout
from simpg.psycopg import AsyncSimHashColumn, IndexProblem, SimHashColumn
from simpg.sqlalchemy import simhash_index, url_from_dsn
from tests.integration.psycopg_tables import make_table
from tests.oracles import brute_near_numbered, planted_corpus

LAYOUT = Layout(3, (5,))  # 10 tables: prefix columns simhash_p0 .. simhash_p9


def assert_exact(index: SimHashColumn, rows: list[int], queries: list[int]) -> None:
    for k in (0, LAYOUT.k):
        expected = [brute_near_numbered(rows, q, k) for q in queries]
        assert [index.near(q, k) for q in queries] == expected
        assert index.near_many(queries, k) == expected


def invalidate(conn: psycopg.Connection, t: int) -> None:
    """Replace table t's B-tree by an INVALID one of the same name, as an interrupted
    CREATE INDEX CONCURRENTLY leaves it: a unique build fails on the equal prefixes of
    the rows with equal fingerprints."""
    conn.execute(f"DROP INDEX docs_simhash_p{t}_idx")
    with pytest.raises(psycopg.errors.UniqueViolation):
        conn.execute(f"CREATE UNIQUE INDEX CONCURRENTLY docs_simhash_p{t}_idx ON docs (simhash_p{t})")
    valid = conn.execute("SELECT indisvalid FROM pg_index WHERE indexrelid = %s::regclass",
                         [f"docs_simhash_p{t}_idx"]).fetchone()
    assert valid == (False,)


def test_a_healthy_index_has_no_problems_and_nothing_to_repair(conn: psycopg.Connection) -> None:
    rows, queries = planted_corpus(31, LAYOUT.k, n=200)
    index = make_table(conn, LAYOUT, rows)
    assert index.check() == [] and index.check(verify_rows=False) == []
    assert index.repair() == []
    assert_exact(index, rows, queries)


def test_a_missing_b_tree_is_built_again(conn: psycopg.Connection) -> None:
    rows, queries = planted_corpus(32, LAYOUT.k, n=200)
    index = make_table(conn, LAYOUT, rows)
    conn.execute("DROP INDEX docs_simhash_p3_idx")
    assert index.check() == [IndexProblem(
        "simhash", "missing b-tree",
        "no valid B-tree on column simhash_p3 (answers stay exact, but read the whole table)")]
    assert_exact(index, rows, queries)  # slower, still exact
    assert index.repair() == ["CREATE INDEX docs_simhash_p3_idx ON public.docs (simhash_p3) WITH (fillfactor = 100)"]
    assert index.check() == []
    assert index.info.index_names[3] == "docs_simhash_p3_idx"
    assert_exact(index, rows, queries)


def test_an_invalid_index_is_dropped_and_built_again(conn: psycopg.Connection) -> None:
    rows, queries = planted_corpus(33, LAYOUT.k, n=200)
    index = make_table(conn, LAYOUT, rows)
    invalidate(conn, 2)
    invalidate(conn, 7)
    problems = index.check(verify_rows=False)
    assert [(p.column, p.problem) for p in problems] == [("simhash", "missing b-tree")] * 2 + [
        ("simhash", "invalid index")] * 2
    assert "docs_simhash_p2_idx" in problems[2].detail and "docs_simhash_p7_idx" in problems[3].detail
    assert str(problems[0]).startswith("simhash: missing b-tree: no valid B-tree on column simhash_p2")
    assert index.repair() == [
        "DROP INDEX public.docs_simhash_p2_idx",
        "DROP INDEX public.docs_simhash_p7_idx",
        "CREATE INDEX docs_simhash_p2_idx ON public.docs (simhash_p2) WITH (fillfactor = 100)",
        "CREATE INDEX docs_simhash_p7_idx ON public.docs (simhash_p7) WITH (fillfactor = 100)",
    ]
    assert index.check() == []
    assert conn.execute("SELECT bool_and(indisvalid) FROM pg_index WHERE indrelid = 'docs'::regclass").fetchone() == (
        True,)
    assert_exact(index, rows, queries)


def test_a_dropped_prefix_column_removes_the_index_then_create_makes_it_again(conn: psycopg.Connection) -> None:
    rows, queries = planted_corpus(34, LAYOUT.k, n=200)
    index = make_table(conn, LAYOUT, rows)
    index.near(queries[0])  # the handle has read the layout
    conn.execute("ALTER TABLE docs DROP COLUMN simhash_p1")
    # the handle's statements name the dropped column: it reads the layout again and is refused
    with pytest.raises(SimpgError, match=r"is damaged: .*; see simpg.check\(table\)"):
        index.near(queries[0])
    assert index.check() == [IndexProblem(
        "simhash", "missing prefix column",
        "table 1 of k=3 blocks=5: no column simpg.permute(simhash, 3, '{5}'::integer[], 1)")]
    assert index.repair() == ["ALTER TABLE public.docs DROP COLUMN simhash_p0, " + ", ".join(
        f"DROP COLUMN simhash_p{t}" for t in range(2, 10))]
    with pytest.raises(SimpgError, match=r"^no simpg index on docs\.simhash; create one with create\(\)$"):
        index.check()
    assert index.create(LAYOUT.k, *LAYOUT.levels) == LAYOUT
    assert index.check() == []
    assert_exact(index, rows, queries)


def test_stale_prefix_values_are_found_and_left_to_the_owner(conn: psycopg.Connection) -> None:
    """After an upgrade that changed simpg.permute, stored prefixes differ from what it computes:
    check(verify_rows=True) finds them, repair() leaves them (a rewrite is the owner's call)."""
    rows, queries = planted_corpus(35, LAYOUT.k, n=200)
    index = make_table(conn, LAYOUT, rows)
    (original,) = conn.execute(
        "SELECT pg_get_functiondef('simpg.apply_segments(bigint, bigint[])'::regprocedure)").fetchone()
    conn.execute("CREATE OR REPLACE FUNCTION simpg.apply_segments(fp bigint, segs bigint[]) RETURNS bigint "
                 "LANGUAGE sql IMMUTABLE PARALLEL SAFE RETURN fp")
    problems = index.check()
    assert problems and {p.problem for p in problems} == {"stale prefix values"}
    assert all(p.detail.endswith("differ from what simpg.permute computes now") for p in problems)
    assert index.check(verify_rows=False) == []  # only reading the rows finds them
    assert index.repair() == []
    assert len(index.check()) == len(problems)
    conn.execute(original)  # the function as it was: the stored values are right again
    assert index.check() == []
    assert_exact(index, rows, queries)


def test_several_layouts_are_reported_and_drop_removes_them(conn: psycopg.Connection) -> None:
    rows, queries = planted_corpus(36, LAYOUT.k, n=200)
    index = make_table(conn, LAYOUT, rows)
    other = Layout(2, (4,))  # a second layout on the column, as hand-written DDL could add
    conn.execute("ALTER TABLE docs " + ", ".join(
        f"ADD COLUMN extra_{t} bigint GENERATED ALWAYS AS (simpg.permute(simhash, 2, '{{4}}'::integer[], {t})) STORED"
        for t in range(other.tables)))
    problems = index.check(verify_rows=False)
    several = [p for p in problems if p.problem == "several layouts"]
    assert [p.detail for p in several] == [
        "k=2 blocks=4 is one of several layouts on this column; keep one",
        "k=3 blocks=5 is one of several layouts on this column; keep one",
    ]
    with pytest.raises(SimpgError, match="has 2 simpg indexes on column simhash"):
        SimHashColumn(conn, "docs").near(queries[0])  # a new handle reads the catalog
    index.repair()  # builds the second layout's B-trees; both layouts stay
    assert {p.problem for p in index.check()} == {"several layouts"}
    index.drop()  # every prefix column of the column
    index.create(LAYOUT.k, *LAYOUT.levels)
    assert index.check() == []
    assert_exact(index, rows, queries)


def test_check_and_repair_name_what_is_wrong(conn: psycopg.Connection) -> None:
    conn.execute("CREATE TABLE plain (id bigint PRIMARY KEY, simhash bigint)")
    with pytest.raises(SimpgError, match=r"^no simpg index on plain\.simhash"):
        SimHashColumn(conn, "plain").check()
    assert SimHashColumn(conn, "plain").repair() == []
    with pytest.raises(SimpgError, match='relation "nope" does not exist'):
        SimHashColumn(conn, "nope").check()
    with pytest.raises(SimpgError, match="verify_rows must be True or False, got 'yes'"):
        SimHashColumn(conn, "plain").check(verify_rows="yes")  # type: ignore[arg-type]


def test_repair_needs_the_table_owner(db: object, conn: psycopg.Connection) -> None:
    rows, _ = planted_corpus(37, LAYOUT.k, n=50)
    make_table(conn, LAYOUT, rows)
    conn.execute("DROP INDEX docs_simhash_p0_idx")
    role = f"stranger_{db.name}"  # type: ignore[attr-defined]
    conn.execute(f"CREATE ROLE {role} LOGIN")
    try:
        conn.execute(f"GRANT SELECT ON docs TO {role}")
        dsn = db.pg.server.dsn(db.name, user=role)  # type: ignore[attr-defined]
        with psycopg.connect(dsn, autocommit=True) as other:
            assert [p.problem for p in SimHashColumn(other, "docs").check()] == ["missing b-tree"]
            with pytest.raises(SimpgError, match="must be owner of table public.docs"):
                SimHashColumn(other, "docs").repair()
    finally:
        conn.execute(f"DROP OWNED BY {role}")
        conn.execute(f"DROP ROLE {role}")


async def test_async_check_and_repair(db: object) -> None:
    rows, queries = planted_corpus(38, LAYOUT.k, n=200)
    async with await psycopg.AsyncConnection.connect(db.dsn, autocommit=True) as conn:  # type: ignore[attr-defined]
        await conn.execute("CREATE TABLE docs (id bigserial PRIMARY KEY, simhash bigint)")
        index = AsyncSimHashColumn(conn, "docs")
        with pytest.raises(SimpgError, match="no simpg index on docs.simhash"):
            await index.check()
        await index.create(LAYOUT.k, *LAYOUT.levels)
        await index.add(np.array(rows, dtype=np.uint64))
        assert await index.check() == []
        await conn.execute("DROP INDEX docs_simhash_p4_idx")
        with pytest.raises(psycopg.errors.UniqueViolation):
            await conn.execute("CREATE UNIQUE INDEX CONCURRENTLY docs_simhash_p4_idx ON docs (simhash_p4)")
        assert [p.problem for p in await index.check(verify_rows=False)] == ["missing b-tree", "invalid index"]
        assert await index.repair() == [
            "DROP INDEX public.docs_simhash_p4_idx",
            "CREATE INDEX docs_simhash_p4_idx ON public.docs (simhash_p4) WITH (fillfactor = 100)",
        ]
        assert await index.check() == []
        expected = [brute_near_numbered(rows, q, LAYOUT.k) for q in queries]
        assert [await index.near(q) for q in queries] == expected
        assert await index.near_many(queries) == expected
        await conn.execute("ALTER TABLE docs DROP COLUMN simhash_p9")
        assert [p.problem for p in await index.check()] == ["missing prefix column"]
        assert len(await index.repair()) == 1
        await index.create(LAYOUT.k, *LAYOUT.levels)
        assert await index.near_many(queries) == expected


# -- SQLAlchemy -------------------------------------------------------------------------


def _model(blocks: int) -> tuple[Table, object]:
    table = Table("articles", MetaData(), Column("id", BigInteger, primary_key=True),
                  Column("simhash", BigInteger))
    return table, simhash_index(table.c.simhash, k=3, blocks=blocks)


@pytest.mark.parametrize("damage, problems, repaired", [
    (lambda c: c.execute(text("DROP INDEX articles_simhash_p5_idx")), ["missing b-tree"], 1),
    (lambda c: c.execute(text("ALTER TABLE articles DROP COLUMN simhash_p5")), ["missing prefix column"], 1),
], ids=["b-tree", "prefix column"])
def test_sqlalchemy_check_and_repair(db: object, damage: Callable[[object], object], problems: list[str],
                                     repaired: int) -> None:
    rows, queries = planted_corpus(39, 3, n=200)
    table, spec = _model(5)
    engine = create_engine(url_from_dsn(db.dsn))  # type: ignore[attr-defined]
    try:
        table.metadata.create_all(engine)
        with engine.begin() as c:
            c.execute(table.insert(), [{"id": i, "simhash": bits.to_db(v)} for i, v in enumerate(rows, start=1)])
            assert spec.check(c) == [] and spec.check(c, verify_rows=False) == []
            damage(c)
            assert [p.problem for p in spec.check(c)] == problems
            assert len(spec.repair(c)) == repaired
        with engine.begin() as c:
            if problems == ["missing prefix column"]:
                with pytest.raises(SimpgError, match=r"no simpg index on articles\.simhash in the database"):
                    spec.check(c)
                c.execute(text("SELECT simpg.create_index('articles', 'simhash', 3, 5)"))
            assert spec.check(c) == []
        with psycopg.connect(db.dsn, autocommit=True) as conn:  # type: ignore[attr-defined]
            index = SimHashColumn(conn, "articles")
            assert [index.near(q) for q in queries] == [brute_near_numbered(rows, q, 3) for q in queries]
    finally:
        engine.dispose()


def test_sqlalchemy_check_reports_a_layout_other_than_the_model(db: object) -> None:
    table, spec = _model(5)
    engine = create_engine(url_from_dsn(db.dsn))  # type: ignore[attr-defined]
    try:
        with engine.begin() as c:
            c.execute(text("CREATE TABLE articles (id bigint PRIMARY KEY, simhash bigint)"))
            c.execute(text("SELECT simpg.create_index('articles', 'simhash', 3, 4)"))
            assert spec.check(c) == [IndexProblem(
                "simhash", "layout differs from the model", "the database has k3:4, the model declares k3:5")]
    finally:
        engine.dispose()
