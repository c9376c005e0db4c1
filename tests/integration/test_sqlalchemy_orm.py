"""simpg.sqlalchemy with a sync Session on a real server: within-k == brute force, via indexes."""

from __future__ import annotations

import random
from collections.abc import Iterator

import pytest
from sqlalchemy import (
    BigInteger,
    Engine,
    create_engine,
    func,
    insert,
    select,
    text,
)
from sqlalchemy.dialects import postgresql
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, aliased, mapped_column

from simpg import bits
from simpg.fingerprint import fingerprint
from simpg.sqlalchemy import (
    SimHash,
    near,
    near_select,
    simhash_index,
    url_from_dsn,
)
from tests.integration.models import CONFIG, SPEC, Article, Author, Base, K
from tests.oracles import adversarial_rows_around, brute_near_ids, extreme_queries


@pytest.fixture(scope="module")
def loaded(pg) -> Iterator[tuple[Engine, list[tuple[int, int]], list[int]]]:
    """A database with the models created and 6000 random + adversarial fingerprints."""
    rng = random.Random(5)
    qs = extreme_queries(rng)
    fps = adversarial_rows_around(qs, rng) + [rng.getrandbits(64) for _ in range(6000)]
    janitor = pg.new_db()
    with janitor:
        engine = create_engine(url_from_dsn(pg.server.dsn(janitor.dbname)))
        Base.metadata.create_all(engine)
        with Session(engine) as session:
            session.add(Author(id=1, name="ann"))
            session.flush()
            values = [
                {"id": i + 1, "simhash": fp, "author_id": 1 if i % 2 else None}
                for i, fp in enumerate(fps)
            ]
            # multi-row VALUES: each INSERT statement plans the 10 generated expressions once
            for start in range(0, len(values), 2000):
                session.execute(insert(Article).values(values[start : start + 2000]))
            session.commit()
        with engine.connect() as conn:
            conn.execute(text("ANALYZE articles"))
            conn.commit()
        yield engine, list(enumerate(fps, start=1)), qs
        engine.dispose()


def test_create_all_registers_the_index(loaded):
    engine, _, _ = loaded
    with engine.connect() as conn:
        row = conn.execute(
            text(
                "SELECT k, levels, prefix_columns, index_names, fingerprint_config "
                "FROM simpg.indexes WHERE indexed_table = 'articles'::regclass"
            )
        ).one()
    assert row == (3, [5], SPEC.prefix_names, SPEC.index_names, CONFIG.identity)


@pytest.mark.parametrize("k", range(K + 1))
def test_within_equals_brute_force(loaded, k):
    engine, rows, qs = loaded
    with Session(engine) as session:
        for q in qs + [fp for _, fp in rows[:40]]:
            got = session.scalars(select(Article.id).where(Article.simhash.within(q, k))).all()
            assert sorted(got) == sorted(brute_near_ids(rows, q, k)), (hex(q), k)
            assert len(got) == len(set(got))  # a row found by several tables comes once


def test_results_are_unsigned(loaded):
    engine, rows, _ = loaded
    with Session(engine) as session:
        big = session.scalars(select(Article).where(Article.simhash.within(bits.MASK, 0))).all()
    assert big and all(a.simhash == bits.MASK for a in big)


def test_within_uses_the_prefix_indexes(loaded):
    engine, _, qs = loaded
    stmt = select(Article.id).where(Article.simhash.within(qs[4], K))
    compiled = stmt.compile(dialect=postgresql.psycopg.dialect())
    with engine.connect() as conn:
        # as the Session sends it: the fingerprint a parameter, planned with its value
        plan = "\n".join(conn.exec_driver_sql("EXPLAIN " + str(compiled), compiled.params).scalars())
    assert "BitmapOr" in plan, plan
    # each B-tree reads its narrow range: the bounds' shifts and masks were folded
    ranges = SPEC.layout.prefix_ranges(qs[4])
    for name, column, (lo, hi) in zip(SPEC.index_names, SPEC.prefix_names, ranges, strict=True):
        assert f"Bitmap Index Scan on {name}" in plan, plan
        assert f"(({column} >= '{lo}'::bigint) AND ({column} <= '{hi}'::bigint))" in plan, plan
    assert "Seq Scan" not in plan


def test_sql_near_agrees_with_within(loaded):
    engine, _, qs = loaded
    with Session(engine) as session:
        for q in qs:
            for k in (0, 2, K):
                orm = session.scalars(select(Article.id).where(Article.simhash.within(q, k))).all()
                sql = session.scalars(
                    text("SELECT id FROM simpg.near(NULL::articles, :fp, :k)"),
                    {"fp": bits.to_db(q), "k": k},
                ).all()
                assert sorted(orm) == sorted(sql)


def test_self_join_with_an_expression(loaded):
    engine, rows, _ = loaded
    other = aliased(Article)
    subset = rows[:150]
    stmt = (
        select(Article.id, other.id)
        .join(other, Article.simhash.within(other.simhash, 2))
        .where(other.id <= len(subset), Article.id != other.id)
    )
    with Session(engine) as session:
        got = {tuple(r) for r in session.execute(stmt)}
    want = {(i, j) for j, q in subset for i, fp in rows if i != j and bits.hamming(fp, q) <= 2}
    assert got == want and got


def test_composes_with_join_filter_order_and_pagination(loaded):
    engine, rows, qs = loaded
    q = qs[0]
    authored = {i for i, _ in rows if (i - 1) % 2}
    want = sorted(
        (bits.hamming(fp, q), i) for i, fp in rows if i in authored and bits.hamming(fp, q) <= K
    )
    base = (
        select(Article.id, Article.simhash.distance(q).label("d"))
        .join(Author, Author.id == Article.author_id)
        .where(Author.name == "ann", Article.simhash.within(q, K))
        .order_by(Article.simhash.distance(q), Article.id)
    )
    with Session(engine) as session:
        pages = [
            session.execute(base.limit(3).offset(off)).all() for off in range(0, len(want) + 3, 3)
        ]
        count = session.scalar(select(func.count()).select_from(base.subquery()))
    assert [(d, i) for page in pages for i, d in page] == want
    assert count == len(want)


def test_fingerprint_on_write_and_near_duplicates(db):
    engine = create_engine(url_from_dsn(db.dsn))
    Base.metadata.create_all(engine)
    text_a = "The quick brown fox jumps over the lazy dog near the river bank today."
    text_b = "The quick brown fox jumps over the lazy dog near the river bank today!"
    with Session(engine) as session:
        a = Article(body=text_a)
        assert a.simhash == fingerprint(text_a, CONFIG)  # set before any flush
        b = Article(body=text_b)
        far = Article(body="Completely different words about databases and indexes.")
        session.add_all([a, b, far])
        session.commit()
        dist = bits.hamming(a.simhash, b.simhash)
        found = near(session, Article, a)  # an object: itself excluded
        assert (dist <= K) == (b in found) and a not in found and far not in found
        by_text = near(session, Article, text_a, k=0)
        assert a in by_text
        by_fp = session.scalars(near_select(Article, far.simhash, 0)).all()
        assert by_fp == [far]
        a.body = None
        assert a.simhash is None
    engine.dispose()


def test_drop_all_forgets_the_catalog_row(db):
    engine = create_engine(url_from_dsn(db.dsn))
    Base.metadata.create_all(engine)
    Base.metadata.drop_all(engine)
    assert db.conn.execute("SELECT count(*) FROM simpg.indexes").fetchone() == (0,)
    Base.metadata.create_all(engine)  # and again, with a new table oid
    assert db.conn.execute("SELECT count(*) FROM simpg.indexes").fetchone() == (1,)
    engine.dispose()


def test_long_names_match_sql(db):
    table_name = "t" * 60

    class LongBase(DeclarativeBase):
        pass

    class Long(LongBase):
        __tablename__ = table_name
        id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
        fingerprint_of_the_document: Mapped[int] = mapped_column(SimHash)

    spec = simhash_index(Long.fingerprint_of_the_document, k=2, blocks=4)
    engine = create_engine(url_from_dsn(db.dsn))
    LongBase.metadata.create_all(engine)
    engine.dispose()
    col = "fingerprint_of_the_document"
    for t in range(spec.layout.tables):
        want_col, want_idx = db.conn.execute(
            "SELECT simpg.object_name(%s, %s), simpg.object_name(%s, %s)",
            (col, f"_p{t}", f"{table_name}_{col}", f"_p{t}_idx"),
        ).fetchone()
        assert (spec.prefix_names[t], spec.index_names[t]) == (want_col, want_idx)
    reg = db.conn.execute("SELECT index_names FROM simpg.indexes").fetchone()[0]
    real = {
        r[0]
        for r in db.conn.execute("SELECT indexname FROM pg_indexes WHERE schemaname = 'public'")
    }
    assert reg == spec.index_names and set(reg) <= real


def test_within_refuses_an_index_recreated_with_another_layout(db):
    # the model says k3:5; re-created in SQL as k3:6, the first ten prefix columns keep
    # their names but hold other permutations: within() says so instead of missing rows
    import sqlalchemy.exc

    class GuardBase(DeclarativeBase):
        pass

    class Doc(GuardBase):
        __tablename__ = "guarded docs"
        id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
        simhash: Mapped[int] = mapped_column(SimHash)

    simhash_index(Doc.simhash, k=3, blocks=5)
    rng = random.Random(7)
    fps = adversarial_rows_around([0x0123456789ABCDEF, bits.MASK], rng)
    rows = list(enumerate(fps, start=1))
    engine = create_engine(url_from_dsn(db.dsn))
    GuardBase.metadata.create_all(engine)
    with Session(engine) as session:
        session.execute(insert(Doc).values([{"id": i, "simhash": fp} for i, fp in rows]))
        session.commit()
        within = select(Doc.id).where(Doc.simhash.within(0x0123456789ABCDEF, 3))
        assert set(session.scalars(within)) == brute_near_ids(rows, 0x0123456789ABCDEF, 3)
        session.execute(text("SELECT simpg.drop_index('\"guarded docs\"', 'simhash')"))
        session.execute(text("SELECT simpg.create_index('\"guarded docs\"', 'simhash', 3, 6)"))
        session.commit()
        with pytest.raises(sqlalchemy.exc.DBAPIError, match="no longer the k=3 blocks=5 layout"):
            session.scalars(within).all()
        session.rollback()
        # with the model's layout again, the same statement answers
        session.execute(text("SELECT simpg.drop_index('\"guarded docs\"', 'simhash')"))
        session.execute(text("SELECT simpg.create_index('\"guarded docs\"', 'simhash', 3, 5)"))
        session.commit()
        assert set(session.scalars(within)) == brute_near_ids(rows, 0x0123456789ABCDEF, 3)
    engine.dispose()
