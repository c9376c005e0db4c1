"""The range distribution of shards (postgres_fdw), on real servers: a coordinator and two shards.

Google's design (seeds 001/003): each permuted table of the layout is a table of the
coordinator range-partitioned by its permuted value over the shards, kept in step with
the user's table by triggers. The module starts three servers (two embedded 18, one Debian 15) of
its own (tests/servers.py): a coordinator with simpg as an extension, a shard with the
extension and one with the plain script. Every answer is compared with a brute-force
popcount, on data with planted neighbours, duplicates, bits 0 and 63, negative int8 and
rows whose permuted values sit on the boundary between the two shards.
"""

from __future__ import annotations

import json
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
from simpg.layout import Layout
from simpg.psycopg import Neighbor, configure_lookups
from simpg.shards import Shard, ShardedColumn
from tests import servers
from tests.oracles import brute_near_arrays, brute_pairs_arrays

K = 3
BLOCKS = 5  # layout k3:5, 10 permuted tables
LAYOUT = Layout(K, (BLOCKS,))
TABLES = [f"docs_simhash_r{t}" for t in range(LAYOUT.tables)]


@dataclass
class Cluster:
    """The module's servers: a coordinator and two shards (``s1``, ``s2``), all running."""

    coord: servers.Server
    shard_servers: list[servers.Server]

    @property
    def dsn(self) -> str:
        return self.coord.dsn("coord")

    def shard_dsn(self, i: int) -> str:
        return self.shard_servers[i].dsn("app")

    @property
    def shard_args(self) -> list[str]:
        return [arg for i in range(2) for arg in ("--shard", f"s{i + 1}={self.shard_dsn(i)}")]


@dataclass
class Data:
    """The rows of the table on the coordinator (those with a fingerprint), and the queries."""

    ids: np.ndarray      # int64
    fps: np.ndarray      # uint64
    queries: list[int]
    duplicate_ids: list[int]


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def unpermute(p: int, t: int) -> int:
    """The fingerprint whose permuted value for table t is p (unsigned)."""
    order, _ = LAYOUT._order(t)
    p &= 2**64 - 1
    return sum(((p >> (63 - i)) & 1) << (63 - src) for i, src in enumerate(order))


def make_data(seed: int = 31) -> Data:
    rng = np.random.default_rng(seed)
    fps: list[int] = [int(x) for x in rng.integers(0, 2**64, size=5000, dtype=np.uint64)]
    queries: list[int] = []
    # planted neighbours at 1 .. k + 1 bits, bits 0 and 63 among the flips
    for base in [int(x) for x in rng.integers(0, 2**64, size=40, dtype=np.uint64)]:
        fps.append(base)
        queries.append(base)
        for d in range(1, K + 2):
            flips = [0, 63][:d] + [int(b) for b in rng.choice(np.arange(1, 63), size=max(0, d - 2), replace=False)]
            v = base
            for b in flips:
                v ^= 1 << b
            fps.append(v)
            queries.append(v ^ (1 << int(rng.integers(0, 64))))
    # extremes: 0, all ones, the sign bit, its neighbour (negative and positive int8)
    for v in (0, 2**64 - 1, 2**63, 2**63 - 1):
        fps += [v, v ^ 1, v ^ (1 << 63), v ^ 0b111]
        queries.append(v)
    # the boundary between the shards (at p = 0): for some tables, rows whose permuted
    # value is the first of s2's range (0 and its prefix) or the last of s1's (-1 and its
    # prefix), and their neighbours, which lie on the other side for other tables
    for t in (0, 4, 9):
        for p in (0, 1, 2**40 + 5, -1, -2, -(2**40) - 5):
            v = unpermute(p, t)
            fps += [v, v ^ (1 << 63), v ^ 1 ^ (1 << 62)]
            queries += [v, v ^ 2]
    # one fingerprint in many rows
    dup = int(rng.integers(0, 2**64, dtype=np.uint64))
    first_dup = len(fps) + 1
    fps += [dup] * 12
    queries += [dup, dup ^ (1 << 63)]
    queries += [int(x) for x in rng.integers(0, 2**64, size=20, dtype=np.uint64)]
    ids = np.arange(1, len(fps) + 1, dtype=np.int64)
    return Data(ids, np.array(fps, dtype=np.uint64), queries, list(range(first_dup, first_dup + 12)))


@pytest.fixture(scope="module")
def data() -> Data:
    return make_data()


@pytest.fixture(scope="module")
def cluster(data: Data) -> Iterator[Cluster]:
    """The servers, with ``docs`` on the coordinator (rows loaded first) set up by ``simpg shard create``."""
    # the coordinator and the first shard on the embedded server (its share folder is this
    # checkout's own, so the extension files may be written there), the second shard on
    # Debian's 15 with the plain script (its share folder is shared: not written); the
    # tests that stop a shard stop that one
    started = [servers.start_embedded(), servers.start_embedded(), servers.start_debian(15)]
    try:
        coord, *shard_servers = started
        schema.install_extension_files(sharedir=coord.sharedir)
        for server, db, plain in [(coord, "coord", False), (coord, "coord_plain", True),
                                  (shard_servers[0], "app", False), (shard_servers[1], "app", True)]:
            with psycopg.connect(server.dsn(), autocommit=True) as conn:
                conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(db)))
            with psycopg.connect(server.dsn(db), autocommit=True) as conn:
                schema.install(conn, plain=plain)
        found = Cluster(coord, shard_servers)
        with psycopg.connect(found.dsn, autocommit=True) as conn:
            conn.execute("CREATE TABLE docs (id bigint PRIMARY KEY, simhash bigint, body text)")
            conn.execute("INSERT INTO docs (id, simhash, body) SELECT u.id, u.fp, 'row ' || u.id "
                         "FROM unnest(%s::bigint[], %s::bigint[]) AS u(id, fp)",
                         [data.ids.tolist(), [bits.to_db(int(v)) for v in data.fps]])
            conn.execute("INSERT INTO docs (id, simhash, body) VALUES (%s, NULL, 'no fingerprint')",
                         [len(data.ids) + 1])
        assert main(["shard", "create", "--dsn", found.dsn, "--table", "docs", "--distribution", "range",
                     "-k", str(K), "--blocks", str(BLOCKS), *found.shard_args]) == 0
        yield found
    finally:
        for server in started:
            for stop in server._stop:
                stop.cleanup() if hasattr(stop, "cleanup") else stop()  # type: ignore[operator]


def shard_rows(cluster: Cluster, i: int, table: str) -> list[tuple[int, int, int]]:
    with psycopg.connect(cluster.shard_dsn(i)) as conn:
        return conn.execute(sql.SQL("SELECT p, key, fp FROM {}").format(sql.Identifier(table))).fetchall()


def coord(cluster: Cluster) -> psycopg.Connection:
    return psycopg.connect(cluster.dsn, autocommit=True)


# -- setup -----------------------------------------------------------------------------


def test_create_sets_up_the_shards_and_runs_again_without_change(
        cluster: Cluster, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "shard", "create", "--dsn", cluster.dsn, "--table", "docs", "--distribution", "range",
                         "-k", str(K), "--blocks", str(BLOCKS), *cluster.shard_args)
    assert (code, err) == (0, "")
    assert out == ("docs_simhash_r0_s1: server s1, FOR VALUES FROM (MINVALUE) TO ('0') "
                   "(and the same for 9 more permuted tables)\n"
                   "docs_simhash_r0_s2: server s2, FOR VALUES FROM ('0') TO (MAXVALUE) "
                   "(and the same for 9 more permuted tables)\n")
    code, out, _ = run(capsys, "shard", "check", "--dsn", cluster.dsn, "--table", "docs")
    assert (code, out) == (0, "")
    code, out, _ = run(capsys, "shard", "check", "--dsn", cluster.dsn, "--table", "docs", "--json")
    assert (code, json.loads(out)) == (0, {"problems": []})
    with coord(cluster) as conn:
        layout = shards.range_layout(conn, "docs")
        assert (layout.column, layout.key_column, layout.layout, layout.tables) == ("simhash", "id", LAYOUT,
                                                                                    tuple(TABLES))
        infos = shards.range_shards(conn, "docs")
        assert len(infos) == 2 * LAYOUT.tables and all(i.async_capable for i in infos)
        assert [i.shard for i in infos[:2]] == ["docs_simhash_r0_s1", "docs_simhash_r0_s2"]
        assert [(i.server, i.bound) for i in infos[-2:]] == [("s1", "FOR VALUES FROM (MINVALUE) TO ('0')"),
                                                             ("s2", "FOR VALUES FROM ('0') TO (MAXVALUE)")]
        # the triggers are the registry: the coordinator's table has no simpg index
        assert conn.execute("SELECT count(*) FROM simpg.indexes").fetchone() == (0,)
        assert shards.distribution(conn, "docs") == "range"
    for i in range(2):
        with psycopg.connect(cluster.shard_dsn(i)) as conn:
            indexes = conn.execute("SELECT tablename, indexdef FROM pg_indexes WHERE schemaname = 'public' "
                                   "ORDER BY tablename").fetchall()
            assert [t for t, _ in indexes] == sorted(TABLES)
            assert all("USING btree (p) INCLUDE (key, fp)" in d for _, d in indexes)
    code, out, _ = run(capsys, "shard", "ddl", "--dsn", cluster.dsn, "--table", "docs", "--remote-schema", "Other")
    assert code == 0 and out.splitlines()[0] == ('CREATE TABLE IF NOT EXISTS "Other".docs_simhash_r0 '
                                                 '(p bigint NOT NULL, key bigint NOT NULL, fp bigint NOT NULL);')
    assert out.splitlines()[-1] == ('CREATE INDEX IF NOT EXISTS docs_simhash_r9_p_idx ON "Other".docs_simhash_r9 '
                                    '(p) INCLUDE (key, fp) WITH (fillfactor = 100);')


def test_stored_permutations_are_pythons_and_each_row_is_on_its_shard(cluster: Cluster, data: Data) -> None:
    want = {(int(i), bits.to_db(int(f))) for i, f in zip(data.ids, data.fps, strict=True)}
    for t, table in enumerate(TABLES):
        s1, s2 = shard_rows(cluster, 0, table), shard_rows(cluster, 1, table)
        # equal ranges of the signed value: with 2 shards, p < 0 on s1 and p >= 0 on s2
        assert s1 and s2 and all(p < 0 for p, _, _ in s1) and all(p >= 0 for p, _, _ in s2)
        # the p SQL stored is Layout's permutation, bit for bit; NULL fingerprints are not stored
        assert all(p == LAYOUT.permute(bits.from_db(fp), t) for p, _, fp in s1 + s2), t
        assert {(key, fp) for _, key, fp in s1 + s2} == want and len(s1) + len(s2) == len(want)
    # the boundary rows: p = 0 is the first value of s2, p = -1 the last of s1
    assert (0, 0) in {(p, fp) for p, _, fp in shard_rows(cluster, 1, TABLES[4])}
    assert any(p == -1 for p, _, _ in shard_rows(cluster, 0, TABLES[4]))
    with coord(cluster) as conn:
        assert conn.execute("SELECT * FROM simpg.range_shard_bounds(3, '{5}', 4)").fetchall() == [
            (0, None, -(2**62)), (1, -(2**62), 0), (2, 0, 2**62), (3, 2**62, None)]
        # not a power of two: cuts on multiples of 2^(64 - 25), the smallest prefix of k3:5 (12 + 13 bits)
        cuts = conn.execute("SELECT hi FROM simpg.range_shard_bounds(3, '{5}', 3) WHERE hi IS NOT NULL").fetchall()
        assert all(c % 2**39 == 0 for (c,) in cuts) and len(cuts) == 2
        with pytest.raises(psycopg.Error, match=r"shards=33554433 is too many for layout k=3 blocks=5: log2\(shards\) "
                                                r"must be at most its smallest prefix, 25 bits \(at most 33554432"):
            conn.execute("SELECT * FROM simpg.range_shard_bounds(3, '{5}', 33554433)")


# -- lookups ---------------------------------------------------------------------------


def test_lookups_are_exact_against_brute_force(cluster: Cluster, data: Data) -> None:
    with coord(cluster) as conn:
        configure_lookups(conn)
        index = ShardedColumn(conn, "docs", "simhash")
        assert index.distribution == "range"
        for k in (0, 1, K):
            expected = [brute_near_arrays(data, q, k) for q in data.queries]
            some = slice(None) if k == K else slice(None, None, 4)
            assert [index.near(q, k) for q in data.queries[some]] == expected[some]
            assert index.near_many(data.queries, k) == expected
        assert index.near_many(np.array(data.queries[:5], dtype=np.uint64)) == [
            brute_near_arrays(data, q, K) for q in data.queries[:5]]
        # in SQL: range_near nearest first, range_near_many by query (NULL finds nothing)
        for q in data.queries[::9]:
            rows = conn.execute("SELECT key, distance FROM simpg.range_near('docs', %s, %s)",
                                [bits.to_db(q), K]).fetchall()
            assert [Neighbor(*r) for r in rows] == brute_near_arrays(data, q, K)
        some = data.queries[:150]
        rows = conn.execute("SELECT query, key, distance FROM simpg.range_near_many('docs', %s)",
                            [[bits.to_db(q) for q in some[:70]] + [None] + [bits.to_db(q) for q in some[70:]]]
                            ).fetchall()
        got: list[list[Neighbor]] = [[] for _ in range(len(some) + 1)]
        for n, key, d in rows:
            got[n - 1].append(Neighbor(key, d))
        expected = [brute_near_arrays(data, q, K) for q in some]
        assert got == expected[:70] + [[]] + expected[70:]
        dup = int(data.fps[data.duplicate_ids[0] - 1])
        assert [n.id for n in index.near(dup, 0)] == data.duplicate_ids
        with pytest.raises(SimpgError, match="k=4 is above the radius k=3 that the range shards of docs.simhash"):
            index.near(5, K + 1)
        with pytest.raises(SimpgError, match="k=4 is above the radius k=3"):
            index.near_many([5], K + 1)
        with pytest.raises(psycopg.Error, match="k=4 is above the radius k=3"):
            conn.execute("SELECT * FROM simpg.range_near('docs', 5, 4)")
        with pytest.raises(psycopg.Error, match="k must be a non-negative integer, got -1"):
            conn.execute("SELECT * FROM simpg.range_near_many('docs', '{5}', -1)")
        with pytest.raises(SimpgError, match="2\\*\\*64|fingerprint"):
            index.near(2**64)
        with pytest.raises(SimpgError, match="keyed by id, not body"):
            ShardedColumn(conn, "docs", "simhash", key_column="body")


def remote_sql(plan: list[str]) -> list[str]:
    return [line.split("Remote SQL: ", 1)[1] for line in plan if "Remote SQL: " in line]


def test_a_lookup_reads_one_partition_per_permuted_table(cluster: Cluster, data: Data) -> None:
    with coord(cluster) as conn:
        for q in (data.queries[0], 0, 2**64 - 1):
            statement = conn.execute("SELECT simpg.range_near_query('docs', %s, 3)", [bits.to_db(q)]).fetchone()[0]
            plan = [r[0] for r in conn.execute("EXPLAIN (VERBOSE, COSTS OFF) " + statement)]
            scans = [re.search(r"Foreign Scan on public\.(\w+)", line) for line in plan]
            names = [m.group(1) for m in scans if m]
            # one foreign scan per permuted table, on the shard that holds the query's prefix
            want = [f"{table}_{'s1' if LAYOUT.permute(q, t) < 0 else 's2'}" for t, table in enumerate(TABLES)]
            assert names == want, plan
            # named directly, the partitions are scanned at once
            assert sum("Async Foreign Scan on" in line for line in plan) == LAYOUT.tables, plan
            for t, text in enumerate(remote_sql(plan)):
                lo, hi = LAYOUT.prefix_range(q, t)
                assert f"FROM public.{TABLES[t]} WHERE" in text
                assert re.search(rf"\(p >= \(?{lo}\)?::bigint\)\) AND \(\(p <= \(?{hi}\)?::bigint\)", text), text
                assert re.search(r"bit_count\(\(fp # \(?-?\d+\)?::bigint\)::bit\(64\)\)::integer <= 3\)", text), text
        # ShardedColumn.near's prepared statement: a generic plan pruned when it starts
        conn.execute("SET plan_cache_mode = force_generic_plan")
        index = ShardedColumn(conn, "docs", "simhash")
        q = data.queries[0]
        conn.execute("PREPARE look AS " + index._near_statement)  # $1 fp, $2 k, then each table's lo, hi
        ranges = ", ".join(f"{lo}, {hi}" for lo, hi in LAYOUT.prefix_ranges(q))
        plan = [r[0] for r in conn.execute(
            f"EXPLAIN (ANALYZE, VERBOSE, COSTS OFF) EXECUTE look({bits.to_db(q)}, {K}, {ranges})")]
        assert sum("Subplans Removed: 1" in line for line in plan) == LAYOUT.tables, plan
        assert sum("Foreign Scan on" in line for line in plan) == LAYOUT.tables


def test_a_coordinator_with_the_plain_script_sends_the_same_filter(cluster: Cluster, data: Data) -> None:
    """simpg.hamming is inlined into bit_count before postgres_fdw decides, whichever way
    simpg was installed on the coordinator: the shards get the distance filter."""
    with psycopg.connect(cluster.coord.dsn("coord_plain"), autocommit=True) as conn:
        conn.execute("CREATE TABLE items (id integer PRIMARY KEY, simhash bigint)")
        conn.execute("INSERT INTO items SELECT u.n, u.fp FROM unnest(%s::bigint[]) WITH ORDINALITY AS u(fp, n)",
                     [[bits.to_db(int(v)) for v in data.fps]])
        assert shards.create_shards(conn, "items", "simhash", [Shard("s1", cluster.shard_dsn(0)),
                                                               Shard("s2", cluster.shard_dsn(1))],
                                    k=K, blocks=BLOCKS, distribution="range") == []
        index = ShardedColumn(conn, "items", "simhash")
        assert [index.near(q) for q in data.queries[::6]] == [brute_near_arrays(data, q, K) for q in data.queries[::6]]
        q = data.queries[0]
        statement = conn.execute("SELECT simpg.range_near_query('items', %s)", [bits.to_db(q)]).fetchone()[0]
        remote = remote_sql([r[0] for r in conn.execute("EXPLAIN (VERBOSE, COSTS OFF) " + statement)])
        assert len(remote) == LAYOUT.tables
        assert all("bit_count((fp # " in text and "p >= " in text for text in remote), remote
        assert shards.check_range_shards(conn, "items") == []


# -- writes ------------------------------------------------------------------------------


def in_step(conn: psycopg.Connection) -> None:
    assert shards.check_range_shards(conn, "docs") == []


def test_writes_keep_every_permuted_table_in_step(cluster: Cluster, data: Data) -> None:
    base = 10**6
    with coord(cluster) as conn:
        index = ShardedColumn(conn, "docs", "simhash")
        conn.execute("INSERT INTO docs (id, simhash, body) VALUES (%s, 77, 'a'), (%s, -77, 'b'), (%s, NULL, 'c')",
                     [base, base + 1, base + 2])
        assert index.near(77, 0) == [Neighbor(base, 0)] and index.near(2**64 - 77, 0) == [Neighbor(base + 1, 0)]
        conn.execute("UPDATE docs SET simhash = 78 WHERE id = %s", [base])        # the fingerprint
        assert index.near(78, 0) == [Neighbor(base, 0)] and index.near(77, 0) == []
        conn.execute("UPDATE docs SET id = %s WHERE id = %s", [base + 3, base])   # the key
        assert index.near(78, 0) == [Neighbor(base + 3, 0)]
        conn.execute("UPDATE docs SET simhash = 79 WHERE id = %s", [base + 2])    # NULL to a value
        conn.execute("UPDATE docs SET simhash = NULL WHERE id = %s", [base + 1])  # a value to NULL
        assert index.near(79, 0) == [Neighbor(base + 2, 0)] and index.near(2**64 - 77, 0) == []
        conn.execute("UPDATE docs SET body = 'only the body' WHERE id >= %s", [base])
        conn.execute("INSERT INTO docs (id, simhash, body) VALUES (%s, 80, 'x') "
                     "ON CONFLICT (id) DO UPDATE SET simhash = excluded.simhash", [base + 3])
        assert index.near(80, 0) == [Neighbor(base + 3, 0)] and index.near(78, 0) == []
        # two rows swap their fingerprints in one statement
        conn.execute("UPDATE docs SET simhash = CASE id WHEN %s THEN 80 ELSE 79 END WHERE id IN (%s, %s)",
                     [base + 2, base + 2, base + 3])
        assert index.near(80, 0) == [Neighbor(base + 2, 0)] and index.near(79, 0) == [Neighbor(base + 3, 0)]
        in_step(conn)
        # a statement of many rows: one INSERT per permuted table, batched to the shards
        conn.execute("INSERT INTO docs (id, simhash) SELECT g, g * 1000003 FROM generate_series(%s::bigint, %s) AS g",
                     [2 * base, 2 * base + 2999])
        conn.execute("UPDATE docs SET simhash = simhash # 1 WHERE id BETWEEN %s AND %s", [2 * base, 2 * base + 1499])
        assert index.near(2 * base * 1000003 ^ 1, 0) == [Neighbor(2 * base, 0)]
        in_step(conn)
        conn.execute("DELETE FROM docs WHERE id >= %s", [base])
        assert index.near(80, 0) == [] and index.near(2 * base * 1000003 ^ 1, 0) == []
        in_step(conn)
        assert index.near_many(data.queries[:40]) == [brute_near_arrays(data, q, K) for q in data.queries[:40]]


def test_truncate_empties_the_shards_and_a_second_table_has_its_own(cluster: Cluster) -> None:
    with coord(cluster) as conn:
        conn.execute("CREATE TABLE notes (n integer PRIMARY KEY, fp bigint)")
        conn.execute("INSERT INTO notes SELECT g, g FROM generate_series(1, 100) AS g")
        problems = shards.create_shards(conn, "notes", "fp", [Shard("s1", cluster.shard_dsn(0)),
                                                              Shard("s2", cluster.shard_dsn(1))],
                                        k=2, blocks=4, distribution="range")
        assert problems == []
        index = ShardedColumn(conn, "notes", "fp", key_column="n")
        assert index.near(7, 0) == [Neighbor(7, 0)]
        assert shards.check_range_shards(conn, "notes") == []
        conn.execute("TRUNCATE notes")
        assert index.near(7, 0) == [] and shards.check_range_shards(conn, "notes") == []
        with psycopg.connect(cluster.shard_dsn(0)) as shard:
            assert shard.execute("SELECT count(*) FROM notes_fp_r0").fetchone() == (0,)
        # rows written while the triggers were off: check sees it, range_fill rebuilds
        conn.execute("ALTER TABLE notes DISABLE TRIGGER USER")
        conn.execute("INSERT INTO notes SELECT g, g FROM generate_series(1, 50) AS g")
        conn.execute("ALTER TABLE notes ENABLE TRIGGER USER")
        assert {p.problem for p in shards.check_range_shards(conn, "notes")} == {"row count differs"}
        assert conn.execute("SELECT simpg.range_fill('notes')").fetchone() == (50,)
        assert shards.check_range_shards(conn, "notes") == [] and index.near(7, 0) == [Neighbor(7, 0)]
        conn.execute("SELECT simpg.drop_range_index('notes')")
        assert shards.distribution(conn, "notes") == "hash"
        assert conn.execute("SELECT to_regclass('notes_fp_r0')").fetchone() == (None,)


def test_a_partitioned_table_on_the_coordinator_is_kept_in_step_through_its_parent(cluster: Cluster) -> None:
    with coord(cluster) as conn:
        conn.execute("CREATE TABLE parts (id bigint PRIMARY KEY, fp bigint) PARTITION BY HASH (id)")
        for r in range(2):
            conn.execute(f"CREATE TABLE parts_{r} PARTITION OF parts FOR VALUES WITH (MODULUS 2, REMAINDER {r})")
        conn.execute("INSERT INTO parts SELECT g, g * 104729 FROM generate_series(1, 200) AS g")
        assert shards.create_shards(conn, "parts", "fp", [Shard("s1", cluster.shard_dsn(0)),
                                                          Shard("s2", cluster.shard_dsn(1))],
                                    k=K, blocks=BLOCKS, distribution="range") == []
        index = ShardedColumn(conn, "parts", "fp")
        conn.execute("INSERT INTO parts VALUES (201, -5), (202, -6)")
        conn.execute("UPDATE parts SET fp = -7 WHERE id = 201")        # rows of both partitions
        conn.execute("UPDATE parts SET id = 301 WHERE id = 202")       # moves to the other partition
        conn.execute("DELETE FROM parts WHERE id <= 100")
        assert index.near(2**64 - 7, 0) == [Neighbor(201, 0)] and index.near(2**64 - 6, 0) == [Neighbor(301, 0)]
        assert index.near(104729, 0) == [] and index.near(150 * 104729, 0) == [Neighbor(150, 0)]
        assert shards.check_range_shards(conn, "parts") == []


# -- pairs and clusters --------------------------------------------------------------------


def test_pairs_and_clusters_across_shards(cluster: Cluster, data: Data) -> None:
    with coord(cluster) as conn:
        index = ShardedColumn(conn, "docs", "simhash")
        got = [(p.a, p.b, p.distance) for p in index.pairs(K)]
        assert len(got) == len(set(got)) and set(got) == brute_pairs_arrays(data, K)
        assert {(p.a, p.b, p.distance) for p in index.pairs(1)} == brute_pairs_arrays(data, 1)
        # the same rows in one plain table on one server give the same clusters
        conn.execute("CREATE TABLE local_docs (id bigint PRIMARY KEY, simhash bigint)")
        conn.execute("INSERT INTO local_docs SELECT id, simhash FROM docs")
        conn.execute("SELECT simpg.create_index('local_docs', 'simhash', 3, 5)")
        for method in ("representative", "components"):
            clusters = index.clusters(K, method)
            local = conn.execute("SELECT array_agg(key ORDER BY key) FROM simpg.clusters('local_docs', 3, "
                                 "method => %s) GROUP BY cluster_id", [method]).fetchall()
            assert sorted(clusters) == sorted(c for (c,) in local) and len(clusters) > 20
        assert data.duplicate_ids in index.clusters(0)
        ids, fps = index.fetch_all()
        assert len(ids) == len(data.ids) and set(zip(ids.tolist(), fps.tolist(), strict=True)) == set(
            zip(data.ids.tolist(), data.fps.tolist(), strict=True))


# -- checks and refusals -------------------------------------------------------------------


def test_check_names_the_shard_whose_tables_are_wrong(cluster: Cluster, capsys: pytest.CaptureFixture[str]) -> None:
    table = TABLES[3]
    with psycopg.connect(cluster.shard_dsn(1), autocommit=True) as shard:
        row = shard.execute(sql.SQL("SELECT p, key, fp FROM {} LIMIT 1").format(sql.Identifier(table))).fetchone()
        shard.execute(sql.SQL("DELETE FROM {} WHERE key = %s").format(sql.Identifier(table)), [row[1]])
    try:
        with coord(cluster) as conn:
            problems = shards.check_range_shards(conn, "docs")
            assert [(p.shard, p.server, p.problem) for p in problems] == [
                (f"{table}_s2", "s2", "row count differs")]
            assert re.match(rf"public.{table}_s2 on server s2 holds \d+ rows; public.docs has \d+ for its range",
                            problems[0].detail)
            assert shards.check_range_shards(conn, "docs", verify_rows=False) == []
        code, out, _ = run(capsys, "shard", "check", "--dsn", cluster.dsn, "--table", "docs")
        assert code == 1 and out.startswith(f"s2: row count differs: public.{table}_s2 on server s2 holds")
    finally:
        with psycopg.connect(cluster.shard_dsn(1), autocommit=True) as shard:
            shard.execute(sql.SQL("INSERT INTO {} VALUES (%s, %s, %s)").format(sql.Identifier(table)), row)
    with psycopg.connect(cluster.shard_dsn(0), autocommit=True) as shard:
        # a row of another layout (or loaded by hand on the wrong shard), a missing B-tree
        shard.execute(sql.SQL("INSERT INTO {} VALUES (5, 6, 7)").format(sql.Identifier(TABLES[1])))
        shard.execute(sql.SQL("DROP INDEX {}").format(sql.Identifier(TABLES[2] + "_p_idx")))
    try:
        with coord(cluster) as conn:
            problems = shards.check_range_shards(conn, "docs")
            assert [(p.shard, p.problem) for p in problems] == [
                (f"{TABLES[1]}_s1", "layout differs"), (f"{TABLES[1]}_s1", "row count differs"),
                (f"{TABLES[2]}_s1", "missing b-tree")], problems
            assert problems[0].detail.startswith(f"public.{TABLES[1]}_s1 on server s1 holds 1 rows outside its range")
            conn.execute("ALTER TRIGGER simpg_range_simhash_delete ON docs RENAME TO other_name")
            conn.execute("ALTER TABLE docs DISABLE TRIGGER other_name")
            assert [p.problem for p in shards.check_range_shards(conn, "docs", verify_rows=False)] == [
                "trigger missing", "missing b-tree"]
            conn.execute("ALTER TABLE docs ENABLE TRIGGER other_name")
    finally:
        with psycopg.connect(cluster.shard_dsn(0), autocommit=True) as shard:
            shard.execute(sql.SQL("DELETE FROM {} WHERE key = 6 AND p = 5").format(sql.Identifier(TABLES[1])))
            shard.execute(sql.SQL("CREATE INDEX {} ON {} (p) INCLUDE (key, fp)").format(
                sql.Identifier(TABLES[2] + "_p_idx"), sql.Identifier(TABLES[2])))
    with coord(cluster) as conn:
        in_step(conn)


def test_bad_input_is_refused_with_the_value(cluster: Cluster, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["--distribution", "range", "--blocks", "5", *cluster.shard_args]
    code, _, err = run(capsys, "shard", "create", "--dsn", cluster.dsn, "--table", "nosuch", *args)
    assert (code, err) == (1, "simpg: table nosuch does not exist on the coordinator\n")
    with coord(cluster) as conn:
        conn.execute("CREATE TABLE nokey (id bigint, simhash bigint)")
        conn.execute("CREATE TABLE textkey (id text PRIMARY KEY, simhash bigint)")
        conn.execute("CREATE TABLE wide (id bigint PRIMARY KEY, simhash bigint)")
    code, _, err = run(capsys, "shard", "create", "--dsn", cluster.dsn, "--table", "nokey", *args)
    assert (code, err) == (1, "simpg: table public.nokey has no single-column primary key; "
                              "name a unique not-null column as key_column\n")
    code, _, err = run(capsys, "shard", "create", "--dsn", cluster.dsn, "--table", "textkey", *args)
    assert code == 1 and err.startswith("simpg: key column public.textkey.id is text; range shards store keys")
    code, _, err = run(capsys, "shard", "create", "--dsn", cluster.dsn, "--table", "wide", "--column", "nope", *args)
    assert (code, err) == (1, "simpg: column nope of table public.wide does not exist\n")
    code, _, err = run(capsys, "shard", "create", "--dsn", cluster.dsn, "--table", "docs", "-k", "3", "--blocks", "6",
                       "--distribution", "range", *cluster.shard_args)
    assert (code, err) == (1, "simpg: docs.simhash already has range shards of layout k3:5, not k3:6\n")
    with coord(cluster) as conn:
        # more shards than the smallest prefix allows (k7:8 has 8-bit prefixes): refused before anything is made
        many = [Shard(f"x{i}", "host=/nonexistent") for i in range(257)]
        with pytest.raises(SimpgError, match=r"shards=257 is too many for layout k=7 blocks=8: log2\(shards\) must "
                                             r"be at most its smallest prefix, 8 bits \(at most 256 shards\)"):
            shards.create_shards(conn, "wide", "simhash", many, k=7, blocks=8, distribution="range")
        assert shards.distribution(conn, "wide") == "hash"
        with pytest.raises(psycopg.Error, match="table public.docs has range shards on column simhash already"):
            conn.execute("SELECT simpg.create_range_index('docs', 'simhash', 3, 5)")
        with pytest.raises(psycopg.Error, match="shard_number must be from 0 to shards - 1, got shard_number 2 "
                                                "and shards 2"):
            conn.execute("SELECT simpg.attach_range_shard('docs', 's1', 2, 2)")
        with pytest.raises(psycopg.Error, match="table public.wide has no range shards"):
            conn.execute("SELECT * FROM simpg.range_near('wide', 1)")
    # a shard that cannot be reached: the command stops there, naming it
    code, _, err = run(capsys, "shard", "create", "--dsn", cluster.dsn, "--table", "wide", "--distribution", "range",
                       "--blocks", "5", "--shard", "s3=host=/nonexistent dbname=app user=postgres")
    assert code == 1 and err.startswith('simpg: shard s3: unreachable: could not connect to server "s3"'), err


# -- a shard that is down ----------------------------------------------------------------------


def test_a_shard_that_is_down_is_an_error_naming_it(cluster: Cluster, data: Data,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    # a query whose prefixes lie on both shards: every lookup needs s2
    q = next(x for x in data.queries if {LAYOUT.permute(x, t) < 0 for t in range(LAYOUT.tables)} == {True, False})
    expected = brute_near_arrays(data, q, K)
    with coord(cluster) as conn:
        index = ShardedColumn(conn, "docs", "simhash")
        assert index.near(q) == expected  # postgres_fdw now holds a connection to each shard
        control = cluster.shard_servers[1].control
        assert control is not None
        control("stop")
        try:
            for lookup in (lambda: index.near(q), lambda: index.near_many([q]), lambda: list(index.pairs(K)),
                           lambda: conn.execute("SELECT * FROM simpg.range_near('docs', %s)",
                                                [bits.to_db(q)]).fetchall()):
                with pytest.raises((psycopg.Error, SimpgError), match='server "s2"'):
                    lookup()
            with pytest.raises(psycopg.Error, match='server "s2"'):
                conn.execute("INSERT INTO docs (id, simhash) SELECT g, g FROM generate_series(%s, %s) AS g",
                             [10**7, 10**7 + 50])
            problems = shards.check_shards(conn, "docs")
            assert {(p.server, p.problem) for p in problems} == {("s2", "unreachable")}
            assert problems[0].detail.startswith('could not connect to server "s2"')
            code, out, _ = run(capsys, "shard", "check", "--dsn", cluster.dsn, "--table", "docs")
            assert code == 1 and out.startswith('s2: unreachable: could not connect to server "s2"')
        finally:
            control("start")
        assert index.near(q) == expected  # postgres_fdw connects again
        assert conn.execute("SELECT count(*) FROM docs WHERE id >= %s", [10**7]).fetchone() == (0,)
        in_step(conn)
