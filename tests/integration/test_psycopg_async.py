"""AsyncSimHashColumn against brute force, and its errors: the async twin of test_psycopg_index."""

from __future__ import annotations

import numpy as np
import psycopg
import pytest
from psycopg import sql

from simpg import bits
from simpg.exc import ExtensionNotInstalled, InvalidFingerprint, InvalidLayout, SimpgError
from simpg.layout import Layout
from simpg.psycopg import AsyncSimHashColumn, Fingerprint, Neighbor, _internals, register_simpg_async
from tests.oracles import (
    brute_clusters_numbered,
    brute_near_numbered,
    brute_pairs_numbered,
    brute_representatives_numbered,
    planted_corpus,
)


@pytest.mark.parametrize("layout", [Layout(3, (5,)), Layout(3, (4, 4))], ids=lambda layout: layout.name)
async def test_async_handle_equals_brute_force(db: object, layout: Layout) -> None:
    rows, queries = planted_corpus(21, layout.k, n=200)
    async with await psycopg.AsyncConnection.connect(db.dsn, autocommit=True) as conn:  # type: ignore[attr-defined]
        await conn.execute("CREATE TABLE docs (id bigserial PRIMARY KEY, simhash bigint)")
        index = AsyncSimHashColumn(conn, "docs")
        assert await index.create(layout.k, *layout.levels) == layout
        assert await index.add(np.array(rows, dtype=np.uint64)) == len(rows)
        for k in (0, layout.k):
            expected = [brute_near_numbered(rows, q, k) for q in queries]
            assert [await index.near(q, k) for q in queries] == expected
            assert await index.near_many(queries, k) == expected
            pairs = [p async for p in index.pairs(k)]
            assert len(pairs) == len(set(pairs)) and set(pairs) == brute_pairs_numbered(rows, k)
            clusters = await index.clusters(k, method="components")
            expected_clusters = brute_clusters_numbered(len(rows), brute_pairs_numbered(rows, k))
            assert sorted(clusters, key=lambda g: (-len(g), g[0])) == expected_clusters
            clusters = await index.clusters(k)
            assert sorted(clusters, key=lambda g: (-len(g), g[0])) == brute_representatives_numbered(rows, k)
        stats = await index.stats()
        assert (stats.rows, stats.layout) == (len(rows), layout)
        assert await index.layout() == layout


async def test_async_database_errors_come_out_translated_or_as_they_are(db: object) -> None:
    async with await psycopg.AsyncConnection.connect(db.dsn, autocommit=True) as conn:  # type: ignore[attr-defined]
        await conn.execute("CREATE TABLE docs (id bigserial PRIMARY KEY, simhash bigint)")
        index = AsyncSimHashColumn(conn, "docs")
        await index.create(3, 5)
        await index.add([1, 2, 3])
        with pytest.raises(SimpgError, match='relation "missing" does not exist') as clear:
            await AsyncSimHashColumn(conn, "missing").stats()
        assert isinstance(clear.value.__cause__, psycopg.errors.UndefinedTable)
        with pytest.raises(psycopg.errors.DivisionByZero) as other:
            await index.fetch_all(sql.SQL("t.id / 0 = 1"))
        assert other.value.__cause__ is None
        assert await index.near(1, 0) == [Neighbor(1, 0)]


async def test_async_lookup_connection(db: object) -> None:
    rows, queries = planted_corpus(22, 3, n=200)
    async with await psycopg.AsyncConnection.connect(db.dsn, autocommit=True) as conn:  # type: ignore[attr-defined]
        await conn.execute("CREATE TABLE docs (id bigserial PRIMARY KEY, simhash bigint)")
        index = AsyncSimHashColumn(conn, "docs")
        await index.create(3, 5)
        await index.add(rows)
    async with await AsyncSimHashColumn.connect(db.dsn, "docs") as index:  # type: ignore[attr-defined]
        cur = await index.conn.execute("SHOW plan_cache_mode")
        assert await cur.fetchone() == ("force_generic_plan",)
        expected = [brute_near_numbered(rows, q, 3) for q in queries]
        for _ in range(2):
            assert [await index.near(q, 3) for q in queries] == expected
        assert await index.near_many(queries, 3) == expected
        assert set([p async for p in index.pairs(3)]) == brute_pairs_numbered(rows, 3)
        # re-created elsewhere with more, then fewer tables: the handle follows
        async with await psycopg.AsyncConnection.connect(db.dsn, autocommit=True) as other:  # type: ignore[attr-defined]
            for blocks in (6, 4):
                await AsyncSimHashColumn(other, "docs").drop()
                await AsyncSimHashColumn(other, "docs").create(3, blocks)
                assert [await index.near(q, 3) for q in queries] == expected
                assert await index.layout() == Layout(3, (blocks,))
            await AsyncSimHashColumn(other, "docs").drop()
            await AsyncSimHashColumn(other, "docs").create(3, 5)
            assert await index.near_many(queries, 3) == expected
    assert index.conn.closed

async def test_async_errors(db: object) -> None:
    async with await psycopg.AsyncConnection.connect(db.dsn, autocommit=True) as conn:  # type: ignore[attr-defined]
        await conn.execute("CREATE TABLE docs (id bigserial PRIMARY KEY, simhash bigint)")
        index = AsyncSimHashColumn(conn, "docs")
        with pytest.raises(SimpgError, match="no simpg index"):
            await index.near(1)
        await index.create(2, 4)
        with pytest.raises(InvalidLayout, match="k=3 is above the radius k=2"):
            await index.near(1, 3)
        with pytest.raises(InvalidLayout, match="k=3 is above"):
            [p async for p in index.pairs(3)]
        with pytest.raises(InvalidFingerprint, match="got -1"):
            await index.near_many([5, -1])
        with pytest.raises(InvalidFingerprint):
            await index.add([1, 2**64])
        assert (await index.stats()).rows == 0
        await index.drop()
        with pytest.raises(SimpgError, match="no simpg index"):
            await index.refresh()


async def test_register_simpg_async(db: object, bare_db: object) -> None:
    async with await psycopg.AsyncConnection.connect(db.dsn, autocommit=True) as conn:  # type: ignore[attr-defined]
        await register_simpg_async(conn)
        cur = await conn.execute("SELECT %s::bigint", [Fingerprint(2**63 + 1)])
        assert await cur.fetchone() == (bits.to_db(2**63 + 1),)
    async with await psycopg.AsyncConnection.connect(bare_db.dsn, autocommit=True) as conn:  # type: ignore[attr-defined]
        with pytest.raises(ExtensionNotInstalled):
            await register_simpg_async(conn)


@pytest.mark.skipif(not _internals.ENABLED, reason="simpg.psycopg._internals is off")
async def test_async_near_skips_the_cursor_only_where_it_means_the_same(db: object) -> None:
    # the async twin of test_near_skips_the_cursor_only_where_it_means_the_same
    rows, queries = planted_corpus(23, 3, n=100)
    expected = [brute_near_numbered(rows, q, 3) for q in queries]
    statements = "SELECT count(*) FROM pg_prepared_statements WHERE name LIKE 'simpg_near_%'"
    async with await psycopg.AsyncConnection.connect(db.dsn, autocommit=True) as conn:  # type: ignore[attr-defined]
        await conn.execute("CREATE TABLE docs (id bigserial PRIMARY KEY, simhash bigint)")
        index = AsyncSimHashColumn(conn, "docs")
        await index.create(3, 5)
        await index.add(rows)
        assert [await index.near(q, 3) for q in queries] == expected
        assert await (await conn.execute(statements)).fetchone() == (1,)
        await conn.execute("DEALLOCATE ALL")
        assert [await index.near(q, 3) for q in queries] == expected
        assert await (await conn.execute(statements)).fetchone() == (1,)
        async with conn.pipeline():  # psycopg's cursor
            assert [await index.near(q, 3) for q in queries] == expected
    async with await psycopg.AsyncConnection.connect(db.dsn) as conn:  # type: ignore[attr-defined]
        index = AsyncSimHashColumn(conn, "docs")
        await index.refresh()
        await conn.rollback()
        assert await index.near(queries[0], 3) == expected[0]  # idle: the cursor opens the transaction
        assert conn.info.transaction_status == psycopg.pq.TransactionStatus.INTRANS
        assert await (await conn.execute(statements)).fetchone() == (0,)
        assert [await index.near(q, 3) for q in queries] == expected  # in a transaction: the cursor
        assert await (await conn.execute(statements)).fetchone() == (0,)
