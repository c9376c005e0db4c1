"""simpg.sqlalchemy with AsyncSession (postgresql+psycopg_async) on a real server."""

from __future__ import annotations

import random

from sqlalchemy import insert, select, text
from sqlalchemy.ext.asyncio import AsyncSession, create_async_engine

from simpg import bits
from simpg.sqlalchemy import near_async, url_from_dsn
from tests.integration.models import CONFIG, Article, Base, K
from tests.oracles import adversarial_rows_around, extreme_queries


async def test_async_session_within_equals_brute_force(db):
    rng = random.Random(11)
    qs = extreme_queries(rng)
    fps = adversarial_rows_around(qs, rng) + [rng.getrandbits(64) for _ in range(1000)]
    rows = list(enumerate(fps, start=1))
    engine = create_async_engine(url_from_dsn(db.dsn, async_=True))
    try:
        async with engine.begin() as conn:
            await conn.run_sync(Base.metadata.create_all)  # after_create registers the index
        async with AsyncSession(engine, expire_on_commit=False) as session:
            await session.execute(
                insert(Article).values([{"id": i, "simhash": fp} for i, fp in rows])
            )
            await session.execute(
                text("SELECT setval('articles_id_seq', (SELECT max(id) FROM articles))")
            )
            await session.commit()
            for q in qs:
                for k in range(K + 1):
                    got = (
                        await session.scalars(
                            select(Article.id).where(Article.simhash.within(q, k))
                        )
                    ).all()
                    assert sorted(got) == sorted(i for i, fp in rows if bits.hamming(fp, q) <= k)
            registered = await session.scalar(text("SELECT fingerprint_config FROM simpg.indexes"))
            assert registered == CONFIG.identity

            doc = Article(
                body="Asynchronous sessions find the same near-duplicates as sync ones do."
            )
            twin = Article(
                body="Asynchronous sessions find the same near-duplicates as sync ones do!"
            )
            session.add_all([doc, twin])
            await session.commit()
            found = await near_async(session, Article, doc)
            assert doc not in found
            assert (twin in found) == (bits.hamming(doc.simhash, twin.simhash) <= K)
            by_text = await near_async(session, Article, doc.body, k=0, limit=5)
            assert doc in by_text
    finally:
        await engine.dispose()
