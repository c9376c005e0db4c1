"""Shards on several servers (postgres_fdw), on real servers: a coordinator and two shards.

The module starts three servers of its own (tests/servers.py: two embedded 18, one Debian 15) and
shares them between its tests: a coordinator with two databases, one with simpg as an
extension and one with the plain script (the distance filter must reach the shards
from both), and two shard servers, the first with the extension, the second with the
plain script. Every answer is compared with a brute-force popcount.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import psycopg
import pytest
from psycopg import sql

from simpg import bits, schema, shards
from simpg.cli import main
from simpg.exc import SimpgError
from simpg.psycopg import Neighbor, SimHashColumn, statements, wire
from simpg.shards import Shard, ShardedColumn
from tests import servers
from tests.oracles import brute_near_arrays, brute_pairs_arrays

K = 3
BLOCKS = 5  # layout k3:5, 10 tables
TABLES = {"coord_ext": "docs", "coord_plain": "items"}  # coordinator database -> its sharded table


@dataclass
class Cluster:
    """The module's servers: a coordinator and two shards (``s1``, ``s2``), all running."""

    coord: servers.Server
    shard_servers: list[servers.Server]

    def dsn(self, db: str) -> str:
        return self.coord.dsn(db)

    def shard_dsn(self, i: int) -> str:
        return self.shard_servers[i].dsn("app")

    @property
    def shard_args(self) -> list[str]:
        return [arg for i in range(2) for arg in ("--shard", f"s{i + 1}={self.shard_dsn(i)}")]


@dataclass
class Data:
    """The rows loaded into every sharded table, and the queries."""

    ids: np.ndarray      # int64
    fps: np.ndarray      # uint64, rows with a fingerprint
    queries: list[int]
    duplicate_ids: list[int]  # rows that all have one fingerprint


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    # the coordinator and the first shard on the embedded server (its share folder is this
    # checkout's own, so the extension files may be written there), the second shard on
    # Debian's 15 with the plain script (its share folder is shared: not written); the
    # tests that stop a shard stop that one
    started = [servers.start_embedded(), servers.start_embedded(), servers.start_debian(15)]
    try:
        coord, *shard_servers = started
        schema.install_extension_files(sharedir=coord.sharedir)
        for i, server in enumerate(shard_servers):
            with psycopg.connect(server.dsn(), autocommit=True) as conn:
                conn.execute("CREATE DATABASE app")
            with psycopg.connect(server.dsn("app"), autocommit=True) as conn:
                schema.install(conn, plain=i == 1)
        for db in TABLES:
            with psycopg.connect(coord.dsn(), autocommit=True) as conn:
                conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(db)))
            with psycopg.connect(coord.dsn(db), autocommit=True) as conn:
                schema.install(conn, plain=db == "coord_plain")
        yield Cluster(coord, shard_servers)
    finally:
        for server in started:
            for stop in server._stop:
                stop.cleanup() if hasattr(stop, "cleanup") else stop()  # type: ignore[operator]


def make_data(seed: int = 18) -> Data:
    rng = np.random.default_rng(seed)
    fps: list[int] = [int(x) for x in rng.integers(0, 2**64, size=6000, dtype=np.uint64)]
    queries: list[int] = []
    # planted neighbours at 1 .. k + 1 bits, bits 0 and 63 among the flips
    for base in [int(x) for x in rng.integers(0, 2**64, size=60, dtype=np.uint64)]:
        fps.append(base)
        queries.append(base)
        for d in range(1, K + 2):
            flips = [0, 63][: d] + [int(b) for b in rng.choice(np.arange(1, 63), size=max(0, d - 2), replace=False)]
            v = base
            for b in flips:
                v ^= 1 << b
            fps.append(v)
            queries.append(v ^ (1 << int(rng.integers(0, 64))))
    # extremes: 0, all ones, the sign bit, its neighbour (negative and positive int8)
    for v in (0, 2**64 - 1, 2**63, 2**63 - 1):
        fps += [v, v ^ 1, v ^ (1 << 63), v ^ 0b111]
        queries.append(v)
    # one fingerprint in many rows: the rows go to both shards
    dup = int(rng.integers(0, 2**64, dtype=np.uint64))
    first_dup = len(fps) + 1
    fps += [dup] * 12
    queries += [dup, dup ^ (1 << 63)]
    queries += [int(x) for x in rng.integers(0, 2**64, size=20, dtype=np.uint64)]  # mostly no neighbour
    ids = np.arange(1, len(fps) + 1, dtype=np.int64)
    return Data(ids, np.array(fps, dtype=np.uint64), queries, list(range(first_dup, first_dup + 12)))


def load(conn: psycopg.Connection, table: str, data: Data) -> None:
    """INSERT through the coordinator: PostgreSQL routes each row to its shard."""
    conn.execute(sql.SQL("INSERT INTO {} (id, simhash, body) "
                         "SELECT u.id, u.fp, 'row ' || u.id FROM unnest(%s::bigint[], %s::bigint[]) AS u(id, fp)")
                 .format(sql.Identifier(table)),
                 [data.ids.tolist(), [bits.to_db(int(v)) for v in data.fps]])
    conn.execute(sql.SQL("INSERT INTO {} (id, simhash, body) VALUES (%s, NULL, 'no fingerprint')")
                 .format(sql.Identifier(table)), [len(data.ids) + 1])


@pytest.fixture(scope="module")
def data() -> Data:
    return make_data()


@pytest.fixture(scope="module")
def sharded(cluster: Cluster, data: Data) -> Cluster:
    """Both coordinator databases set up by ``simpg shard create`` and loaded through the coordinator."""
    for db, table in TABLES.items():
        with psycopg.connect(cluster.dsn(db), autocommit=True) as conn:
            conn.execute(sql.SQL("CREATE TABLE {} (id bigint NOT NULL, simhash bigint, body text) "
                                 "PARTITION BY HASH (id)").format(sql.Identifier(table)))
        assert main(["shard", "create", "--dsn", cluster.dsn(db), "--table", table, "-k", str(K),
                     "--blocks", str(BLOCKS), *cluster.shard_args]) == 0
        with psycopg.connect(cluster.dsn(db), autocommit=True) as conn:
            load(conn, table, data)
    return cluster


def shard_ids(cluster: Cluster, i: int, table: str) -> set[int]:
    with psycopg.connect(cluster.shard_dsn(i)) as conn:
        return {r[0] for r in conn.execute(sql.SQL("SELECT id FROM {}").format(sql.Identifier(table)))}


# -- setup -----------------------------------------------------------------------------


def test_create_makes_the_shards_and_runs_again_without_change(
        sharded: Cluster, capsys: pytest.CaptureFixture[str]) -> None:
    for i, plain in enumerate((False, True)):
        with psycopg.connect(sharded.shard_dsn(i)) as conn:
            rows = conn.execute("SELECT indexed_table::text, k, levels, index_names FROM simpg.indexes "
                                "ORDER BY 1").fetchall()
            assert [(t, k, lv) for t, k, lv, _ in rows] == [("docs", K, [BLOCKS]), ("items", K, [BLOCKS])]
            assert all(None not in names for *_, names in rows)
            # the shard table's key is its primary key: unique on each shard, so everywhere
            pk = conn.execute("SELECT a.attname FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid "
                              "AND a.attnum = i.indkey[0] WHERE i.indrelid = 'docs'::regclass AND i.indisprimary"
                              ).fetchall()
            assert pk == [("id",)]
            assert (schema.installed_version(conn) is not None) and plain == (
                conn.execute("SELECT count(*) FROM pg_extension WHERE extname = 'simpg'").fetchone() == (0,))
    code, out, err = run(capsys, "shard", "create", "--dsn", sharded.dsn("coord_ext"), "--table", "docs",
                         "-k", str(K), "--blocks", str(BLOCKS), *sharded.shard_args)
    assert (code, err) == (0, "")
    assert out == ("docs_s1: server s1, public.docs, FOR VALUES WITH (modulus 2, remainder 0)\n"
                   "docs_s2: server s2, public.docs, FOR VALUES WITH (modulus 2, remainder 1)\n")
    code, out, _ = run(capsys, "shard", "check", "--dsn", sharded.dsn("coord_ext"), "--table", "docs")
    assert (code, out) == (0, "")
    code, out, _ = run(capsys, "shard", "check", "--dsn", sharded.dsn("coord_plain"), "--table", "items", "--json")
    assert (code, json.loads(out)) == (0, {"problems": []})
    with psycopg.connect(sharded.dsn("coord_ext")) as conn:
        assert shards.shards(conn, "docs") == [
            shards.ShardInfo("docs_s1", "s1", "public", "docs", "FOR VALUES WITH (modulus 2, remainder 0)", True),
            shards.ShardInfo("docs_s2", "s2", "public", "docs", "FOR VALUES WITH (modulus 2, remainder 1)", True)]
        # the layout is registered once, on the parent: the view lists it, not the partitions
        assert conn.execute("SELECT indexed_table::text, k, levels FROM simpg.indexes").fetchall() == [
            ("docs", K, [BLOCKS])]
        # and simpg.check of the parent asks nothing of its foreign partitions' B-trees
        assert conn.execute("SELECT * FROM simpg.check('docs', verify_rows => false)").fetchall() == []


def test_shard_ddl_prints_what_runs_on_a_shard(sharded: Cluster, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "shard", "ddl", "--dsn", sharded.dsn("coord_ext"), "--table", "docs",
                       "--remote-schema", "Other Schema", "--remote-table", "t")
    assert code == 0
    assert out == (
        'CREATE TABLE "Other Schema".t (id bigint NOT NULL, simhash bigint, body text, PRIMARY KEY (id));\n'
        "SELECT simpg.create_index('\"Other Schema\".t'::regclass, 'simhash'::name, 3::integer, 5::integer, "
        "NULL::integer, NULL::text);\n")


def test_writes_through_the_coordinator_reach_both_shards(sharded: Cluster, data: Data) -> None:
    a, b = shard_ids(sharded, 0, "docs"), shard_ids(sharded, 1, "docs")
    assert a and b and not a & b
    assert a | b == set(data.ids.tolist()) | {len(data.ids) + 1}
    dups = set(data.duplicate_ids)
    assert dups & a and dups & b, "the equal fingerprints are on both shards"
    # each shard computed its prefix columns itself (postgres_fdw sends DEFAULT for them)
    with psycopg.connect(sharded.shard_dsn(1)) as conn:
        assert conn.execute("SELECT count(*) FROM docs WHERE simhash_p7 IS DISTINCT FROM "
                            "simpg.permute(simhash, 3, '{5}'::integer[], 7)").fetchone() == (0,)
    # UPDATE and DELETE through the coordinator too; the row moves with its prefixes
    with psycopg.connect(sharded.dsn("coord_ext"), autocommit=True) as conn:
        new = next(iter(a))
        conn.execute("INSERT INTO docs (id, simhash, body) VALUES (%s, 77, 'moved')", [10**6])
        conn.execute("UPDATE docs SET simhash = 78 WHERE id = %s", [10**6])
        index = ShardedColumn(conn, "docs", "simhash", key_column="id")
        assert index.near(78, 0) == [Neighbor(10**6, 0)] and index.near(77, 0) == []
        conn.execute("DELETE FROM docs WHERE id = %s", [10**6])
        assert index.near(78, 0) == []
        assert new in shard_ids(sharded, 0, "docs")


# -- lookups ---------------------------------------------------------------------------


@pytest.mark.parametrize("db", list(TABLES))
def test_lookups_are_exact_against_brute_force(sharded: Cluster, data: Data, db: str) -> None:
    table = TABLES[db]
    with psycopg.connect(sharded.dsn(db), autocommit=True) as conn:
        index = ShardedColumn(conn, table, "simhash", key_column="id")
        for k in (0, 1, K):
            expected = [brute_near_arrays(data, q, k) for q in data.queries]
            some = slice(None) if k == K else slice(None, None, 5)  # one lookup a statement: the slow part
            assert [index.near(q, k) for q in data.queries[some]] == expected[some]
            assert index.near_many(data.queries, k) == expected
            assert index.near_many(np.array(data.queries[:5], dtype=np.uint64), k) == expected[:5]
        # simpg.near in SQL, nearest first
        for q in data.queries[::7]:
            rows = conn.execute(sql.SQL("SELECT a.id, simpg.hamming(a.simhash, %s) "
                                        "FROM simpg.near(NULL::{}, %s, %s) AS a").format(sql.Identifier(table)),
                                [bits.to_db(q), bits.to_db(q), K]).fetchall()
            assert [d for _, d in rows] == sorted(d for _, d in rows)
            assert sorted(rows) == sorted((n.id, n.distance) for n in brute_near_arrays(data, q, K))
        dup = data.fps[data.duplicate_ids[0] - 1]
        assert [n.id for n in index.near(int(dup), 0)] == data.duplicate_ids
        with pytest.raises(SimpgError, match="k=4 is above the radius k=3"):
            index.near(5, K + 1)
        with pytest.raises(SimpgError, match=f"k=4 is above the radius k=3 that the simpg index on {table}.simhash"):
            index.near_many([5], K + 1)
        with pytest.raises(SimpgError, match="2\\*\\*64|fingerprint"):
            index.near_many([2**64])


def remote_sql(plan: list[str]) -> list[str]:
    return [line.split("Remote SQL: ", 1)[1] for line in plan if "Remote SQL: " in line]


@pytest.mark.parametrize("db", list(TABLES))
def test_ranges_and_distance_filter_go_to_every_shard_at_once(sharded: Cluster, data: Data, db: str) -> None:
    table = TABLES[db]
    q = data.queries[0]
    with psycopg.connect(sharded.dsn(db), autocommit=True) as conn:
        statement = conn.execute("SELECT simpg.near_query(%s::regclass, %s, %s)",
                                 [table, bits.to_db(q), K]).fetchall()[0][0]
        plan = [r[0] for r in conn.execute("EXPLAIN (VERBOSE, COSTS OFF) " + statement)]
        assert sum("Async Foreign Scan" in line for line in plan) == 2, plan
        remote = remote_sql(plan)
        assert len(remote) == 2
        for text in remote:
            assert f"FROM public.{table} WHERE" in text
            # the distance filter, as the shard evaluates it: simpg.hamming inlined
            assert re.search(r"bit_count\(\(simhash # \(?-?\d+\)?::bigint\)::bit\(64\)\)::integer <= 3\)", text), text
            for t in range(10):  # every table's prefix range
                assert re.search(rf"\(simhash_p{t} >= \(?-?\d+\)?::bigint\) AND \(simhash_p{t} <= ", text), text
        # simpg.sketch_distance is inlined the same way, so a sketch filter is sent to the shards too
        plan = [r[0] for r in conn.execute(f"EXPLAIN (VERBOSE, COSTS OFF) SELECT id FROM {table} "
                                           "WHERE simpg.sketch_distance(simhash::bit(64), B'1'::bit(64)) <= 3")]
        assert [text for text in remote_sql(plan) if "bit_count((simhash::bit(64) # " in text] == remote_sql(plan)
        assert len(remote_sql(plan)) == 2, plan
        # SimHashColumn's prepared lookup (parameters, not literals) and ShardedColumn.near_many
        index = ShardedColumn(conn, table, "simhash", key_column="id")
        info = index.index.info
        wire.register_dumpers(conn)
        with psycopg.RawCursor(conn) as cur:  # near_sql's $n placeholders
            cur.execute((sql.SQL("EXPLAIN (VERBOSE, COSTS OFF) ") + statements.near_sql(info)).as_bytes(conn),
                        statements.near_params(info, q, K))
            plan = [r[0] for r in cur.fetchall()]
        assert sum("Async Foreign Scan" in line for line in plan) == 2
        assert all("bit_count(" in text and "simhash_p9 >= " in text for text in remote_sql(plan))
        statement, params = index._near_many_sql(data.queries[:3], K)
        with psycopg.RawCursor(conn) as cur:
            plan = [r[0] for r in cur.execute(b"EXPLAIN (VERBOSE, COSTS OFF) " + statement, params).fetchall()]
        assert sum("Async Foreign Scan" in line for line in plan) == 2  # one query a shard for the batch
        for text in remote_sql(plan):
            for q in data.queries[:3]:  # each lookup's distance filter and ranges
                assert re.search(rf"bit_count\(\(simhash # \(?{bits.to_db(q)}\)?::bigint\)", text), text
            assert text.count("simhash_p9 >= ") == 3


# -- pairs and clusters ------------------------------------------------------------------


def test_pairs_and_clusters_across_shards(sharded: Cluster, data: Data) -> None:
    with psycopg.connect(sharded.dsn("coord_ext"), autocommit=True) as conn:
        index = ShardedColumn(conn, "docs", "simhash", key_column="id")
        got = {(p.a, p.b, p.distance) for p in index.pairs(K)}
        assert got == brute_pairs_arrays(data, K)
        assert any(a in data.duplicate_ids and d == 0 for a, _, d in got)
        # the same rows in one plain table on one server give the same clusters
        conn.execute("CREATE TABLE local_docs (id bigint PRIMARY KEY, simhash bigint)")
        conn.execute("INSERT INTO local_docs SELECT id, simhash FROM docs")
        local = SimHashColumn(conn, "local_docs", "simhash")
        local.create(K, BLOCKS)
        for method in ("representative", "components"):
            clusters = index.clusters(K, method)
            assert len(clusters) > 20 and [len(c) for c in clusters] == sorted((len(c) for c in clusters), reverse=True)
            # clusters of one size may come in another order: rows arrive in another order
            assert sorted(clusters) == sorted(local.clusters(K, method=method))
        assert data.duplicate_ids in index.clusters(0)
        # simpg.pairs needs a unique key, which PostgreSQL does not allow over foreign
        # partitions: it refuses, rather than answer from part of the rows
        with pytest.raises(psycopg.Error, match="table public.docs has no single-column primary key"):
            conn.execute("SELECT * FROM simpg.pairs('docs', 3)").fetchall()
        with pytest.raises(psycopg.Error, match="key column public.docs.id must be not null and unique"):
            conn.execute("SELECT * FROM simpg.clusters('docs', 3, key_column => 'id')").fetchall()


def test_all_rows_are_read_shard_by_shard_in_ctid_ranges(sharded: Cluster, monkeypatch: pytest.MonkeyPatch) -> None:
    """The numpy engine's read of a sharded table (fetch_all) goes partition by partition, in
    ctid ranges each shard runs itself: one statement over the whole table stopped at
    PostgreSQL's 1 GiB limit on 100M rows. A block per statement here, to have many."""
    monkeypatch.setattr(statements, "FETCH_BLOCKS", 1)
    with psycopg.connect(sharded.dsn("coord_ext"), autocommit=True) as conn:
        conn.execute("ANALYZE docs")  # the foreign partitions' block estimates
        parts = conn.execute(statements.FETCH_PARTS_SQL, ["docs"]).fetchall()
        assert [name for _, name, _ in parts] == ["docs_s1", "docs_s2"] and all(b > 1 for _, _, b in parts), parts
        want = {(i, bits.from_db(fp))
                for i, fp in conn.execute("SELECT id, simhash FROM docs WHERE simhash IS NOT NULL")}
        ids, fps = ShardedColumn(conn, "docs", "simhash", key_column="id").index.fetch_all()
        assert len(ids) == len(want) and set(zip(ids.tolist(), fps.tolist(), strict=True)) == want
        # the ranges go to the shard, which reads only those blocks
        info = SimHashColumn(conn, "docs", "simhash", key_column="id").info
        statement = statements.fetch_sql(info, 1, 2, part=sql.Identifier("public", "docs_s1"))
        plan = [r[0] for r in conn.execute(sql.SQL("EXPLAIN (VERBOSE, COSTS OFF) ") + statement)]
        [remote] = remote_sql(plan)
        assert "ctid >= '(1,0)'" in remote and "ctid < '(2,0)'" in remote, remote  # the aggregate too
    # an estimate too small (never analyzed) leaves the last range open: nothing is missed
    monkeypatch.setattr(statements, "FETCH_BLOCKS", 1 << 18)
    with psycopg.connect(sharded.dsn("coord_plain"), autocommit=True) as conn:
        want = {(i, bits.from_db(fp)) for i, fp in conn.execute("SELECT id, simhash FROM items "
                                                                  "WHERE simhash IS NOT NULL")}
        ids, fps = ShardedColumn(conn, "items", "simhash", key_column="id").index.fetch_all()
        assert set(zip(ids.tolist(), fps.tolist(), strict=True)) == want and len(ids) == len(want)


# -- checks and refusals -------------------------------------------------------------------


def test_a_shard_with_another_layout_is_refused(sharded: Cluster) -> None:
    with psycopg.connect(sharded.shard_dsn(0), autocommit=True) as conn:
        conn.execute("CREATE TABLE wrong (id bigint PRIMARY KEY, simhash bigint, body text)")
        conn.execute("SELECT simpg.create_index('wrong', 'simhash', 3, 4) IS NULL")
        conn.execute("CREATE TABLE plain (id bigint PRIMARY KEY, simhash bigint, body text)")
    with psycopg.connect(sharded.dsn("coord_ext"), autocommit=True) as conn:
        with pytest.raises(psycopg.Error, match=r'shard s1 cannot be attached to public.docs: layout differs '
                                                r'\(public.wrong.simhash on server s1 has k=3 blocks=4 '):
            conn.execute("SELECT simpg.attach_shard('docs', 's1', 4, 3, 'public', 'wrong')")
        with pytest.raises(psycopg.Error, match="no simpg index on public.plain.simhash"):
            conn.execute("SELECT simpg.attach_shard('docs', 's1', 4, 3, 'public', 'plain')")
        with pytest.raises(psycopg.Error,
                           match="remainder must be from 0 to modulus - 1, got modulus 2 and remainder 2"):
            conn.execute("SELECT simpg.attach_shard('docs', 's1', 2, 2)")
        with pytest.raises(psycopg.Error, match="foreign server nosuch does not exist"):
            conn.execute("SELECT simpg.attach_shard('docs', 'nosuch', 4, 3)")
        assert [len(shards.shards(conn, "docs"))] == [2]  # nothing was attached
        conn.execute("CREATE TABLE flat (id bigint, simhash bigint)")
        with pytest.raises(psycopg.Error, match="table public.flat is not partitioned"):
            conn.execute("SELECT * FROM simpg.shard_ddl('flat')")
    # a B-tree dropped on a shard: check_shards says which shard
    with psycopg.connect(sharded.shard_dsn(1), autocommit=True) as conn:
        conn.execute("DROP INDEX docs_simhash_p4_idx")
    try:
        with psycopg.connect(sharded.dsn("coord_ext"), autocommit=True) as conn:
            problems = shards.check_shards(conn, "docs")
            assert [(p.shard, p.server, p.problem) for p in problems] == [("docs_s2", "s2", "missing b-tree")]
            assert str(problems[0]).startswith("s2: missing b-tree: public.docs.simhash on server s2 lacks B-trees")
            conn.execute("ALTER FOREIGN TABLE docs_s1 OPTIONS (SET async_capable 'false')")
            assert [p.problem for p in shards.check_shards(conn, "docs")] == ["not async", "missing b-tree"]
            conn.execute("ALTER FOREIGN TABLE docs_s1 OPTIONS (SET async_capable 'true')")
    finally:
        with psycopg.connect(sharded.shard_dsn(1), autocommit=True) as conn:
            assert conn.execute("SELECT simpg.repair('docs')").fetchall()


def test_bad_input_is_refused_with_the_value(sharded: Cluster, capsys: pytest.CaptureFixture[str]) -> None:
    for text in ("s1", "=host=x", "1s=host=x", "s 1=host=x", "s1="):
        with pytest.raises(SimpgError, match="shard must be NAME=CONNINFO"):
            shards.parse_shard(text)
    with pytest.raises(SimpgError, match="shard s1: invalid connection string"):
        shards.parse_shard("s1=host")
    with pytest.raises(SimpgError, match="got name 's 1'") as refused:
        shards.parse_shard("s 1=host=x password=Sup3rsecret")
    assert "Sup3r" not in str(refused.value)
    with pytest.raises(SimpgError, match="shard s1: invalid connection string") as refused:
        shards.parse_shard("s1=postgresql://u:Sup3rsecret@h/db?nosuch=1")
    assert "Sup3r" not in str(refused.value)
    with psycopg.connect(sharded.dsn("coord_ext"), autocommit=True) as conn:
        conn.execute("CREATE TABLE flat2 (id bigint, simhash bigint)")
    code, _, err = run(capsys, "shard", "create", "--dsn", sharded.dsn("coord_ext"), "--table", "flat2",
                       "--blocks", "5", *sharded.shard_args)
    assert (code, err) == (1, "simpg: table flat2 is not partitioned; create it with PARTITION BY HASH (key) "
                              "on the coordinator first\n")
    code, _, err = run(capsys, "shard", "create", "--dsn", sharded.dsn("coord_ext"), "--table", "nosuch",
                       "--blocks", "5", *sharded.shard_args)
    assert (code, err) == (1, "simpg: table nosuch does not exist on the coordinator\n")
    with psycopg.connect(sharded.dsn("coord_ext"), autocommit=True) as conn:
        conn.execute("CREATE TABLE fresh (id bigint NOT NULL, simhash bigint) PARTITION BY HASH (id)")
        with pytest.raises(SimpgError, match="give blocks or rows"):
            shards.create_shards(conn, "fresh", "simhash", [Shard("s1", sharded.shard_dsn(0))])
        with pytest.raises(SimpgError, match=r"shard names must differ, got \['s1', 's1'\]"):
            shards.create_shards(conn, "fresh", "simhash", [Shard("s1", "host=x")] * 2, blocks=5)
        with pytest.raises(SimpgError, match="already has a simpg index of layout k3:5, not k3:6"):
            shards.create_shards(conn, "docs", "simhash", [Shard("s1", sharded.shard_dsn(0))], blocks=6)
    with pytest.raises(SystemExit):
        main(["shard", "create", "--dsn", "x", "--table", "t", "--rows", "many", "--shard", "a=host=x"])
    assert "rows must be a non-negative integer" in capsys.readouterr().err
    # a shard that cannot be reached: the command stops there, naming it (running it again resumes)
    code, _, err = run(capsys, "shard", "create", "--dsn", sharded.dsn("coord_ext"), "--table", "fresh",
                       "--blocks", "5", "--shard", "s3=host=/nonexistent dbname=app user=postgres")
    assert code == 1 and err.startswith('simpg: shard s3: unreachable: could not connect to server "s3"'), err


def test_passwords_are_never_shown(sharded: Cluster, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="simpg")
    with psycopg.connect(sharded.dsn("coord_ext"), autocommit=True) as conn:
        done = shards.create_server(conn, Shard("s_pw", sharded.shard_dsn(0) + " password=Sup3r'secret"))
        assert done[-1] == 'CREATE USER MAPPING FOR CURRENT_USER SERVER "s_pw" OPTIONS ("password" \'********\', ' \
                           '"user" \'postgres\')'
        assert all("Sup3r" not in line for line in done)
        assert "Sup3r" not in caplog.text and "********" in caplog.text
        # the same again: kept as it is; another host: refused, not reused (issue 27)
        assert shards.create_server(conn, Shard("s_pw", sharded.shard_dsn(0) + " password=Sup3r'secret")) == []
        with pytest.raises(SimpgError, match="foreign server s_pw has host '.*', the connection string 'elsewhere'"):
            shards.create_server(conn, Shard("s_pw", "host=elsewhere dbname=app port=5432 password=Sup3r'secret"))
        conn.execute("DROP SERVER s_pw CASCADE")


# -- a shard that is down ----------------------------------------------------------------------


def test_a_shard_that_is_down_is_an_error_naming_it(sharded: Cluster, data: Data,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    q = data.queries[0]
    expected = brute_near_arrays(data, q, K)
    with psycopg.connect(sharded.dsn("coord_ext"), autocommit=True) as conn:
        index = ShardedColumn(conn, "docs", "simhash", key_column="id")
        assert index.near(q) == expected  # postgres_fdw now holds a connection to each shard
        control = sharded.shard_servers[1].control
        assert control is not None
        control("stop")
        try:
            for lookup in (lambda: index.near(q), lambda: index.near_many([q]), lambda: list(index.pairs(K)),
                           lambda: conn.execute("SELECT * FROM simpg.near(NULL::docs, %s, 3)",
                                                [bits.to_db(q)]).fetchall()):
                with pytest.raises((psycopg.Error, SimpgError), match='server "s2"'):
                    lookup()
            with pytest.raises(psycopg.Error, match='server "s2"'):
                conn.execute("INSERT INTO docs (id, simhash) SELECT g, 1 FROM generate_series(%s, %s) AS g",
                             [10**7, 10**7 + 10])
            problems = shards.check_shards(conn, "docs")
            assert [(p.server, p.problem) for p in problems] == [("s2", "unreachable")]
            assert problems[0].detail.startswith('could not connect to server "s2": connection to server on socket')
            code, out, _ = run(capsys, "shard", "check", "--dsn", sharded.dsn("coord_ext"), "--table", "docs")
            assert code == 1 and out.startswith('s2: unreachable: could not connect to server "s2"')
            with pytest.raises(SimpgError, match="shard s2: unreachable"):
                shards.prepare_shard(conn, "docs", Shard("s2", sharded.shard_dsn(1)), remote_table="other")
        finally:
            control("start")
        assert index.near(q) == expected  # postgres_fdw connects again
        assert index.near_many(data.queries[:20]) == [brute_near_arrays(data, x, K) for x in data.queries[:20]]
    with psycopg.connect(sharded.dsn("coord_ext"), autocommit=True) as conn:
        conn.execute("CREATE SERVER s9 FOREIGN DATA WRAPPER postgres_fdw OPTIONS (host '/nonexistent', dbname 'app')")
        conn.execute("CREATE USER MAPPING FOR CURRENT_USER SERVER s9")
        with pytest.raises(psycopg.errors.SqlclientUnableToEstablishSqlconnection,
                           match=r'shard s9 cannot be attached to public.docs: unreachable '
                                 r'\(could not connect to server "s9"'):
            conn.execute("SELECT simpg.attach_shard('docs', 's9', 4, 3)")
