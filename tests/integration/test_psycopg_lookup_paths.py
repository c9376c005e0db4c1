"""Single lookups mean the same on both paths: the public API and the tested fast path (issue 15, code item 2).

simpg.psycopg.lookup.NearLookup runs a lookup through a kept psycopg RawCursor, or
through simpg.psycopg._internals where that is enabled and means the same. Each test
runs with the internals on and off and compares with brute force, in every state a
connection can be in.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import psycopg
import pytest
from psycopg.rows import dict_row

from simpg.layout import Layout
from simpg.psycopg import AsyncSimHashColumn, BusyWaitConnection, Neighbor, SimHashColumn, _internals, lookup, settings
from tests.integration.psycopg_tables import make_table, psycopg_notices_deallocate
from tests.oracles import brute_near_numbered, planted_corpus


@pytest.fixture(params=[True, False], ids=["internals", "public"])
def internals(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[bool]:
    if request.param and not _internals.tested(psycopg.__version__):
        # a psycopg this module was not tested with: the fast path must be off by itself,
        # and the lookups then take the public one, which the test checks instead
        assert _internals.ENABLED is False, f"simpg.psycopg._internals is on for untested psycopg {psycopg.__version__}"
        yield False
        return
    monkeypatch.setattr(_internals, "ENABLED", request.param)
    yield request.param


def prepared(conn: psycopg.Connection) -> dict[str, int]:
    """Prepared statements of simpg's lookups on this session: name -> generic plans."""
    return dict(conn.execute("SELECT name, generic_plans FROM pg_prepared_statements "
                             "WHERE statement LIKE '%simpg.layout_is%' AND statement NOT LIKE '%unnest%'").fetchall())


def test_every_connection_state(db: object, internals: bool) -> None:
    dsn = db.dsn  # type: ignore[attr-defined]
    rows, queries = planted_corpus(31, 3, n=150)
    expected = [brute_near_numbered(rows, q, 3) for q in queries]
    with psycopg.connect(dsn, autocommit=True) as conn:
        index = make_table(conn, Layout(3, (5,)), rows)
        info = index.info
        near = lookup.NearLookup(conn)
        assert [near.near(info, q, 3) for q in queries] == expected
        assert [index.near(q, 3) for q in queries] == expected
        names = prepared(conn)
        assert len(names) >= 1 and all(n.startswith("simpg_near_") == internals for n in lookup_names(names))
        conn.execute("DEALLOCATE ALL")  # as a pool's reset does: prepared again
        if internals or psycopg_notices_deallocate():  # the fast path, or psycopg 3.3.6+, prepare again
            assert [near.near(info, q, 3) for q in queries] == expected
        else:  # psycopg's own prepared statements before 3.3.6 (psycopg#1408): lost until psycopg clears them
            with pytest.raises(psycopg.errors.InvalidSqlStatementName):
                near.near(info, queries[0], 3)
            conn.execute("ROLLBACK")  # psycopg clears its statements on seeing one (a warning: no transaction)
        with conn.pipeline():
            assert [near.near(info, q, 3) for q in queries[:5]] == expected[:5]
        with conn.transaction():
            assert [near.near(info, q, 3) for q in queries[:5]] == expected[:5]
        unprepared = lookup.NearLookup(conn)
        before = prepared(conn)
        assert [unprepared.near(info, q, 3, prepare=False) for q in queries] == expected
        assert prepared(conn).keys() == before.keys()  # nothing new prepared
        # a caller's row factory does not reach simpg's cursor
        conn.row_factory = dict_row  # type: ignore[assignment]
        assert [near.near(info, q, 3) for q in queries[:3]] == expected[:3]
    with psycopg.connect(dsn) as conn:  # not autocommit
        index = SimHashColumn(conn, "docs")
        info = index.info
        conn.rollback()
        near = lookup.NearLookup(conn)
        assert near.near(info, queries[0], 3) == expected[0]
        # idle: the lookup opened the transaction the caller then ends, as a cursor does
        assert conn.info.transaction_status == psycopg.pq.TransactionStatus.INTRANS
        assert [near.near(info, q, 3) for q in queries] == expected
        with pytest.raises(psycopg.errors.DivisionByZero):
            conn.execute("SELECT 1 / 0")
        with pytest.raises(psycopg.errors.InFailedSqlTransaction):  # as psycopg says it
            near.near(info, queries[0], 3)
        conn.rollback()
        assert [near.near(info, q, 3) for q in queries] == expected
        conn.rollback()


def lookup_names(names: dict[str, int]) -> list[str]:
    return [n for n in names if n.startswith(("simpg_near_", "_pg3_"))]


def test_order_of_ids_that_are_null_repeated_or_text(db: object, internals: bool) -> None:
    rows, queries = planted_corpus(32, 3, n=100)
    conn = db.conn  # type: ignore[attr-defined]
    make_table(conn, Layout(3, (5,)), rows)
    conn.execute("ALTER TABLE docs ADD COLUMN ref integer")
    conn.execute("UPDATE docs SET ref = CASE WHEN id % 3 = 0 THEN NULL ELSE -(id % 7) END")
    by_ref = SimHashColumn(conn, "docs", key_column="ref")
    near = lookup.NearLookup(conn)
    for q in queries:
        found = near.near(by_ref.info, q, 3)
        assert found == sorted(found, key=lambda n: (n.distance, n.id is None, n.id or 0))
        assert sorted(n.distance for n in found) == [n.distance for n in brute_near_numbered(rows, q, 3)]
    conn.execute("CREATE TABLE named (name text PRIMARY KEY, simhash bigint)")
    conn.execute("INSERT INTO named SELECT 'row ' || id, simhash FROM docs")
    named = SimHashColumn(conn, "named")
    named.create(3, 5)
    for q in queries:
        want = [Neighbor(f"row {n.id}", n.distance) for n in brute_near_numbered(rows, q, 3)]
        # ordered by the server (C collation in these servers: byte order)
        assert near.near(named.info, q, 3) == sorted(want, key=lambda n: (n.distance, n.id))


def test_threads_sharing_one_lookup(conn: psycopg.Connection, internals: bool) -> None:
    rows, queries = planted_corpus(33, 3, n=100)
    index = make_table(conn, Layout(3, (5,)), rows)
    near = lookup.NearLookup(conn)
    work = queries * 20
    with ThreadPoolExecutor(4) as pool:
        got = list(pool.map(lambda q: near.near(index.info, q, 3), work))
    assert got == [brute_near_numbered(rows, q, 3) for q in work]


def test_lookup_connection_runs_generic_plans(db: object, internals: bool) -> None:
    dsn = db.dsn  # type: ignore[attr-defined]
    rows, queries = planted_corpus(34, 3, n=200)
    with psycopg.connect(dsn, autocommit=True) as setup:
        make_table(setup, Layout(3, (5,)), rows)
    for busy_wait in (0, 0.001):
        with SimHashColumn.connect(dsn, "docs", busy_wait=busy_wait) as index:
            conn = index.conn
            conn.execute(settings.LOOKUP.statement, settings.LOOKUP.params)  # the bound form, again
            near = lookup.NearLookup(conn)
            for _ in range(2):
                expected = [brute_near_numbered(rows, q, 3) for q in queries]
                assert [near.near(index.info, q, 3) for q in queries] == expected
            assert max(prepared(conn).values()) > 0
            if busy_wait:
                assert isinstance(conn, BusyWaitConnection)
                assert conn.execute("SELECT pg_sleep(0.01), 7").fetchone() == ("", 7)


def test_local_settings_are_bound_and_put_back(conn: psycopg.Connection) -> None:
    local = settings.LocalSettings(enable_seqscan="off", work_mem="7MB")
    conn.execute("SET work_mem = '5MB'")
    with conn.transaction():
        with conn.transaction():  # a savepoint: local settings outlive it, so they are put back
            saved = conn.execute(local.statement, local.params).fetchone()
            assert saved is not None and saved[:2] == ("on", "5MB")
            assert conn.execute("SHOW work_mem").fetchone() == ("7MB",)
            conn.execute(local.restore_statement, local.restore_params(saved))
        assert conn.execute("SHOW work_mem").fetchone() == ("5MB",)
        assert conn.execute("SHOW enable_seqscan").fetchone() == ("on",)
    odd = settings.LocalSettings(application_name="it's \"odd\"; --")
    with conn.transaction():
        conn.execute(odd.statement, odd.params)
        assert conn.execute("SHOW application_name").fetchone() == ("it's \"odd\"; --",)


async def test_async_lookup(db: object, internals: bool) -> None:
    rows, queries = planted_corpus(35, 3, n=150)
    expected = [brute_near_numbered(rows, q, 3) for q in queries]
    with psycopg.connect(db.dsn, autocommit=True) as setup:  # type: ignore[attr-defined]
        make_table(setup, Layout(3, (5,)), rows)
    async with await psycopg.AsyncConnection.connect(db.dsn, autocommit=True) as conn:  # type: ignore[attr-defined]
        index = AsyncSimHashColumn(conn, "docs")
        info = await index.info()
        near = lookup.AsyncNearLookup(conn)
        assert [await near.near(info, q, 3) for q in queries] == expected
        assert await asyncio.gather(*(near.near(info, q, 3) for q in queries)) == expected  # tasks share it
        await conn.execute("DEALLOCATE ALL")
        if not (internals or psycopg_notices_deallocate()):  # see test_every_connection_state
            with pytest.raises(psycopg.errors.InvalidSqlStatementName):
                await near.near(info, queries[0], 3)
            await conn.execute("ROLLBACK")
        async with conn.pipeline():
            assert [await near.near(info, q, 3) for q in queries[:5]] == expected[:5]
        assert [await index.near(q, 3) for q in queries] == expected
    async with await psycopg.AsyncConnection.connect(db.dsn) as conn:  # type: ignore[attr-defined]
        index = AsyncSimHashColumn(conn, "docs")
        info = await index.info()
        await conn.rollback()
        near = lookup.AsyncNearLookup(conn)
        assert await near.near(info, queries[0], 3) == expected[0]
        assert conn.info.transaction_status == psycopg.pq.TransactionStatus.INTRANS
        await conn.rollback()


def test_a_rolled_back_transaction_does_not_break_the_next_lookup(db: object, internals: bool) -> None:
    # psycopg sends DEALLOCATE ALL when a transaction or savepoint rolls back, once it
    # has prepared statements of its own (here near_many's); that removed 0.1.1's
    # fast-path statement too, and the next lookup in a transaction failed with
    # InvalidSqlStatementName, aborting the caller's transaction
    dsn = db.dsn  # type: ignore[attr-defined]
    rows, queries = planted_corpus(36, 3, n=100)
    expected = [brute_near_numbered(rows, q, 3) for q in queries]
    with psycopg.connect(dsn, autocommit=True) as conn:
        index = make_table(conn, Layout(3, (5,)), rows)
        near = lookup.NearLookup(conn)
        assert index.near_many(queries, 3) == expected
        assert [index.near(q, 3) for q in queries] == expected
        assert [near.near(index.info, q, 3) for q in queries] == expected
        for _ in range(2):
            with pytest.raises(psycopg.errors.DivisionByZero), conn.transaction():
                conn.execute("SELECT 1 / 0")
            with conn.transaction():
                assert [index.near(q, 3) for q in queries] == expected
                assert [near.near(index.info, q, 3) for q in queries] == expected
            assert [index.near(q, 3) for q in queries] == expected  # outside: prepared again
            assert [near.near(index.info, q, 3) for q in queries] == expected
    with psycopg.connect(dsn) as conn:  # not autocommit
        index = SimHashColumn(conn, "docs")
        near = lookup.NearLookup(conn)
        assert index.near_many(queries, 3) == expected
        for _ in range(2):
            assert [index.near(q, 3) for q in queries] == expected
            assert [near.near(index.info, q, 3) for q in queries] == expected
            with pytest.raises(psycopg.errors.DivisionByZero):
                conn.execute("SELECT 1 / 0")
            conn.rollback()
