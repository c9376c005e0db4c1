"""SimHashColumn (psycopg, sync) against brute force on a real PostgreSQL, for several layouts."""

from __future__ import annotations

import signal

import numpy as np
import psycopg
import pytest
from psycopg import sql

from simpg import bits
from simpg.exc import ExtensionNotInstalled, InvalidFingerprint, InvalidLayout, SimpgError
from simpg.layout import Layout
from simpg.psycopg import (
    LOOKUP_SETTINGS,
    BusyWaitConnection,
    Fingerprint,
    Neighbor,
    Pair,
    SimHashColumn,
    _internals,
    register_simpg,
)
from tests.integration.psycopg_tables import make_table, psycopg_notices_deallocate
from tests.oracles import (
    brute_clusters_numbered,
    brute_near_numbered,
    brute_pairs_numbered,
    brute_representatives_numbered,
    planted_corpus,
)

LAYOUTS = [Layout(3, (4,)), Layout(3, (5,)), Layout(3, (4, 4)), Layout(4, (6,))]


def flip(value: int, positions: list[int]) -> int:
    for p in positions:
        value ^= 1 << p
    return value


@pytest.mark.parametrize("layout", LAYOUTS, ids=lambda layout: layout.name)
def test_lookups_pairs_and_clusters_equal_brute_force(conn: psycopg.Connection, layout: Layout) -> None:
    rows, queries = planted_corpus(layout.tables, layout.k)
    index = make_table(conn, layout, rows)
    for k in range(layout.k + 1):
        expected = [brute_near_numbered(rows, q, k) for q in queries]
        assert [index.near(q, k) for q in queries] == expected  # libpq fast path (simpg.psycopg.lookup)
        with conn.pipeline():  # psycopg's cursor
            assert [index.near(q, k) for q in queries] == expected
        assert index.near_many(queries, k) == expected
        assert index.near_many(np.array(queries, dtype=np.uint64), k) == expected
        pairs = list(index.pairs(k))
        assert len(pairs) == len(set(pairs))
        assert set(pairs) == brute_pairs_numbered(rows, k)
        clusters = index.clusters(k, method="components")
        expected = brute_clusters_numbered(len(rows), brute_pairs_numbered(rows, k))
        assert sorted(clusters, key=lambda g: (-len(g), g[0])) == expected
        clusters = index.clusters(k)  # around representatives, by id
        assert sorted(clusters, key=lambda g: (-len(g), g[0])) == brute_representatives_numbered(rows, k)
    # k defaults to the index's radius
    assert index.near(queries[0]) == brute_near_numbered(rows, queries[0], layout.k)


def test_pairs_of_equal_fingerprints_and_rows_without_one(conn: psycopg.Connection) -> None:
    fp = 2**63 + 12345  # stored as a negative bigint
    index = make_table(conn, Layout(3, (5,)), [fp, fp, fp, flip(fp, [63]), 77])
    conn.execute("INSERT INTO docs (id, simhash) VALUES (6, NULL)")
    assert set(index.pairs(0)) == {Pair(1, 2, 0), Pair(1, 3, 0), Pair(2, 3, 0)}
    assert index.clusters(1) == [[1, 2, 3, 4]]  # all within 1 of id 1
    assert index.clusters(1, method="components") == [[1, 2, 3, 4]]
    with pytest.raises(SimpgError, match="method must be one of 'representative', 'components', got 'x'"):
        index.clusters(1, method="x")
    assert index.near(fp, 0) == [Neighbor(1, 0), Neighbor(2, 0), Neighbor(3, 0)]
    ids, fps = index.fetch_all()
    assert sorted(ids.tolist()) == [1, 2, 3, 4, 5]


def test_where_limits_pairs_and_clusters(conn: psycopg.Connection) -> None:
    index = make_table(conn, Layout(3, (5,)), [10, 11, 10, 11])
    conn.execute("UPDATE docs SET note = CASE WHEN id <= 2 THEN 'a' ELSE 'b' END")
    where = sql.SQL("t.note = {}").format(sql.Literal("a"))
    assert list(index.pairs(1, where=where)) == [Pair(1, 2, 1)]
    assert index.clusters(1, where=where) == [[1, 2]]


def test_add_fingerprints_and_columns(conn: psycopg.Connection) -> None:
    conn.execute("CREATE TABLE notes (id bigserial PRIMARY KEY, simhash bigint, note text NOT NULL)")
    index = SimHashColumn(conn, "notes")
    index.create(3, 4)
    assert index.add(np.array([1, 2**64 - 1], dtype=np.uint64), columns={"note": ["x", "y"]}) == 2
    assert index.add([2**63], columns={"note": ["z"]}) == 1
    stored = conn.execute("SELECT simhash, note FROM notes ORDER BY id").fetchall()
    assert stored == [(1, "x"), (-1, "y"), (-(2**63), "z")]
    with pytest.raises(SimpgError, match="column 'note' has 1 values for 2 fingerprints"):
        index.add([5, 6], columns={"note": ["only one"]})


@pytest.mark.parametrize("bad", [-1, 2**64, None, "7", 1.5])
def test_add_is_all_or_nothing(conn: psycopg.Connection, bad: object) -> None:
    index = make_table(conn, Layout(3, (4,)), [1, 2])
    conn.execute("CREATE TABLE more (id bigserial PRIMARY KEY, simhash bigint)")
    more = SimHashColumn(conn, "more")
    more.create(3, 4)
    more.add([5])
    with pytest.raises(InvalidFingerprint, match="expected 64-bit fingerprint"):
        more.add([6, 7, bad, 8])
    assert conn.execute("SELECT count(*) FROM more").fetchone() == (1,)
    assert len(index.near(1, 3)) == 2


def test_add_texts_uses_the_index_config(conn: psycopg.Connection) -> None:
    from simpg.fingerprint import FingerprintConfig, fingerprint

    conn.execute("CREATE TABLE texts (id bigserial PRIMARY KEY, simhash bigint, body text)")
    index = SimHashColumn(conn, "texts")
    config = FingerprintConfig(ngram=2)
    index.create(3, 4, config=config)
    docs = ["the quick brown fox jumps over the lazy dog", "a completely different sentence about tea"]
    index.add(texts=docs, columns={"body": docs})
    stored = [bits.from_db(r[0]) for r in conn.execute("SELECT simhash FROM texts ORDER BY id")]
    assert stored == [fingerprint(d, config) for d in docs]
    assert index.stats().fingerprint_config == config.identity
    with pytest.raises(SimpgError, match="differs from"):
        index.add(texts=docs, config=FingerprintConfig(ngram=3))


def test_stats(conn: psycopg.Connection) -> None:
    layout = Layout(3, (4, 4))
    index = make_table(conn, layout, list(range(100)))
    stats = index.stats()
    assert (stats.rows, stats.rows_exact, stats.layout) == (100, True, layout)
    assert stats.table == "public.docs" and stats.key_column == "id"
    assert len(stats.index_bytes) == layout.tables
    assert all(size > 0 for size in stats.index_bytes.values())
    assert stats.total_index_bytes == sum(stats.index_bytes.values())
    assert stats.as_dict()["layout"] == "k3:4x4"
    assert index.stats(exact=False).rows_exact is False


def test_create_drop_and_refresh(conn: psycopg.Connection) -> None:
    index = make_table(conn, Layout(3, (4,)), [1, 2, 3])
    with pytest.raises(SimpgError, match="already has a simpg index"):
        index.create(3, 5)
    index.drop()
    with pytest.raises(SimpgError, match=r"no simpg index on (public\.)?docs\.simhash"):
        index.near(1, 3)
    assert index.create(2, 5) == Layout(2, (5,))
    assert index.near(1, 2) == brute_near_numbered([1, 2, 3], 1, 2)
    # another handle re-creates the index with another layout; refresh() picks it up
    other = SimHashColumn(conn, "docs")
    other.drop()
    other.create(3, 6)
    assert index.refresh().layout == Layout(3, (6,))


def test_bad_input_is_named(conn: psycopg.Connection) -> None:
    index = make_table(conn, Layout(3, (4,)), [1, 2, 3])
    with pytest.raises(InvalidLayout, match="k=4 is above the radius k=3 .* docs.simhash"):
        index.near(1, 4)
    with pytest.raises(InvalidLayout, match="k=4 is above"):
        index.near_many([1], 4)
    with pytest.raises(InvalidLayout, match="k=4 is above"):
        index.pairs(4)
    with pytest.raises(InvalidLayout, match="non-negative integer, got -1"):
        index.near(1, -1)
    with pytest.raises(InvalidLayout, match="non-negative integer, got '2'"):
        index.near(1, "2")  # type: ignore[arg-type]
    for bad in (None, -1, 2**64, "1", 1.0, True):
        with pytest.raises(InvalidFingerprint, match="expected 64-bit fingerprint"):
            index.near(bad)  # type: ignore[arg-type]
        with pytest.raises(InvalidFingerprint, match="expected 64-bit fingerprint"):
            index.near_many([1, bad])  # type: ignore[list-item]
    with pytest.raises(InvalidFingerprint, match="expected a sequence"):
        index.near_many("123")  # type: ignore[arg-type]
    assert index.near_many([]) == []


def test_tables_without_index_or_key(conn: psycopg.Connection) -> None:
    conn.execute("CREATE TABLE plain (id bigint PRIMARY KEY, simhash bigint)")
    with pytest.raises(SimpgError, match=r"no simpg index on (public\.)?plain\.simhash"):
        SimHashColumn(conn, "plain").near(1)
    with pytest.raises(SimpgError, match='relation "missing" does not exist'):
        SimHashColumn(conn, "missing").near(1)
    conn.execute("CREATE TABLE nokey (simhash bigint, label text)")
    nokey = SimHashColumn(conn, "nokey")
    nokey.create(3, 4)
    with pytest.raises(SimpgError, match="no single-column primary key; pass key_column="):
        nokey.near(1)
    conn.execute("INSERT INTO nokey VALUES (5, 'five'), (4, 'four'), (5, 'five again')")
    named = SimHashColumn(conn, "nokey", key_column="label")
    assert named.near(5, 1) == [Neighbor("five", 0), Neighbor("five again", 0), Neighbor("four", 1)]
    # ids without an integer type come in the table's order, not sorted
    assert {(frozenset((p.a, p.b)), p.distance) for p in named.pairs(1)} == {
        (frozenset(("five", "five again")), 0), (frozenset(("five", "four")), 1),
        (frozenset(("five again", "four")), 1)}
    assert sorted(named.clusters(1)[0]) == ["five", "five again", "four"]
    with pytest.raises(SimpgError, match="column nothing of table nokey does not exist"):
        SimHashColumn(conn, "nokey", key_column="nothing").near(1)


def test_database_errors_come_out_translated_or_as_they_are(conn: psycopg.Connection) -> None:
    # one context translates for every method (simpg.exc.translated)
    index = make_table(conn, Layout(3, (5,)), [1, 2, 3])
    with pytest.raises(SimpgError, match='relation "missing" does not exist') as clear:
        SimHashColumn(conn, "missing").stats()
    assert isinstance(clear.value.__cause__, psycopg.errors.UndefinedTable)
    with pytest.raises(psycopg.errors.DivisionByZero) as other:
        index.fetch_all(sql.SQL("t.id / 0 = 1"))
    assert other.value.__cause__ is None  # re-raised as it was, not as its own cause
    assert index.near(1, 0) == [Neighbor(1, 0)]  # the savepoint rolled back; the handle works on


def test_schema_qualified_and_quoted_names(conn: psycopg.Connection) -> None:
    conn.execute('CREATE SCHEMA "My Schema"')
    conn.execute('CREATE TABLE "My Schema"."Docs" ("Id" integer PRIMARY KEY, "Fp" bigint)')
    conn.execute('INSERT INTO "My Schema"."Docs" VALUES (1, 10), (2, 11), (3, -1)')
    index = SimHashColumn(conn, '"My Schema"."Docs"', "Fp")
    index.create(3, 4)
    assert index.near(10, 1) == [Neighbor(1, 0), Neighbor(2, 1)]
    assert list(index.pairs(1)) == [Pair(1, 2, 1)]
    assert index.stats().table == "My Schema.Docs"


def test_near_many_in_a_transaction_keeps_the_callers_settings(db: object) -> None:
    dsn = db.dsn  # type: ignore[attr-defined]
    with psycopg.connect(dsn) as conn:  # not autocommit: a transaction is open
        conn.execute("CREATE TABLE docs (id bigint PRIMARY KEY, simhash bigint)")
        conn.execute("INSERT INTO docs SELECT i, i FROM generate_series(1, 50) AS i")
        index = SimHashColumn(conn, "docs")
        index.create(3, 4)
        conn.execute("SET LOCAL enable_seqscan = on")
        assert index.near_many([1, 2], 0) == [[Neighbor(1, 0)], [Neighbor(2, 0)]]
        assert conn.execute("SHOW enable_seqscan").fetchone() == ("on",)
        assert conn.info.transaction_status == psycopg.pq.TransactionStatus.INTRANS
        conn.rollback()


def test_unprepared_handle(conn: psycopg.Connection) -> None:
    rows, queries = planted_corpus(9, 3, n=50)
    make_table(conn, Layout(3, (4,)), rows)
    index = SimHashColumn(conn, "docs", prepare=False)
    assert index.near_many(queries, 3) == [brute_near_numbered(rows, q, 3) for q in queries]
    assert [index.near(q, 3) for q in queries] == [brute_near_numbered(rows, q, 3) for q in queries]


def test_register_simpg_sends_fingerprints_signed(conn: psycopg.Connection) -> None:
    register_simpg(conn)
    assert conn.execute("SELECT %s::bigint, %s", [Fingerprint(2**63), Fingerprint(5)]).fetchone() == (-(2**63), 5)
    with conn.cursor(binary=True) as cur:
        assert cur.execute("SELECT %s", [Fingerprint(2**64 - 1)]).fetchone() == (-1,)
    assert repr(Fingerprint(3)) == "Fingerprint(3)" and Fingerprint(2**64 - 1).db == -1
    with pytest.raises(InvalidFingerprint, match="got -1"):
        Fingerprint(-1)
    # plain ints are untouched: no loader on int8
    assert conn.execute("SELECT 9223372036854775807::bigint").fetchone() == (2**63 - 1,)


def test_register_simpg_without_simpg(bare_db: object) -> None:
    conn = bare_db.conn  # type: ignore[attr-defined]
    with pytest.raises(ExtensionNotInstalled, match="simpg is not installed"):
        register_simpg(conn)
    conn.execute("CREATE TABLE docs (id bigint PRIMARY KEY, simhash bigint)")
    with pytest.raises(ExtensionNotInstalled):
        SimHashColumn(conn, "docs").near(1)


def test_create_index_builds_full_prefix_btrees(conn: psycopg.Connection) -> None:
    # simpg.create_index and the Python DDL (SQLAlchemy, Alembic, backfill) agree
    from simpg.sqlalchemy.index import PREFIX_INDEX_FILLFACTOR

    make_table(conn, Layout(3, (5,)), [1, 2, 3])
    options = conn.execute(
        "SELECT c.reloptions FROM pg_index AS x JOIN pg_class AS c ON c.oid = x.indexrelid "
        "WHERE x.indrelid = 'docs'::regclass AND NOT x.indisprimary"
    ).fetchall()
    assert options == [([f"fillfactor={PREFIX_INDEX_FILLFACTOR}"],)] * 10


def test_near_many_keeps_rows_that_share_an_id(conn: psycopg.Connection) -> None:
    # key_column need not be unique: each row is its own answer, as near() returns it
    conn.execute("CREATE TABLE tagged (id bigint PRIMARY KEY, tag text, simhash bigint)")
    fps = [5, 5, 5 ^ (1 << 63), 7, 2**64 - 1]
    conn.execute("INSERT INTO tagged SELECT i, 't' || (i %% 2), fp FROM unnest(%s::bigint[]) "
                 "WITH ORDINALITY AS u(fp, i)", [[bits.to_db(f) for f in fps]])
    SimHashColumn(conn, "tagged").create(3, 5)
    index = SimHashColumn(conn, "tagged", key_column="tag")
    queries = [5, 6, 2**64 - 2, 1 << 40]
    many = index.near_many(queries, 3)
    assert many == [index.near(q, 3) for q in queries]
    assert many[0] == [Neighbor("t0", 0), Neighbor("t1", 0), Neighbor("t0", 1), Neighbor("t1", 1)]


@pytest.mark.parametrize("busy_wait", [0, 0.001])
def test_lookup_connection(db: object, busy_wait: float) -> None:
    dsn = db.dsn  # type: ignore[attr-defined]
    rows, queries = planted_corpus(11, 3, n=300)
    with psycopg.connect(dsn, autocommit=True) as setup:
        make_table(setup, Layout(3, (5,)), rows)
    with SimHashColumn.connect(dsn, "docs", busy_wait=busy_wait) as index:
        conn = index.conn
        assert isinstance(conn, BusyWaitConnection) == bool(busy_wait)
        settings = dict(conn.execute(
            "SELECT name, setting FROM pg_settings WHERE name = ANY(%s)",
            [list(LOOKUP_SETTINGS)]).fetchall())
        assert settings == LOOKUP_SETTINGS
        for _ in range(2):  # the second round runs the generic plans
            assert [index.near(q, 3) for q in queries] == [brute_near_numbered(rows, q, 3) for q in queries]
        assert conn.execute("SELECT generic_plans FROM pg_prepared_statements "
                            "WHERE statement LIKE '%BETWEEN%' AND statement NOT LIKE '%unnest%'").fetchone()[0] > 0
        assert index.near_many(queries, 3) == [brute_near_numbered(rows, q, 3) for q in queries]
        # whole-table reads still scan the table, whatever the session says
        assert set(index.pairs(3)) == brute_pairs_numbered(rows, 3)
        with conn.transaction():
            index.fetch_all()
            assert conn.execute("SHOW enable_seqscan").fetchone() == ("off",)
    assert conn.closed


def test_busy_wait_connection_behaves_like_psycopg(db: object) -> None:
    dsn = db.dsn  # type: ignore[attr-defined]
    rows, queries = planted_corpus(12, 3, n=200)
    with BusyWaitConnection.connect(dsn, autocommit=True) as conn:
        index = make_table(conn, Layout(3, (4,)), rows)
        assert index.near_many(queries, 3) == [brute_near_numbered(rows, q, 3) for q in queries]
        assert index.add([5, 6], columns={"id": [10_001, 10_002]}) == 2  # COPY
        # longer than the budget: the rest of the wait is psycopg's
        conn.busy_wait = 0.0005
        assert conn.execute("SELECT pg_sleep(0.02), 7").fetchone() == ("", 7)
        assert conn.execute("SELECT count(*) FROM generate_series(1, 200000)").fetchone() == (200_000,)
        with pytest.raises(psycopg.errors.DivisionByZero):
            conn.execute("SELECT 1 / 0")
        with conn.transaction():  # server-side cancellation reaches a polling client too
            conn.execute("SET LOCAL statement_timeout = '10ms'")
            with pytest.raises(psycopg.errors.QueryCanceled):
                conn.execute("SELECT pg_sleep(1)")
            raise psycopg.Rollback
        conn.busy_wait = 0  # waits as psycopg does
        assert conn.execute("SELECT 1").fetchone() == (1,)
        conn.busy_wait = -1
        with pytest.raises(SimpgError, match="busy_wait must be a number of seconds from 0 to 1, got -1"):
            conn.execute("SELECT 1")
        conn.busy_wait = 1.0
        # Ctrl-C while polling: the statement is cancelled and the connection stays usable
        def interrupt(*_: object) -> None:
            raise KeyboardInterrupt
        previous = signal.signal(signal.SIGALRM, interrupt)
        try:
            signal.setitimer(signal.ITIMER_REAL, 0.05)
            with pytest.raises(KeyboardInterrupt):
                conn.execute("SELECT pg_sleep(3)")
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)
        assert conn.execute("SELECT 2").fetchone() == (2,)
    for bad in [-0.1, 2, "1ms", True, None]:
        with pytest.raises(SimpgError, match=f"got {bad!r}"):
            SimHashColumn.connect(dsn, "docs", busy_wait=bad)  # type: ignore[arg-type]


def test_configure_lookups_leaves_the_connection_idle(db: object) -> None:
    from simpg.psycopg import configure_lookups

    with psycopg.connect(db.dsn) as conn:  # type: ignore[attr-defined]  # not autocommit
        configure_lookups(conn)
        assert conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
        assert conn.execute("SHOW plan_cache_mode").fetchone() == ("force_generic_plan",)
    with psycopg.connect(db.dsn) as conn, SimHashColumn(conn, "docs") as index:  # type: ignore[attr-defined]
        assert index.conn is conn
    assert conn.closed  # by psycopg's with block: a handle closes only what it opened
    index = SimHashColumn(psycopg.connect(db.dsn), "docs")  # type: ignore[attr-defined]
    index.close()
    assert not index.conn.closed
    index.conn.close()



def test_a_handle_follows_an_index_recreated_with_another_layout(db: object) -> None:
    # the prefix columns keep their names but hold other permutations: the old ranges
    # would miss rows; the lookups notice (simpg.layout_is) and read the layout again
    dsn = db.dsn  # type: ignore[attr-defined]
    rows, queries = planted_corpus(13, 3, n=300)
    with psycopg.connect(dsn, autocommit=True) as other:
        make_table(other, Layout(3, (5,)), rows)
        with SimHashColumn.connect(dsn, "docs") as index, psycopg.connect(dsn) as in_tx:
            stale = SimHashColumn(in_tx, "docs")
            assert index.near(queries[0], 3) == brute_near_numbered(rows, queries[0], 3)
            assert stale.layout == Layout(3, (5,))
            SimHashColumn(other, "docs").drop()
            SimHashColumn(other, "docs").create(3, 6)
            assert [index.near(q, 3) for q in queries] == [brute_near_numbered(rows, q, 3) for q in queries]
            assert index.layout == Layout(3, (6,))
            index.refresh()  # and back, for near_many
            SimHashColumn(other, "docs").drop()
            SimHashColumn(other, "docs").create(3, 4, 4)
            assert index.near_many(queries, 3) == [brute_near_numbered(rows, q, 3) for q in queries]
            assert index.layout == Layout(3, (4, 4))
            # in a transaction of the caller's, near_many's savepoint keeps it usable ...
            assert stale.near_many(queries[:3], 3) == [brute_near_numbered(rows, q, 3) for q in queries[:3]]
            assert stale.layout == Layout(3, (4, 4))
            in_tx.rollback()
            for blocks in (6, 5):  # more tables (simpg.layout_is fails), then fewer (columns gone)
                SimHashColumn(other, "docs").drop()
                SimHashColumn(other, "docs").create(3, blocks)
                in_tx.execute("SELECT 1")  # open a transaction
                # ... while near's error aborts it: said clearly, nothing guessed
                with pytest.raises(SimpgError, match=r"docs\.simhash changed since this handle read its layout"):
                    stale.near(queries[0], 3)
                in_tx.rollback()
                assert stale.near(queries[0], 3) == brute_near_numbered(rows, queries[0], 3)
                assert stale.layout == Layout(3, (blocks,))
                in_tx.rollback()
            SimHashColumn(other, "docs").drop()
            with pytest.raises(SimpgError, match="no simpg index on"):
                index.near(queries[0], 3)


def near_statements(conn: psycopg.Connection) -> list[str]:
    return [name for (name,) in conn.execute(
        "SELECT name FROM pg_prepared_statements WHERE name LIKE 'simpg_near_%' ORDER BY name").fetchall()]


@pytest.mark.skipif(not _internals.ENABLED, reason="simpg.psycopg._internals is off")
def test_near_skips_the_cursor_only_where_it_means_the_same(db: object) -> None:
    # integer ids, autocommit or a transaction already open: simpg.psycopg.lookup sends a
    # statement prepared under its own name; anywhere else psycopg's cursor runs it
    dsn = db.dsn  # type: ignore[attr-defined]
    rows, queries = planted_corpus(14, 3, n=100)
    expected = [brute_near_numbered(rows, q, 3) for q in queries]
    with psycopg.connect(dsn, autocommit=True) as conn:
        index = make_table(conn, Layout(3, (5,)), rows)
        assert [index.near(q, 3) for q in queries] == expected
        assert len(near_statements(conn)) == 1
        # the server forgot it (as after a pool's DISCARD ALL): prepared again, same rows
        conn.execute("DEALLOCATE ALL")
        assert [index.near(q, 3) for q in queries] == expected
        assert len(near_statements(conn)) == 1
        # NULL and repeated ids in a nullable id column: ordered as the cursor's ORDER BY
        conn.execute("ALTER TABLE docs ADD COLUMN ref integer")
        conn.execute("UPDATE docs SET ref = CASE WHEN id % 3 = 0 THEN NULL ELSE -(id % 7) END")
        by_ref = SimHashColumn(conn, "docs", key_column="ref")
        fast = [by_ref.near(q, 3) for q in queries]
        with conn.pipeline():
            assert [by_ref.near(q, 3) for q in queries] == fast
        refs = [n.id for found in fast for n in found]
        assert None in refs and -6 in refs and all(isinstance(r, int) for r in refs if r is not None)
        for found in fast:
            assert [n.distance for n in found] == sorted(n.distance for n in found)
    with psycopg.connect(dsn) as conn:  # not autocommit
        index = SimHashColumn(conn, "docs")
        index.refresh()  # reading the layout opened a transaction
        conn.rollback()
        assert index.near(queries[0], 3) == expected[0]
        # idle: psycopg's cursor ran it and opened the transaction the caller expects
        assert conn.info.transaction_status == psycopg.pq.TransactionStatus.INTRANS
        assert near_statements(conn) == []
        # in a transaction too: psycopg's DEALLOCATE ALL after a rollback would remove a
        # statement it does not know of, and the error abort the transaction (issue 15)
        assert index.near(queries[1], 3) == expected[1]
        assert near_statements(conn) == []
        conn.execute("DEALLOCATE ALL")
        if psycopg_notices_deallocate():  # and prepares its statement again
            assert index.near(queries[1], 3) == expected[1]
            with pytest.raises(psycopg.errors.DivisionByZero):
                conn.execute("SELECT 1 / 0")
            with pytest.raises(psycopg.errors.InFailedSqlTransaction):  # as psycopg says it
                index.near(queries[1], 3)
        else:  # psycopg before 3.3.6: its statement is lost, an error (as 0.1.1's fast path raised)
            with pytest.raises(psycopg.errors.InvalidSqlStatementName):
                index.near(queries[1], 3)
        conn.rollback()
        assert [index.near(q, 3) for q in queries] == expected
        conn.rollback()
    with psycopg.connect(dsn, autocommit=True) as conn:  # text ids: the cursor
        conn.execute("CREATE TABLE named (name text PRIMARY KEY, simhash bigint)")
        conn.execute("INSERT INTO named SELECT 'row ' || id, simhash FROM docs")
        SimHashColumn(conn, "named").create(3, 5)
        named = [Neighbor(f"row {n.id}", n.distance) for n in expected[0]]
        # ordered by the database (C collation in these servers: byte order)
        assert SimHashColumn(conn, "named").near(queries[0], 3) == sorted(named, key=lambda n: (n.distance, n.id))
        assert near_statements(conn) == []


def test_one_handle_shared_by_threads(conn: psycopg.Connection) -> None:
    # the fast path holds the connection's lock, as psycopg's cursor does
    from concurrent.futures import ThreadPoolExecutor

    rows, queries = planted_corpus(15, 3, n=100)
    index = make_table(conn, Layout(3, (5,)), rows)
    work = queries * 20
    with ThreadPoolExecutor(4) as pool:
        assert list(pool.map(lambda q: index.near(q, 3), work)) == [brute_near_numbered(rows, q, 3) for q in work]
