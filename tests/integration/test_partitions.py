"""Partitioned tables on one server (issue 18, item 1): hash, range and list partitioning.

A partitioned table is indexed once, on its parent: its partitions (present, created
later with PARTITION OF, or attached after simpg.prepare_partition) carry the same
prefix columns and B-trees, and simpg.indexes lists the parent alone. Every answer is
compared with brute force over the rows of the partitions attached at that moment, on
the adversarial corpus of test_psycopg_index (distance 0, equal fingerprints that land
in different partitions, bits 0 and 63, values >= 2**63 stored as negative bigints, k
at the layout's limit), and every lookup plan reads each partition's prefix B-trees.
"""

from __future__ import annotations

import asyncio
import json
import random
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import psycopg
import pytest
from psycopg import errors
from sqlalchemy import BigInteger, Column, MetaData, Table, Text, create_engine, select

from simpg import bits
from simpg.cli import main
from simpg.exc import SimpgError
from simpg.layout import Layout
from simpg.psycopg import AsyncSimHashColumn, Neighbor, Pair, SimHashColumn, statements
from simpg.sqlalchemy import SimHash, simhash_index, url_from_dsn
from tests.integration.alembic_env import AlembicEnv, assert_clean, body_of, operations
from tests.oracles import (
    brute_clusters_numbered,
    brute_near,
    brute_near_numbered,
    brute_pairs_numbered,
    brute_representatives_numbered,
    planted_corpus,
)

LAYOUT = Layout(3, (5,))
PARTS = 5
LANGS = ["en", "zh", "fr", "de", "ru"]


@dataclass
class Strategy:
    """How a table is partitioned: its clause, primary key, and partition p's bounds and rows."""

    name: str
    clause: str
    primary_key: str
    bounds: Callable[[int, int], str]       # (p, rows) -> FOR VALUES ...
    member: Callable[[int, int], str]       # (p, rows) -> condition on staging columns id, lang

    @property
    def key_column(self) -> str | None:
        return None if self.primary_key == "id" else "id"


def _range_edges(n: int) -> list[int]:
    return [1 + (n * p) // PARTS for p in range(PARTS + 1)]


STRATEGIES = [
    Strategy("hash", "HASH (id)", "id",
             lambda p, n: f"FOR VALUES WITH (MODULUS {PARTS}, REMAINDER {p})",
             lambda p, n: f"satisfies_hash_partition('docs'::regclass, {PARTS}, {p}, s.id)"),
    Strategy("range", "RANGE (id)", "id",
             lambda p, n: "FOR VALUES FROM ({}) TO ({})".format(
                 "MINVALUE" if p == 0 else _range_edges(n)[p],
                 "MAXVALUE" if p == PARTS - 1 else _range_edges(n)[p + 1]),
             lambda p, n: f"s.id >= {_range_edges(n)[p]} AND s.id < {_range_edges(n)[p + 1]}"
             if p < PARTS - 1 else f"s.id >= {_range_edges(n)[p]}"),
    Strategy("list", "LIST (lang)", "id, lang",
             lambda p, n: f"FOR VALUES IN ('{LANGS[p]}')",
             lambda p, n: f"s.lang = '{LANGS[p]}'"),
]


def stage(conn: psycopg.Connection, rows: list[int]) -> None:
    """All rows in a staging table: ids 1..n, a language each, the fingerprint signed."""
    conn.execute("CREATE TABLE staging (id bigint, lang text, simhash bigint)")
    with conn.cursor() as cur, cur.copy("COPY staging (id, lang, simhash) FROM STDIN") as copy:
        for i, fp in enumerate(rows, start=1):
            copy.write_row((i, LANGS[i % PARTS], bits.to_db(fp)))


def build(conn: psycopg.Connection, strategy: Strategy, rows: list[int]) -> SimHashColumn:
    """docs, partitioned: partitions 0-2 before the index, 3 created after it (PARTITION OF),
    4 filled as a table of its own, prepared (simpg.prepare_partition) and attached."""
    n = len(rows)
    stage(conn, rows)
    conn.execute(f"CREATE TABLE docs (id bigint NOT NULL, lang text NOT NULL, simhash bigint, note text, "
                 f"PRIMARY KEY ({strategy.primary_key})) PARTITION BY {strategy.clause}")
    for p in range(3):
        conn.execute(f"CREATE TABLE docs_p{p} PARTITION OF docs {strategy.bounds(p, n)}")
    conn.execute("INSERT INTO docs (id, lang, simhash) SELECT s.id, s.lang, s.simhash FROM staging AS s WHERE "
                 + " OR ".join(f"({strategy.member(p, n)})" for p in range(3)))
    index = SimHashColumn(conn, "docs", "simhash", key_column=strategy.key_column)
    assert index.create(LAYOUT.k, LAYOUT.levels[0]) == LAYOUT
    conn.execute(f"CREATE TABLE docs_p3 PARTITION OF docs {strategy.bounds(3, n)}")
    conn.execute(f"INSERT INTO docs (id, lang, simhash) SELECT s.id, s.lang, s.simhash FROM staging AS s "
                 f"WHERE {strategy.member(3, n)}")
    conn.execute(f"CREATE TABLE docs_p4 (id bigint NOT NULL, lang text NOT NULL, simhash bigint, note text, "
                 f"PRIMARY KEY ({strategy.primary_key}))")
    conn.execute(f"INSERT INTO docs_p4 (id, lang, simhash) SELECT s.id, s.lang, s.simhash FROM staging AS s "
                 f"WHERE {strategy.member(4, n)}")
    with pytest.raises(psycopg.Error, match='child table is missing column "simhash_p0"'):
        conn.execute(f"ALTER TABLE docs ATTACH PARTITION docs_p4 {strategy.bounds(4, n)}")
    done = [r[0] for r in conn.execute("SELECT simpg.prepare_partition('docs', 'docs_p4')")]
    assert done[0].startswith("ALTER TABLE public.docs_p4 ADD COLUMN simhash_p0 bigint GENERATED ALWAYS AS "
                              "(simpg.permute(simhash, 3, '{5}'::integer[], 0)) STORED")
    assert done[1:-1] == [f"CREATE INDEX docs_p4_simhash_p{t}_idx ON public.docs_p4 (simhash_p{t}) "
                          "WITH (fillfactor = 100)" for t in range(LAYOUT.tables)]
    assert done[-1].startswith("ANALYZE public.docs_p4 (simhash_p0, ")
    assert conn.execute("SELECT simpg.prepare_partition('docs', 'docs_p4')").fetchall() == []  # ready
    conn.execute(f"ALTER TABLE docs ATTACH PARTITION docs_p4 {strategy.bounds(4, n)}")
    # every row is in the table, spread over all five partitions
    counts = conn.execute("SELECT tableoid::regclass::text, count(*) FROM docs GROUP BY 1 ORDER BY 1").fetchall()
    assert [c[0] for c in counts] == [f"docs_p{p}" for p in range(PARTS)] and sum(c[1] for c in counts) == n
    return index


def stored(conn: psycopg.Connection, table: str = "docs") -> dict[int, int]:
    """id -> unsigned fingerprint of the rows the table shows now."""
    return {i: bits.from_db(fp) for i, fp in conn.execute(f"SELECT id, simhash FROM {table}")}


def assert_catalog(conn: psycopg.Connection, partitions: list[str]) -> None:
    """simpg.indexes lists docs once; each partition holds the root's columns and a B-tree on each."""
    assert conn.execute("SELECT indexed_table::text, fingerprint_column, k, levels FROM simpg.indexes").fetchall() \
        == [("docs", "simhash", LAYOUT.k, list(LAYOUT.levels))]
    root = conn.execute("SELECT prefix_columns FROM simpg.indexes").fetchone()
    assert root is not None
    got = conn.execute("SELECT partition::text, parent::text, level, relkind::text, prefix_columns, "
                       "array_position(index_names, NULL) FROM simpg.index_partitions('docs')").fetchall()
    assert got == [(p, "docs", 1, "r", root[0], None) for p in partitions]
    assert conn.execute("SELECT * FROM simpg.check('docs')").fetchall() == []


def assert_exact(conn: psycopg.Connection, index: SimHashColumn, rows: dict[int, int], queries_: list[int],
                 *, reports: bool = True) -> None:
    """near, near_many, SQL near, pairs and clusters (SimHashColumn and SQL) equal brute force."""
    for k in range(LAYOUT.k + 1):
        expected = [brute_near(rows, q, k) for q in queries_]
        assert [index.near(q, k) for q in queries_] == expected
        assert index.near_many(queries_, k) == expected
        assert index.near_many(np.array(queries_, dtype=np.uint64), k) == expected
        for q, want in zip(queries_[:6], expected[:6], strict=True):
            got = conn.execute("SELECT a.id, simpg.hamming(a.simhash, %s) FROM simpg.near(NULL::docs, %s, %s) AS a",
                               [bits.to_db(q), bits.to_db(q), k]).fetchall()
            assert sorted(got, key=lambda r: (r[1], r[0])) == [tuple(n) for n in want]
    # pairs and clusters: at 0 (equal fingerprints only) and at the layout's k
    ordered = [rows[i] for i in sorted(rows)]
    ids = sorted(rows)
    for k in (0, LAYOUT.k):
        want_pairs = {Pair(ids[p.a - 1], ids[p.b - 1], p.distance) for p in brute_pairs_numbered(ordered, k)}
        pairs = list(index.pairs(k))
        assert len(pairs) == len(set(pairs)) and set(pairs) == want_pairs
        pairs_k = brute_pairs_numbered(ordered, k)
        components = [[ids[i - 1] for i in g] for g in brute_clusters_numbered(len(ordered), pairs_k)]
        representatives = [[ids[i - 1] for i in g] for g in brute_representatives_numbered(ordered, k)]
        assert sorted(index.clusters(k, method="components"), key=lambda g: (-len(g), g[0])) == components
        assert sorted(index.clusters(k), key=lambda g: (-len(g), g[0])) == representatives
        if not reports:
            continue
        got = conn.execute("SELECT key_a, key_b, distance FROM simpg.pairs('docs', %s)", [k]).fetchall()
        assert len(got) == len(set(got)) and {Pair(*r) for r in got} == want_pairs
        for method, want in (("representative", representatives), ("components", components)):
            rows_ = conn.execute("SELECT cluster_id, key, size FROM simpg.clusters('docs', %s, method => %s)",
                                 [k, method]).fetchall()
            groups: dict[int, list[int]] = {}
            for cluster_id, key, size in rows_:
                groups.setdefault(cluster_id, []).append(key)
                assert size == sum(1 for r in rows_ if r[0] == cluster_id)
            got_groups = sorted((sorted(g) for g in groups.values() if len(g) > 1), key=lambda g: (-len(g), g[0]))
            assert got_groups == want


def scanned(name: str, plan: str) -> bool:
    """Whether the plan reads index ``name`` (a bitmap, plain or index-only scan)."""
    return any(f"{how} {name} " in plan + " " or f"{how} {name}\n" in plan + "\n"
               for how in ("Bitmap Index Scan on", "Index Scan using", "Index Only Scan using"))


def partition_indexes(conn: psycopg.Connection) -> list[str]:
    return [name for (names,) in conn.execute("SELECT index_names FROM simpg.index_partitions('docs')")
            for name in names]


def assert_plans_use_partition_btrees(conn: psycopg.Connection, index: SimHashColumn, q: int) -> None:
    """near and near_many read every partition through its prefix B-trees, never a sequential scan."""
    expected = partition_indexes(conn)
    assert len(expected) == PARTS * LAYOUT.tables
    with conn.transaction():
        conn.execute("SET LOCAL enable_seqscan = off")  # as simpg.near and near_many run
        statement = conn.execute("SELECT simpg.near_query('docs', %s, 3)", [bits.to_db(q)]).fetchone()
        assert statement is not None
        plan = "\n".join(r[0] for r in conn.execute("EXPLAIN " + statement[0]))
        assert "Seq Scan" not in plan, plan
        for name in expected:
            assert scanned(name, plan), (name, plan)
        info = index.info
        params = statements.near_many_params(info, np.array([q, q ^ 1, 0], dtype=np.uint64), 3)
        many = statements.near_many_sql(info).as_string(conn)
        with psycopg.RawCursor(conn) as raw:  # $n placeholders
            plan = "\n".join(r[0] for r in raw.execute("EXPLAIN " + many, params))
        assert "Seq Scan" not in plan, plan
        for name in expected:
            assert scanned(name, plan), (name, plan)


@pytest.mark.parametrize("strategy", STRATEGIES, ids=lambda s: s.name)
def test_partitioned_table_is_one_index_and_answers_exactly(conn: psycopg.Connection, strategy: Strategy) -> None:
    rows, queries_ = planted_corpus(18, LAYOUT.k, n=300)
    index = build(conn, strategy, rows)
    assert_catalog(conn, [f"docs_p{p}" for p in range(PARTS)])
    # equal fingerprints (the corpus plants each query twice) land in different partitions
    split = conn.execute("SELECT count(*) FROM (SELECT simhash FROM docs GROUP BY simhash "
                         "HAVING count(DISTINCT tableoid) > 1) AS x").fetchone()
    assert split is not None and split[0] > 0
    assert conn.execute("SELECT count(*) FROM docs WHERE simhash < 0").fetchone() != (0,)
    reports = strategy.key_column is None  # SQL reports need a key unique across partitions
    assert_exact(conn, index, stored(conn), queries_, reports=reports)
    if not reports:
        # LIST by lang: the primary key is (id, lang), and no index can make id unique across partitions
        with pytest.raises(errors.InvalidParameterValue, match="table (public.)?docs has no single-column primary key"):
            conn.execute("SELECT * FROM simpg.pairs('docs', 3)")
        with pytest.raises(errors.InvalidParameterValue,
                           match=r"key column (public.)?docs.id must be not null and unique"):
            conn.execute("SELECT * FROM simpg.pairs('docs', 3, key_column => 'id')")
    assert_plans_use_partition_btrees(conn, index, queries_[0])
    # stats count the partitions' bytes, not the empty parent's
    stats = index.stats()
    assert stats.rows == len(rows)
    partition_bytes = conn.execute("SELECT sum(pg_table_size(relid))::bigint FROM pg_partition_tree('docs')").fetchone()
    assert partition_bytes is not None and stats.table_bytes == partition_bytes[0] > 0
    for name, size in stats.index_bytes.items():
        assert size == conn.execute("SELECT sum(pg_relation_size(relid))::bigint FROM pg_partition_tree(%s)",
                                    [name]).fetchone()[0] > 0
    # a handle on one partition searches that partition alone
    part = SimHashColumn(conn, "docs_p1", "simhash", key_column=strategy.key_column)
    assert part.check() == []
    only = stored(conn, "docs_p1")
    assert [part.near(q, 3) for q in queries_] == [brute_near(only, q, 3) for q in queries_]


def test_async_handle_on_a_partitioned_table(db: object) -> None:
    conn: psycopg.Connection = db.conn  # type: ignore[attr-defined]
    rows, queries_ = planted_corpus(26, LAYOUT.k, n=200)
    build(conn, STRATEGIES[2], rows)  # list: the id column named, rows of five partitions
    now = stored(conn)
    ordered = [now[i] for i in sorted(now)]

    async def run() -> None:
        async with await psycopg.AsyncConnection.connect(db.dsn, autocommit=True) as aconn:  # type: ignore[attr-defined]
            index = AsyncSimHashColumn(aconn, "docs", "simhash", key_column="id")
            for k in (0, LAYOUT.k):
                expected = [brute_near(now, q, k) for q in queries_]
                assert [await index.near(q, k) for q in queries_] == expected
                assert await index.near_many(queries_, k) == expected
                pairs = [pair async for pair in index.pairs(k)]
                assert len(pairs) == len(set(pairs)) and set(pairs) == brute_pairs_numbered(ordered, k)
                assert sorted(await index.clusters(k), key=lambda g: (-len(g), g[0])) == \
                    brute_representatives_numbered(ordered, k)

    assert sorted(now) == list(range(1, len(rows) + 1))  # ids 1..n: brute force's numbering
    asyncio.run(run())


def test_detach_attach_and_drop_keep_the_catalog_and_the_answers(conn: psycopg.Connection) -> None:
    rows, queries_ = planted_corpus(19, LAYOUT.k, n=300)
    index = build(conn, STRATEGIES[1], rows)
    bounds = STRATEGIES[1].bounds(2, len(rows))
    conn.execute("ALTER TABLE docs DETACH PARTITION docs_p2 CONCURRENTLY")
    # docs_p2 is a table of its own now, with a complete index of its own
    assert conn.execute("SELECT indexed_table::text FROM simpg.indexes ORDER BY 1").fetchall() == [
        ("docs",), ("docs_p2",)]
    assert [r[0] for r in conn.execute("SELECT partition::text FROM simpg.index_partitions('docs')")] == [
        "docs_p0", "docs_p1", "docs_p3", "docs_p4"]
    assert_exact(conn, index, stored(conn), queries_[:8])
    alone = SimHashColumn(conn, "docs_p2", "simhash")
    assert alone.check() == []
    assert [alone.near(q, 3) for q in queries_] == [brute_near(stored(conn, "docs_p2"), q, 3) for q in queries_]
    # attached again: it still has the columns and B-trees, which PostgreSQL takes over
    assert conn.execute("SELECT simpg.prepare_partition('docs', 'docs_p2')").fetchall() == []
    conn.execute(f"ALTER TABLE docs ATTACH PARTITION docs_p2 {bounds}")
    assert_catalog(conn, [f"docs_p{p}" for p in range(PARTS)])
    assert_exact(conn, index, stored(conn), queries_[:8], reports=False)
    # a dropped partition's rows are gone from every answer
    conn.execute("DROP TABLE docs_p3")
    assert_catalog(conn, ["docs_p0", "docs_p1", "docs_p2", "docs_p4"])
    assert len(stored(conn)) < len(rows)
    assert_exact(conn, index, stored(conn), queries_[:8])


def test_a_table_made_like_the_parent_attaches_with_its_own_btrees(conn: psycopg.Connection) -> None:
    rows, queries_ = planted_corpus(20, LAYOUT.k, n=200)
    strategy = STRATEGIES[0]
    stage(conn, rows)
    conn.execute("CREATE TABLE docs (id bigint PRIMARY KEY, lang text NOT NULL, simhash bigint, note text) "
                 "PARTITION BY HASH (id)")
    conn.execute("SELECT simpg.create_index('docs', 'simhash', 3, 5)")  # no partition yet
    for p in range(PARTS):
        # LIKE ... INCLUDING GENERATED copies the prefix columns, INCLUDING INDEXES their B-trees
        conn.execute(f"CREATE TABLE docs_p{p} (LIKE docs INCLUDING DEFAULTS INCLUDING GENERATED INCLUDING INDEXES)")
        conn.execute(f"INSERT INTO docs_p{p} (id, lang, simhash) SELECT s.id, s.lang, s.simhash FROM staging AS s "
                     f"WHERE {strategy.member(p, len(rows))}")
        assert conn.execute(f"SELECT simpg.prepare_partition('docs', 'docs_p{p}')").fetchall() == []
        own = conn.execute("SELECT array_agg(indexrelid::regclass::text ORDER BY 1) FROM pg_index "
                           f"WHERE indrelid = 'docs_p{p}'::regclass AND NOT indisprimary").fetchone()
        conn.execute(f"ALTER TABLE docs ATTACH PARTITION docs_p{p} {strategy.bounds(p, len(rows))}")
        after = conn.execute("SELECT array_agg(indexrelid::regclass::text ORDER BY 1) FROM pg_index "
                             f"WHERE indrelid = 'docs_p{p}'::regclass AND NOT indisprimary").fetchone()
        assert after == own  # attached, not built again
    assert_catalog(conn, [f"docs_p{p}" for p in range(PARTS)])
    assert_exact(conn, SimHashColumn(conn, "docs"), stored(conn), queries_[:8])


def test_partitions_refuse_their_own_index_and_prepare_partition_checks_its_table(conn: psycopg.Connection) -> None:
    conn.execute("CREATE TABLE docs (id bigint PRIMARY KEY, simhash bigint, other bigint) PARTITION BY RANGE (id)")
    conn.execute("CREATE TABLE docs_a PARTITION OF docs FOR VALUES FROM (0) TO (100)")
    conn.execute("CREATE TABLE plain (id bigint PRIMARY KEY, simhash bigint)")
    with pytest.raises(errors.UndefinedObject, match=r"no simpg index on (public\.)?docs\n"):
        conn.execute("SELECT simpg.prepare_partition('docs', 'plain')")
    conn.execute("SELECT simpg.create_index('docs', 'simhash', 3, 5)")
    with pytest.raises(errors.WrongObjectType,
                       match="table (public.)?docs_a is a partition of (public.)?docs: create the simpg index on"):
        conn.execute("SELECT simpg.create_index('docs_a', 'other', 3, 5)")
    with pytest.raises(errors.WrongObjectType,
                       match="table (public.)?docs_a is a partition of (public.)?docs: drop the simpg index on"):
        conn.execute("SELECT simpg.drop_index('docs_a', 'simhash')")
    with pytest.raises(errors.WrongObjectType, match="table (public.)?plain is not partitioned"):
        conn.execute("SELECT simpg.prepare_partition('plain', 'docs_a')")
    with pytest.raises(errors.WrongObjectType, match="table (public.)?docs_a is already a partition of (public.)?docs"):
        conn.execute("SELECT simpg.prepare_partition('docs', 'docs_a')")
    with pytest.raises(errors.NullValueNotAllowed, match="rel and partition must not be null"):
        conn.execute("SELECT simpg.prepare_partition('docs', NULL)")
    conn.execute("CREATE TABLE texty (id bigint PRIMARY KEY, simhash text, other bigint)")
    with pytest.raises(errors.DatatypeMismatch, match="column (public.)?texty.simhash is text, expected bigint"):
        conn.execute("SELECT simpg.prepare_partition('docs', 'texty')")
    conn.execute("CREATE TABLE nofp (id bigint PRIMARY KEY, other bigint)")
    with pytest.raises(errors.UndefinedColumn, match="column simhash of table (public.)?nofp does not exist"):
        conn.execute("SELECT simpg.prepare_partition('docs', 'nofp')")
    conn.execute("CREATE TABLE other_layout (id bigint PRIMARY KEY, simhash bigint, other bigint)")
    conn.execute("SELECT simpg.create_index('other_layout', 'simhash', 2, 4)")
    with pytest.raises(errors.DuplicateObject, match="table (public.)?other_layout has a simpg index k=2 blocks=4 "
                                                      "on column simhash, and (public.)?docs has k=3 blocks=5"):
        conn.execute("SELECT simpg.prepare_partition('docs', 'other_layout')")
    conn.execute("CREATE TABLE squatter (id bigint PRIMARY KEY, simhash bigint, other bigint, simhash_p4 bigint)")
    with pytest.raises(errors.InvalidObjectDefinition,
                       match=r"column (public.)?squatter.simhash_p4 is not the stored generated column "
                             r"simpg.permute\(simhash, 3, '\{5\}'::integer\[\], 4\)"):
        conn.execute("SELECT simpg.prepare_partition('docs', 'squatter')")
    assert conn.execute("SELECT count(*) FROM pg_attribute WHERE attrelid = 'squatter'::regclass "
                        "AND attname LIKE 'simhash_p%'").fetchone() == (1,)  # nothing added before the refusal
    # half-prepared (some columns, no B-trees): the rest is added
    conn.execute("CREATE TABLE half (id bigint PRIMARY KEY, simhash bigint, other bigint, simhash_p0 bigint "
                 "GENERATED ALWAYS AS (simpg.permute(simhash, 3, '{5}'::integer[], 0)) STORED)")
    done = [r[0] for r in conn.execute("SELECT simpg.prepare_partition('docs', 'half')")]
    assert "ADD COLUMN simhash_p0 " not in done[0] and "ADD COLUMN simhash_p1 " in done[0]
    assert len(done) == 1 + LAYOUT.tables + 1
    conn.execute("ALTER TABLE docs ATTACH PARTITION half FOR VALUES FROM (100) TO (200)")
    assert conn.execute("SELECT * FROM simpg.check('docs')").fetchall() == []


def test_a_partition_with_its_own_expression_makes_the_index_damaged(pg: object, conn: psycopg.Connection) -> None:
    conn.execute("CREATE TABLE docs (id bigint PRIMARY KEY, simhash bigint) PARTITION BY RANGE (id)")
    conn.execute("CREATE TABLE docs_a PARTITION OF docs FOR VALUES FROM (0) TO (100)")
    conn.execute("SELECT simpg.create_index('docs', 'simhash', 3, 5)")
    conn.execute("INSERT INTO docs VALUES (1, 42)")
    own = ("CREATE TABLE docs_b PARTITION OF docs (simhash_p2 GENERATED ALWAYS AS (simhash) STORED) "
           "FOR VALUES FROM (100) TO (200)")
    if conn.info.server_version < 160000:
        # PostgreSQL 15 refuses it, whatever simpg does
        with pytest.raises(psycopg.Error, match="generated columns are not supported on partitions"):
            conn.execute(own)
        return
    conn.execute(own)  # PostgreSQL 16+ lets a partition compute a column its own way
    conn.execute("INSERT INTO docs VALUES (150, 42), (160, 43)")
    assert conn.execute("SELECT partition::text, prefix_column, found FROM simpg.partition_disagreements('docs')"
                        ).fetchall() == [("docs_b", "simhash_p2", "simhash")]
    # the index cannot answer exactly through docs_b: refused, not silently short
    assert conn.execute("SELECT count(*) FROM simpg.indexes").fetchone() == (0,)
    damaged = ("the simpg index on (public.)?docs.simhash is damaged: partition (public.)?docs_b computes "
               "column simhash_p2 with another expression")
    with pytest.raises(psycopg.Error, match=damaged) as info:
        conn.execute("SELECT * FROM simpg.near(NULL::docs, 42, 3)")
    assert info.value.sqlstate == "SPG02"
    with pytest.raises(SimpgError, match="docs_b computes column simhash_p2"):
        SimHashColumn(conn, "docs").near(42, 3)
    problems = conn.execute("SELECT problem, detail FROM simpg.check('docs')").fetchall()
    assert problems == [("missing prefix column",
                         "table 2 of k=3 blocks=5: partition public.docs_b computes column simhash_p2 as simhash, "
                         "not simpg.permute(simhash, 3, '{5}'::integer[], 2)")]
    # repair drops the damaged index, the partition's odd column with it
    done = conn.execute("SELECT * FROM simpg.repair('docs')").fetchall()
    assert len(done) == 1 and "DROP COLUMN simhash_p2" in done[0][0]
    assert conn.execute("SELECT count(*) FROM pg_attribute WHERE attrelid = 'docs_b'::regclass "
                        "AND attname LIKE 'simhash_p%' AND NOT attisdropped").fetchone() == (0,)
    conn.execute("SELECT simpg.create_index('docs', 'simhash', 3, 5)")
    assert sorted(n.id for n in SimHashColumn(conn, "docs").near(42, 3)) == [1, 150, 160]


def test_check_and_repair_look_into_the_partitions(conn: psycopg.Connection) -> None:
    rows, queries_ = planted_corpus(21, LAYOUT.k, n=200)
    index = build(conn, STRATEGIES[0], rows)
    # a B-tree dropped from the parent goes from every partition: missing, then built again
    conn.execute("DROP INDEX docs_simhash_p3_idx")
    assert [p.problem for p in index.check(verify_rows=False)] == ["missing b-tree"]
    assert_exact(conn, index, stored(conn), queries_[:4], reports=False)  # exact, only slower
    assert index.repair() == ["CREATE INDEX docs_simhash_p3_idx ON public.docs (simhash_p3) WITH (fillfactor = 100)"]
    assert_catalog(conn, [f"docs_p{p}" for p in range(PARTS)])
    # an interrupted CREATE INDEX CONCURRENTLY on one partition leaves an invalid index there
    with pytest.raises(errors.UniqueViolation):
        conn.execute("CREATE UNIQUE INDEX CONCURRENTLY docs_p1_extra ON docs_p1 (simhash_p2)")
    problems = index.check(verify_rows=False)
    assert [(p.problem, p.detail) for p in problems] == [
        ("invalid index", "index docs_p1_extra on column simhash_p2 of partition public.docs_p1 is invalid "
                          "(an interrupted CREATE INDEX CONCURRENTLY?)")]
    code = main(["check", "--dsn", conn.info.dsn, "--table", "docs", "--json"])
    assert code == 1
    assert index.repair() == ["DROP INDEX public.docs_p1_extra"]
    assert index.check() == []
    assert_exact(conn, index, stored(conn), queries_[:4], reports=False)


def test_cli_check_sees_one_index(conn: psycopg.Connection, capsys: pytest.CaptureFixture[str]) -> None:
    rows, _ = planted_corpus(22, LAYOUT.k, n=100)
    build(conn, STRATEGIES[0], rows)
    assert main(["check", "--dsn", conn.info.dsn, "--table", "docs", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [i["column"] for i in out["indexes"]] == ["simhash"] and out["problems"] == []
    assert main(["check", "--dsn", conn.info.dsn, "--table", "docs_p3"]) == 0  # a partition on its own
    assert "docs_p3.simhash: ok (k3:5, 10 prefix columns with their B-trees)" in capsys.readouterr().out


def test_near_many_keeps_rows_of_two_partitions_at_the_same_place(conn: psycopg.Connection) -> None:
    # the first row of each partition is at ctid (0,1): with equal ids (LIST partitions on
    # another column) only tableoid tells them apart
    conn.execute("CREATE TABLE docs (id bigint, lang text, simhash bigint, PRIMARY KEY (id, lang)) "
                 "PARTITION BY LIST (lang)")
    for lang in ("en", "zh"):
        conn.execute(f"CREATE TABLE docs_{lang} PARTITION OF docs FOR VALUES IN ('{lang}')")
    conn.execute("SELECT simpg.create_index('docs', 'simhash', 3, 5)")
    conn.execute("INSERT INTO docs VALUES (7, 'en', -5), (7, 'zh', -5)")
    assert conn.execute("SELECT count(DISTINCT ctid) FROM docs").fetchone() == (1,)
    index = SimHashColumn(conn, "docs", key_column="id")
    q = bits.from_db(-5)
    assert index.near(q, 3) == [Neighbor(7, 0), Neighbor(7, 0)]
    assert index.near_many([q, q ^ (1 << 63)], 3) == [[Neighbor(7, 0), Neighbor(7, 0)], [Neighbor(7, 1)] * 2]


def test_sqlalchemy_model_partitioned_by_hash(db: object) -> None:
    dsn = db.dsn  # type: ignore[attr-defined]
    conn: psycopg.Connection = db.conn  # type: ignore[attr-defined]
    metadata = MetaData()
    table = Table("articles", metadata, Column("id", BigInteger, primary_key=True), Column("body", Text),
                  Column("simhash", SimHash, nullable=False), postgresql_partition_by="HASH (id)")
    spec = simhash_index(table.c.simhash, k=3, blocks=5)
    engine = create_engine(url_from_dsn(dsn))
    try:
        metadata.create_all(engine)  # the parent, its prefix columns and B-trees, registered
        for p in range(3):
            conn.execute(f"CREATE TABLE articles_{p} PARTITION OF articles FOR VALUES WITH (MODULUS 3, REMAINDER {p})")
        assert conn.execute("SELECT indexed_table::text, index_names FROM simpg.indexes").fetchall() == [
            ("articles", list(spec.index_names))]
        rng = random.Random(23)
        fps = [rng.getrandbits(64) for _ in range(300)] + [0, 2**64 - 1, 1 << 63, 1]
        with engine.begin() as c:
            c.execute(table.insert(), [{"id": i, "body": "b", "simhash": fp} for i, fp in enumerate(fps)])
        with engine.connect() as c:
            for q in fps[:5] + [1 << 62, 3]:
                for k in (0, 3):
                    got = c.execute(select(table.c.id).where(table.c.simhash.within(q, k))).scalars().all()
                    assert sorted(got) == [i for i, fp in enumerate(fps) if bits.hamming(fp, q) <= k]
            stmt = select(table.c.id).where(table.c.simhash.within(fps[4], 3))
            compiled = str(stmt.compile(dialect=engine.dialect, compile_kwargs={"literal_binds": True}))
            c.exec_driver_sql("SET enable_seqscan = off")
            plan = "\n".join(c.exec_driver_sql("EXPLAIN " + compiled).scalars())
        assert "Seq Scan" not in plan, plan
        for p in range(3):
            for t in range(LAYOUT.tables):
                assert f"Bitmap Index Scan on articles_{p}_simhash_p{t}_idx" in plan, plan
        assert spec.check(engine.connect()) == []
    finally:
        engine.dispose()


TWO_LEVELS = [
    "CREATE TABLE docs (id bigint, region text, simhash bigint, PRIMARY KEY (id, region)) PARTITION BY LIST (region)",
    "CREATE TABLE docs_eu PARTITION OF docs FOR VALUES IN ('eu') PARTITION BY HASH (id)",
    "CREATE TABLE docs_eu_0 PARTITION OF docs_eu FOR VALUES WITH (MODULUS 2, REMAINDER 0)",
    "CREATE TABLE docs_eu_1 PARTITION OF docs_eu FOR VALUES WITH (MODULUS 2, REMAINDER 1)",
    "CREATE TABLE docs_us PARTITION OF docs FOR VALUES IN ('us')",
]


def test_alembic_operations_on_a_table_partitioned_on_two_levels(db: object) -> None:
    dsn = db.dsn  # type: ignore[attr-defined]
    conn: psycopg.Connection = db.conn  # type: ignore[attr-defined]
    for statement in TWO_LEVELS:
        conn.execute(statement)
    rng = random.Random(24)
    fps = [rng.getrandbits(64) for _ in range(200)] + [5, 5 ^ (1 << 63), 5 ^ 1]
    conn.execute("INSERT INTO docs SELECT i, CASE WHEN i %% 3 = 0 THEN 'us' ELSE 'eu' END, fp "
                 "FROM unnest(%s::bigint[]) WITH ORDINALITY AS u(fp, i)", [[bits.to_db(f) for f in fps]])
    for concurrently in (False, True):
        with operations(dsn) as op:
            op.create_simhash_index("docs", "simhash", k=3, blocks=5, concurrently=concurrently)
        assert conn.execute("SELECT indexed_table::text FROM simpg.indexes").fetchall() == [("docs",)]
        parts = conn.execute("SELECT partition::text, level, relkind::text, array_position(index_names, NULL) "
                             "FROM simpg.index_partitions('docs')").fetchall()
        assert parts == [("docs_eu", 1, "p", None), ("docs_us", 1, "r", None),
                         ("docs_eu_0", 2, "r", None), ("docs_eu_1", 2, "r", None)]
        invalid = conn.execute("SELECT count(*) FROM pg_index AS i JOIN pg_partition_tree('docs') AS m "
                               "ON m.relid = i.indrelid WHERE NOT i.indisvalid").fetchone()
        assert invalid == (0,)
        assert conn.execute("SELECT * FROM simpg.check('docs')").fetchall() == []
        index = SimHashColumn(conn, "docs", key_column="id")
        for q in (5, fps[0], 1 << 63):
            assert index.near(q, 3) == brute_near_numbered(fps, q, 3)
        assert index.near_many([5, fps[1]], 3) == [brute_near_numbered(fps, 5, 3), brute_near_numbered(fps, fps[1], 3)]
        with operations(dsn) as op:
            op.drop_simhash_index("docs", "simhash", concurrently=concurrently)
        assert conn.execute("SELECT count(*) FROM pg_attribute AS a JOIN pg_partition_tree('docs') AS m "
                            "ON m.relid = a.attrelid WHERE a.attname LIKE 'simhash_p%' AND NOT a.attisdropped"
                            ).fetchone() == (0,)


PARTITIONED_MODEL = """
class Article(Base):
    __tablename__ = "articles"
    __table_args__ = {"postgresql_partition_by": "HASH (id)"}
    id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    body: Mapped[str] = mapped_column(Text)
    simhash: Mapped[int] = mapped_column(SimHash, nullable=False)


simhash_index(Article.simhash, k=3, blocks=5)
"""


def test_alembic_autogenerate_on_a_partitioned_model(tmp_path: object, db: object) -> None:
    conn: psycopg.Connection = db.conn  # type: ignore[attr-defined]
    env = AlembicEnv(tmp_path, db.dsn)  # type: ignore[arg-type, attr-defined]
    env.write_models(PARTITIONED_MODEL)
    text = env.autogenerate("articles")
    up = body_of(text, "upgrade")
    assert "postgresql_partition_by='HASH (id)'" in up
    assert up.index("op.create_table('articles'") < up.index(
        "op.create_simhash_index('articles', 'simhash', k=3, blocks=5)")
    env.upgrade()
    # partitions are DDL, not model: made by hand (or pg_partman) after the migration
    for p in range(4):
        conn.execute(f"CREATE TABLE articles_{p} PARTITION OF articles FOR VALUES WITH (MODULUS 4, REMAINDER {p})")
    conn.execute("CREATE TABLE articles_next (LIKE articles INCLUDING DEFAULTS INCLUDING GENERATED)")
    assert_clean_but_for(env, {"articles_next"})
    conn.execute("DROP TABLE articles_next")
    assert conn.execute("SELECT indexed_table::text FROM simpg.indexes").fetchall() == [("articles",)]
    assert_clean(env)
    env.downgrade("base")
    assert conn.execute("SELECT to_regclass('articles')").fetchone() == (None,)


def assert_clean_but_for(env: AlembicEnv, tables: set[str]) -> None:
    """Autogenerate offers to drop the tables named (not in the model), and nothing else."""
    text = env.autogenerate("probe", keep=False)
    code = [line.strip() for line in body_of(text, "upgrade").split("def ")[0].splitlines()[1:]
            if line.strip() and not line.strip().startswith(("#", '"""'))]
    dropped = {line.split("'")[1] for line in code if line.startswith("op.drop_table(")}
    assert dropped == tables, text
    assert all(line.startswith(("op.drop_table(", "op.drop_index(", "op.drop_simhash_index(")) for line in code), text


def test_pairs_sql_plan_reads_partition_btrees(conn: psycopg.Connection) -> None:
    rows, _ = planted_corpus(25, LAYOUT.k, n=300)
    build(conn, STRATEGIES[0], rows)
    statement = conn.execute("SELECT simpg.pairs_query('docs', 3)").fetchone()
    assert statement is not None
    with conn.transaction():
        # partitions of 80 rows are cheaper to read whole: off, the plan shows that every
        # pass can read each partition's B-tree (groups and ranges) instead
        conn.execute("SET LOCAL enable_seqscan = off")
        plan = "\n".join(r[0] for r in conn.execute("EXPLAIN " + statement[0]))
    for name in partition_indexes(conn):
        assert scanned(name, plan), (name, plan)
    assert "Seq Scan" not in plan, plan

