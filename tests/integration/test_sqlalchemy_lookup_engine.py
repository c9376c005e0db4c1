"""simpg.sqlalchemy.lookup_engine: ORM lookups that keep one prepared, generic, index-backed plan."""

from __future__ import annotations

import random
from collections.abc import Iterator

import pytest
from sqlalchemy import Engine, create_engine, insert, select, text
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import Session

from simpg import bits
from simpg.sqlalchemy import async_lookup_engine, lookup_engine, url_from_dsn
from tests.integration.models import SPEC, Article, Base, K
from tests.oracles import adversarial_rows_around, brute_near_ids, extreme_queries


@pytest.fixture(scope="module")
def loaded(pg) -> Iterator[tuple[str, list[tuple[int, int]], list[int]]]:
    """A database with the models and 3000 random + adversarial fingerprints; its DSN."""
    rng = random.Random(17)
    qs = extreme_queries(rng)
    fps = adversarial_rows_around(qs, rng) + [rng.getrandbits(64) for _ in range(3000)]
    janitor = pg.new_db()
    with janitor:
        dsn = pg.server.dsn(janitor.dbname)
        engine = create_engine(url_from_dsn(dsn))
        Base.metadata.create_all(engine)
        with Session(engine) as session:
            session.execute(insert(Article).values([{"id": i, "simhash": fp} for i, fp in enumerate(fps, 1)]))
            session.commit()
        with engine.connect() as conn:
            conn.execute(text("ANALYZE articles"))
            conn.commit()
        engine.dispose()
        yield dsn, list(enumerate(fps, start=1)), qs


def within_statement_plans(engine: Engine) -> list[tuple[str, str, list[str], int, int]]:
    """The connection's prepared statements that look in the prefix columns: name, text, types, plans."""
    with engine.connect() as conn:
        return [tuple(r) for r in conn.execute(text(  # type: ignore[misc]
            "SELECT name, statement, parameter_types::text[], generic_plans, custom_plans "
            "FROM pg_prepared_statements WHERE statement LIKE :like"), {"like": f"%{SPEC.prefix_names[0]}%"})]


def test_lookups_equal_brute_force(loaded):
    dsn, rows, qs = loaded
    engine = lookup_engine(url_from_dsn(dsn))
    try:
        for k in range(K + 1):
            for q in qs + [fp for _, fp in rows[:30]]:  # more than prepare_threshold: prepared plans answer too
                with Session(engine) as session:
                    got = session.scalars(select(Article.id).where(Article.simhash.within(q, k))).all()
                assert sorted(got) == sorted(brute_near_ids(rows, q, k)), (hex(q), k)
    finally:
        engine.dispose()


def test_one_prepared_generic_plan_survives_the_requests(loaded):
    dsn, rows, qs = loaded
    engine = lookup_engine(url_from_dsn(dsn), pool_size=1)
    plain = create_engine(url_from_dsn(dsn), pool_size=1)
    try:
        for eng in (engine, plain):
            for q in qs * 3:  # one request each: a Session, a lookup, then close (a rollback)
                with Session(eng) as session:
                    session.scalars(select(Article.id).where(Article.simhash.within(q, K))).all()
        with engine.connect() as conn:
            settings = {name: conn.execute(text(f"SHOW {name}")).scalar() for name in ("plan_cache_mode",
                                                                                       "enable_seqscan", "jit")}
        assert settings == {"plan_cache_mode": "force_generic_plan", "enable_seqscan": "off", "jit": "off"}
        # one statement for every fingerprint (the SimHash type binds an Int8, however small)
        [(name, statement, types, generic, custom)] = within_statement_plans(engine)
        assert generic >= len(qs) * 3 - 5 - 1 and custom == 0, (generic, custom)
        # a plain engine's Session rolls back each request, and psycopg drops its prepared
        # statements then: nothing is kept, every request planned afresh
        assert within_statement_plans(plain) == []

        # the kept plan reads the prefix B-trees, never the table from end to end
        q = qs[5]
        lows = [lo for lo, _ in SPEC.layout.prefix_ranges(q)]
        # EXECUTE takes no bind parameters: the values as literals, in the statement's order
        values = {"bigint[]": "'{" + ",".join(map(str, lows)) + "}'::bigint[]", "bigint": f"{bits.to_db(q)}::bigint"}
        execute = f"EXECUTE {name}(" + ", ".join(values[t] for t in types) + ")"
        with engine.connect() as conn:
            plan = "\n".join(conn.execute(text("EXPLAIN (COSTS OFF) " + execute)).scalars())
            found = conn.execute(text(execute)).all()
        assert "Seq Scan" not in plan and "Bitmap Index Scan" in plan, plan
        assert {r[0] for r in found} == brute_near_ids(rows, q, K)
    finally:
        engine.dispose()
        plain.dispose()


async def test_async_lookup_engine_equals_brute_force(loaded):
    dsn, rows, qs = loaded
    engine = async_lookup_engine(url_from_dsn(dsn, async_=True))
    try:
        for q in qs * 2:
            async with AsyncSession(engine) as session:
                got = (await session.scalars(select(Article.id).where(Article.simhash.within(q, K)))).all()
                assert sorted(got) == sorted(brute_near_ids(rows, q, K)), hex(q)
        async with engine.connect() as conn:
            assert await conn.scalar(text("SHOW plan_cache_mode")) == "force_generic_plan"
            assert await conn.scalar(text("SHOW transaction_isolation")) == "read committed"
            assert (await conn.get_raw_connection()).driver_connection.autocommit
    finally:
        await engine.dispose()


@pytest.mark.parametrize("make", [lookup_engine, async_lookup_engine])
def test_a_transaction_isolation_level_is_refused(make):
    with pytest.raises(ValueError, match="isolation_level='SERIALIZABLE'"):
        make("postgresql+psycopg://app@/news", isolation_level="SERIALIZABLE")
