"""simpg.pairs, simpg.clusters, cluster_sizes, duplicate_stats and SimHashColumn.pairs / clusters
confirmed by the sketch (issue 14 item 5), against brute force.

A pair is confirmed when both rows have a fingerprint and a sketch, the sketches differ in at
most max_sketch_distance bits, and the fingerprints are within k bits or (with bands) the rows
share a band key in the same band column. The rows are the adversarial fingerprints of
test_reports (distance 0, bits 0 and 63, negative int8, chains, NULLs) with sketches planted
near and far, pairs at exactly the sketch limit and one beyond, NULL sketches, band keys shared
by rows far apart, a key shared across two different band columns, NULL band keys.
"""

from __future__ import annotations

import asyncio
import random
import re
import uuid
from collections import Counter
from collections.abc import Hashable
from typing import Any

import psycopg
import pytest
from psycopg import sql

from simpg import bits
from simpg.exc import SimpgError
from simpg.fingerprint import MAX_SKETCH_DISTANCE
from simpg.psycopg import AsyncSimHashColumn, SimHashColumn
from tests.integration.roles import login_role, role_dsn
from tests.integration.sketched import SGML_BASE, XML_CORE, doc_row
from tests.oracles import adversarial_fingerprints, brute_decision, brute_pairs, cluster_groups, labelled

Key = Hashable
BAND_COLUMNS = [f"sketch_b{i}" for i in range(4)]
T = MAX_SKETCH_DISTANCE
K = 3  # the index's radius


class Row:
    def __init__(self, fp: int | None, sketch: int | None, bands: list[int | None]) -> None:
        self.fp, self.sketch, self.bands = fp, sketch, bands


def flip_sketch(sketch: int, rng: random.Random, n: int) -> int:
    for b in rng.sample(range(256), n):
        sketch ^= 1 << b
    return sketch


def make_rows(seed: int, k: int = K) -> list[Row]:
    """Adversarial fingerprints, each with a sketch near its neighbours' or not, and planted band cases."""
    rng = random.Random(seed)
    fps = adversarial_fingerprints(rng, k, 4, random_rows=150)
    bases = [rng.getrandbits(256) for _ in range(6)]
    rows = []
    for fp in fps:
        r = rng.random()
        if r < 0.1:
            sketch = None
        elif r < 0.7:  # near one of a few sketches: confirmed or not, depending on the pair
            sketch = flip_sketch(rng.choice(bases), rng, rng.randint(0, T))
        else:
            sketch = rng.getrandbits(256)
        keys: list[int | None] = [rng.randrange(-(1 << 63), 1 << 63) for _ in range(4)]
        if rng.random() < 0.1:
            keys = [None] * 4
        rows.append(Row(fp, sketch, keys))
    base_sketch = rng.getrandbits(256)
    base_fp = rng.getrandbits(64)
    # within k, sketches exactly T apart (confirmed) and T + 1 apart (not)
    for extra in (T, T + 1, 0):
        near = bits.MASK ^ base_fp if extra == 0 else base_fp
        rows.append(Row(base_fp, base_sketch, [None] * 4))
        rows.append(Row(near ^ 1, flip_sketch(base_sketch, rng, extra), [None] * 4))
    # distance 0: equal fingerprints, sketches equal, at the limit, far, NULL
    for sketch in (base_sketch, flip_sketch(base_sketch, rng, T), rng.getrandbits(256), None):
        rows.append(Row(base_fp, sketch, [rng.randrange(1 << 62) for _ in range(4)]))
    # band keys shared by rows far apart (bits 0 and 63, negative int8 keys): sketch near and far
    for i, key in enumerate([-(1 << 63), (1 << 63) - 1, -1, 0]):
        group_sketch = rng.getrandbits(256)
        for n in range(4):
            keys = [rng.randrange(-(1 << 63), 1 << 63) for _ in range(4)]
            keys[i] = key
            sketch = flip_sketch(group_sketch, rng, [0, T, T + 1, 3 * T][n])
            rows.append(Row(rng.getrandbits(64), sketch, keys))
        # the same key in another band column, sketch equal: not a shared band
        keys = [rng.randrange(-(1 << 63), 1 << 63) for _ in range(4)]
        keys[(i + 1) % 4] = key
        rows.append(Row(rng.getrandbits(64), group_sketch, keys))
        # a shared key on a row without a fingerprint, or without a sketch: never paired
        keys = [None] * 4
        keys[i] = key
        rows.append(Row(None, group_sketch, list(keys)))
        rows.append(Row(rng.getrandbits(64), None, list(keys)))
    # two rows sharing two bands and far apart: one pair, once
    shared = [rng.randrange(1 << 62) for _ in range(4)]
    rows.append(Row(0, base_sketch, list(shared)))
    rows.append(Row(bits.MASK, base_sketch, [shared[0], None, shared[2], shared[3] + 1]))
    return rows


def keyed(rows: list[Row], rng: random.Random) -> dict[int, Row]:
    """Shuffled keys: key order unrelated to insertion order."""
    return dict(zip(rng.sample(range(1, 10 * len(rows)), len(rows)), rows, strict=True))


def load(conn: psycopg.Connection, table: dict[Any, Row], key_type: str = "bigint", k: int = K) -> None:
    conn.execute(f"CREATE TABLE docs (id {key_type} PRIMARY KEY, simhash bigint, sketch bit(256), body text, "
                 + ", ".join(f"{c} bigint" for c in BAND_COLUMNS) + ")")
    columns = ", ".join(["id", "simhash", "sketch", "body", *BAND_COLUMNS])
    with conn.cursor().copy(f"COPY docs ({columns}) FROM STDIN") as copy:
        for key, row in table.items():
            copy.write_row((key, None if row.fp is None else bits.to_db(row.fp),
                            None if row.sketch is None else format(row.sketch, "0256b"), f"secret {key}",
                            *row.bands))
    for c in BAND_COLUMNS:
        conn.execute(f"CREATE INDEX ON docs ({c})")
    conn.execute("SELECT simpg.create_index('docs', 'simhash', %s, %s)", [k, k + 2])
    conn.execute("ANALYZE docs")


def brute(table: dict[Any, Row], k: int, t: int = T, bands: bool = False) -> dict[tuple[Any, Any], int]:
    """Adapter: oracles.brute_decision over the table, {(key_a, key_b): fingerprint distance}."""
    docs = {key: (row.fp, row.sketch, row.bands) for key, row in table.items()}
    return {pair: d for pair, (d, _) in brute_decision(docs, k, t, bands).items()}


def brute_clusters(table: dict[Any, Row], pairs: dict[tuple[Any, Any], int],
                   method: str) -> dict[Any, tuple[Any, int]]:
    """Adapter: {key: (first key of its cluster, size)} for clusters of two or more, over the pairs."""
    return labelled(cluster_groups(method, sorted(table), pairs))


def sql_pairs(conn: psycopg.Connection, query: str, params: Any = None) -> dict[tuple[Any, Any], int]:
    got = conn.execute(query, params).fetchall()
    result = {(a, b): d for a, b, d in got}
    assert len(result) == len(got), "a pair came out twice"
    return result


def sql_clusters(conn: psycopg.Connection, query: str, params: Any = None) -> dict[Any, tuple[Any, int]]:
    got = conn.execute(query, params).fetchall()
    result = {key: (c, size) for c, key, size in got}
    assert len(result) == len(got), "a row came out twice"
    return result


SKETCH_ARGS = [(None, False), (0, False), (T, False), (100, False), (None, True), (T // 2, True)]


@pytest.mark.parametrize("b_trees", [True, False], ids=["b-trees", "whole-table"])
def test_pairs_and_clusters_equal_brute_force(db: Any, b_trees: bool) -> None:
    """Both plans (B-tree candidates, or a role without the prefix columns: the whole-table join)."""
    rng = random.Random(7)
    table = keyed(make_rows(7), rng)
    load(db.conn, table)
    with login_role(db.conn) as role, psycopg.connect(role_dsn(db, role), autocommit=True) as conn:
        columns = ["id", "simhash", "sketch", *BAND_COLUMNS]
        if b_trees:
            columns += db.conn.execute("SELECT prefix_columns FROM simpg.indexes").fetchone()[0]
        db.conn.execute(sql.SQL("GRANT SELECT ({}) ON docs TO {}").format(
            sql.SQL(", ").join(map(sql.Identifier, columns)), sql.Identifier(role)))
        passes = conn.execute("SELECT simpg.pairs_passes('docs', 3, sketch_column => 'sketch', bands => true)"
                              ).fetchone()[0]
        assert ("LATERAL (SELECT s.id AS key" in passes[0]) == b_trees and len(passes) >= 5
        checked = 0
        for k in (0, 1, K):
            for t, bands in SKETCH_ARGS:
                want = brute(table, k, T if t is None else t, bands)
                args = {"k": k, "t": t, "b": bands}
                got = sql_pairs(conn, "SELECT * FROM simpg.pairs('docs', %(k)s, sketch_column => 'sketch', "
                                "max_sketch_distance => %(t)s, bands => %(b)s)", args)
                assert got == want, (k, t, bands)
                assert sql_pairs(conn, "SELECT * FROM simpg.pairs(NULL::text, 'docs', %(k)s, 'simhash', 'id', "
                                 "'sketch', %(t)s, %(b)s)", args) == {
                    (str(a), str(b)): d for (a, b), d in want.items()}
                for method in ("representative", "components"):
                    clusters = brute_clusters(table, want, method)
                    assert sql_clusters(conn, "SELECT * FROM simpg.clusters('docs', %(k)s, method => %(m)s, "
                                        "sketch_column => 'sketch', max_sketch_distance => %(t)s, bands => %(b)s)",
                                        {**args, "m": method}) == clusters, (k, t, bands, method)
                    sizes = Counter(dict(clusters.values()).values())  # clusters of each size
                    rows = sum(r.fp is not None for r in table.values())
                    want_sizes = sorted([(size, n, size * n) for size, n in sizes.items()]
                                        + [(1, rows - len(clusters), rows - len(clusters))])
                    assert conn.execute("SELECT * FROM simpg.cluster_sizes('docs', %(k)s, NULL, NULL, %(m)s, "
                                        "'sketch', %(t)s, %(b)s)", {**args, "m": method}).fetchall() == want_sizes
                    n_clusters = sum(sizes.values())
                    assert conn.execute("SELECT * FROM simpg.duplicate_stats('docs', %(k)s, method => %(m)s, "
                                        "sketch_column => 'sketch', max_sketch_distance => %(t)s, bands => %(b)s)",
                                        {**args, "m": method}).fetchone() == (
                        rows, len(clusters), n_clusters, max(sizes, default=0), rows - len(clusters) + n_clusters)
                checked += len(want)
        assert checked > 100
        # the planted cases are all there: at the limit confirmed, one beyond not; bands beyond k
        def sketch_distances(pairs: dict[tuple[Any, Any], int]) -> set[int]:
            return {(table[a].sketch ^ table[b].sketch).bit_count() for a, b in pairs}  # type: ignore[operator]

        assert T in sketch_distances(brute(table, K)) and T + 1 in sketch_distances(brute(table, K, 256))
        assert any(d > K for d in brute(table, K, T, True).values())
        assert brute(table, K, T, True).keys() > brute(table, K, T, False).keys()


def test_a_chain_of_confirmed_pairs_is_not_one_cluster(conn: psycopg.Connection) -> None:
    """a-b and b-c confirmed, a-c not (fingerprints within k, sketches 2T apart): representative
    keeps c out of a's cluster, components join all three."""
    rng = random.Random(3)
    s = rng.getrandbits(256)
    middle = flip_sketch(s, rng, T)
    far = middle
    while (far ^ s).bit_count() <= T or (far ^ middle).bit_count() > T:
        far = flip_sketch(middle, rng, T)
    fp = rng.getrandbits(64)
    table = {1: Row(fp, s, [None] * 4), 2: Row(fp ^ 1, middle, [None] * 4), 3: Row(fp ^ 3, far, [None] * 4)}
    load(conn, table)
    assert sql_pairs(conn, "SELECT * FROM simpg.pairs('docs', 3, sketch_column => 'sketch')") == {(1, 2): 1, (2, 3): 1}
    assert sql_clusters(conn, "SELECT * FROM simpg.clusters('docs', 3, sketch_column => 'sketch')") == {
        1: (1, 2), 2: (1, 2)}
    assert sql_clusters(conn, "SELECT * FROM simpg.clusters('docs', 3, method => 'components', "
                        "sketch_column => 'sketch')") == {1: (1, 3), 2: (1, 3), 3: (1, 3)}
    # without the sketch, the three fingerprints are one cluster around row 1
    assert sql_clusters(conn, "SELECT * FROM simpg.clusters('docs', 3)") == {1: (1, 3), 2: (1, 3), 3: (1, 3)}


def test_every_member_is_a_confirmed_near_duplicate_of_its_representative(conn: psycopg.Connection) -> None:
    rng = random.Random(11)
    table = keyed(make_rows(11), rng)
    load(conn, table)
    for bands in (False, True):
        confirmed = brute(table, K, T, bands)
        clusters = sql_clusters(conn, "SELECT * FROM simpg.clusters('docs', 3, sketch_column => 'sketch', "
                                "bands => %s)", [bands])
        assert clusters and all(rep == key or (rep, key) in confirmed for key, (rep, _) in clusters.items())


def test_uuid_keys(conn: psycopg.Connection) -> None:
    rng = random.Random(5)
    rows = make_rows(5)
    table = {uuid.UUID(int=rng.getrandbits(128)): row for row in rows}
    load(conn, table, "uuid")
    want = brute(table, K, T, True)
    assert sql_pairs(conn, "SELECT * FROM simpg.pairs(NULL::uuid, 'docs', 3, sketch_column => 'sketch', "
                     "bands => true)") == want
    assert sql_clusters(conn, "SELECT * FROM simpg.clusters(NULL::uuid, 'docs', 3, sketch_column => 'sketch', "
                        "bands => true)") == brute_clusters(table, want, "representative")
    # clusters_query is the statement clusters runs, for views
    statement = conn.execute("SELECT simpg.clusters_query('docs', 3, NULL, NULL, 'text', sketch_column => 'sketch', "
                             "bands => true)").fetchone()[0]
    assert {(c, key) for c, key, _ in conn.execute(statement).fetchall()} == {
        (str(c), str(key)) for key, (c, _) in brute_clusters(table, want, "representative").items()}


def test_unrelated_documents_of_one_template_are_not_paired(conn: psycopg.Connection) -> None:
    """sgml-base and xml-core's copyright files: fingerprints 3 bits apart, sketches 61. A copy
    of sgml-base with a year changed is its duplicate either way."""
    docs = [doc_row(SGML_BASE), doc_row(XML_CORE), doc_row(SGML_BASE.replace("2019      Boyuan", "2019-2021 Boyuan"))]
    table = {i: Row(fp, sketch, list(bands or [None] * 4)) for i, (fp, sketch, bands) in enumerate(docs, start=1)}
    load(conn, table, k=4)
    plain = sql_pairs(conn, "SELECT * FROM simpg.pairs('docs', 4)")
    assert (1, 2) in plain and (1, 3) in plain  # fingerprints alone: the licence files are duplicates
    for bands in (False, True):
        got = sql_pairs(conn, "SELECT * FROM simpg.pairs('docs', 4, sketch_column => 'sketch', bands => %s)",
                        [bands])
        assert got == {(1, 3): plain[(1, 3)]}
        assert sql_clusters(conn, "SELECT * FROM simpg.clusters('docs', 4, method => 'components', "
                            "sketch_column => 'sketch', bands => %s)", [bands]) == {1: (1, 2), 3: (1, 2)}
    assert sql_clusters(conn, "SELECT * FROM simpg.clusters('docs', 4, method => 'components')") == {
        1: (1, 3), 2: (1, 3), 3: (1, 3)}
    index = SimHashColumn(conn, "docs", "simhash")
    assert [tuple(p) for p in index.pairs(4, sketch_column="sketch")] == [(1, 3, plain[(1, 3)])]
    assert index.clusters(4, sketch_column="sketch", bands=True) == [[1, 3]]


BAD_CALLS = [
    ("SELECT * FROM simpg.pairs('docs', 3, max_sketch_distance => 10)",
     "a report on public.docs takes max_sketch_distance, got 10, only with a sketch_column to confirm by"),
    ("SELECT * FROM simpg.clusters('docs', 3, bands => true)",
     "a report on public.docs takes bands, got true, only with a sketch_column to confirm by"),
    ("SELECT * FROM simpg.pairs('docs', 3, sketch_column => 'sketch', max_sketch_distance => 257)",
     "max_sketch_distance must be an integer from 0 to 256, got 257"),
    ("SELECT * FROM simpg.duplicate_stats('docs', 3, sketch_column => 'sketch', max_sketch_distance => -1)",
     "max_sketch_distance must be an integer from 0 to 256, got -1"),
    ("SELECT * FROM simpg.pairs('docs', 3, sketch_column => 'nope')",
     "column nope of table public.docs does not exist (the sketches to confirm with)"),
    ("SELECT * FROM simpg.cluster_sizes('docs', 3, sketch_column => 'body')",
     "column body of table public.docs must be bit(256) (sketches), got text"),
    ("SELECT * FROM simpg.pairs(NULL::text, 'docs', 3, sketch_column => 'simhash', bands => true)",
     "column simhash of table public.docs must be bit(256) (sketches), got bigint"),
    ("SELECT * FROM simpg.clusters('docs', 3, method => 'chain', sketch_column => 'sketch')",
     "method must be 'representative' or 'components', got 'chain'"),
    ("SELECT * FROM simpg.clusters('docs', 9, sketch_column => 'sketch')", "k=9 is above the radius k=3"),
]


def test_bad_arguments_raise_naming_the_value(conn: psycopg.Connection) -> None:
    load(conn, keyed(make_rows(1)[:40], random.Random(1)))
    conn.execute("ALTER TABLE docs ADD COLUMN lone bit(256), ADD COLUMN lone_b0 bigint, ADD COLUMN lone_b1 text")
    calls = [*BAD_CALLS,
             ("SELECT * FROM simpg.pairs('docs', 3, sketch_column => 'lone', bands => true)",
              "column lone_b1 of table public.docs must be bigint (band keys), got text"),
             # bands by default with a sketch column (simpg dedup's decision): the columns must be right
             ("SELECT * FROM simpg.pairs('docs', 3, sketch_column => 'lone')",
              "column lone_b1 of table public.docs must be bigint (band keys), got text"),
             ("SELECT * FROM simpg.pairs('docs', 3, sketch_column => 'lone', bands => false)", None)]
    for call, message in calls:
        if message is None:
            conn.execute(call).fetchall()  # without bands the band columns are not needed
            continue
        with pytest.raises(psycopg.Error) as err:
            conn.execute(call).fetchall()
        assert message in str(err.value), call
    conn.execute("ALTER TABLE docs DROP COLUMN lone_b1")
    with pytest.raises(psycopg.errors.UndefinedColumn, match="column lone_b1 of table public.docs does not exist"):
        conn.execute("SELECT * FROM simpg.clusters('docs', 3, sketch_column => 'lone', bands => true)").fetchall()


def test_a_sketch_or_band_column_the_caller_cannot_read_is_refused(db: Any) -> None:
    """The reports run with the caller's rights: SELECT on the key and fingerprint columns is not
    enough to confirm by a sketch or band column the caller may not read, and a hostile sketch
    column name is only a name."""
    rng = random.Random(2)
    table = keyed(make_rows(2)[:80], rng)
    load(db.conn, table)
    db.conn.execute("CREATE TABLE sentinel (x int)")
    with login_role(db.conn) as role, psycopg.connect(role_dsn(db, role), autocommit=True) as other:
        db.conn.execute(sql.SQL("GRANT SELECT (id, simhash) ON docs TO {}").format(sql.Identifier(role)))
        assert other.execute("SELECT count(*) FROM simpg.pairs('docs', 3)").fetchone()[0] > 0
        for call in ["SELECT * FROM simpg.pairs('docs', 3, sketch_column => 'sketch')",
                     "SELECT * FROM simpg.clusters('docs', 3, sketch_column => 'sketch')",
                     "SELECT * FROM simpg.duplicate_stats('docs', 3, sketch_column => 'sketch')"]:
            with pytest.raises(psycopg.errors.InsufficientPrivilege, match="permission denied for table docs"):
                other.execute(call).fetchall()
        db.conn.execute(sql.SQL("GRANT SELECT (sketch) ON docs TO {}").format(sql.Identifier(role)))
        assert sql_pairs(other, "SELECT * FROM simpg.pairs('docs', 3, sketch_column => 'sketch', "
                                "bands => false)") == brute(table, K)
        for bands in ("", ", bands => true"):  # band keys by default with a sketch column
            with pytest.raises(psycopg.errors.InsufficientPrivilege, match="permission denied for table docs"):
                other.execute(f"SELECT * FROM simpg.pairs('docs', 3, sketch_column => 'sketch'{bands})").fetchall()
        for attack in ["sketch; DROP TABLE sentinel;--", 'sketch"; DROP TABLE sentinel;--', "x') OR true; --"]:
            with pytest.raises(psycopg.errors.UndefinedColumn) as err:
                other.execute("SELECT * FROM simpg.clusters('docs', 3, sketch_column => %s, bands => true)",
                              [attack]).fetchall()
            assert attack.split(";")[0].split('"')[0] in err.value.diag.message_primary
    assert db.conn.execute("SELECT to_regclass('sentinel') IS NOT NULL").fetchone()[0]


def with_copies(table: dict[Any, Row], rng: random.Random) -> dict[Any, Row]:
    """The table and exact copies (fingerprint, sketch and band keys) of some rows, under new keys:
    rows the in-memory decision folds into one and hands their pairs back."""
    rows = dict(table)
    spare = iter(rng.sample(range(10 * len(table), 20 * len(table)), 3 * len(table)))
    for key in rng.sample(sorted(table), 12):
        for _ in range(rng.randint(1, 3)):
            row = table[key]
            rows[next(spare)] = Row(row.fp, row.sketch, list(row.bands))
    return rows


def handle_pairs_and_clusters(index: SimHashColumn, k: int | None, t: int | None, bands: bool | None,
                              method: str, where: sql.Composable | None = None,
                              ) -> tuple[list[tuple[Any, ...]], list[list[Any]]]:
    pairs = [tuple(p) for p in index.pairs(k, where, sketch_column="sketch", max_sketch_distance=t, bands=bands)]
    return pairs, index.clusters(k, where, method, sketch_column="sketch", max_sketch_distance=t, bands=bands)


def report_pairs_and_clusters(conn: psycopg.Connection, k: int, t: int | None, bands: bool | None, method: str,
                              keys: str = "") -> tuple[list[tuple[Any, ...]], list[list[Any]]]:
    """What the handle answered when it ran the SQL reports: pairs by (a, b), clusters largest
    first, ties by smallest key, each in key order."""
    args = {"k": k, "t": t, "b": bands, "m": method}
    pairs = conn.execute(f"SELECT * FROM simpg.pairs({keys}'docs', %(k)s, sketch_column => 'sketch', "
                         "max_sketch_distance => %(t)s, bands => %(b)s) ORDER BY key_a, key_b", args).fetchall()
    groups: dict[Any, list[Any]] = {}
    for cluster_id, key, _ in conn.execute(
            f"SELECT * FROM simpg.clusters({keys}'docs', %(k)s, method => %(m)s, sketch_column => 'sketch', "
            "max_sketch_distance => %(t)s, bands => %(b)s) ORDER BY cluster_id, key", args):
        groups.setdefault(cluster_id, []).append(key)
    return pairs, sorted(groups.values(), key=len, reverse=True)


def test_python_pairs_and_clusters_equal_the_reports_and_brute_force(conn: psycopg.Connection, db: Any) -> None:
    """The handles decide in memory (allpairs.decide): the same pairs, in the same order, and the
    same clusters as the SQL reports they ran before, and as brute force, on the adversarial rows
    (distance 0, bits 0 and 63, negative int8, NULL sketches and band keys, band keys shared far
    beyond k, at the sketch limit and one beyond) with exact copies, at every k up to the radius."""
    rng = random.Random(9)
    table = with_copies(keyed(make_rows(9), rng), rng)
    load(conn, table)
    index = SimHashColumn(conn, "docs", "simhash")
    checked = 0
    for k in (0, 1, K):
        for t, bands in [*SKETCH_ARGS, (None, None), (256, True)]:
            want = brute(table, k, T if t is None else t, bands is not False)
            for method in ("representative", "components"):
                pairs, clusters = handle_pairs_and_clusters(index, k, t, bands, method)
                assert (pairs, clusters) == report_pairs_and_clusters(conn, k, t, bands, method), (k, t, bands)
                assert {(a, b): d for a, b, d in pairs} == want and len(pairs) == len(want)
                assert labelled(clusters) == brute_clusters(table, want, method), (k, t, bands, method)
                assert [len(c) for c in clusters] == sorted((len(c) for c in clusters), reverse=True)
            checked += len(want)
    assert checked > 1000
    assert any(d > K for _, _, d in index.pairs(sketch_column="sketch"))  # band keys beyond k, by default

    async def run() -> tuple[list[Any], list[list[Any]]]:
        async with await psycopg.AsyncConnection.connect(db.dsn, autocommit=True) as aconn:
            aindex = AsyncSimHashColumn(aconn, "docs", "simhash")
            pairs = [p async for p in aindex.pairs(sketch_column="sketch", bands=True)]
            return pairs, await aindex.clusters(sketch_column="sketch", bands=True)

    pairs, clusters = asyncio.run(run())
    assert pairs == list(index.pairs(sketch_column="sketch", bands=True)) and len(pairs) > 50
    assert clusters == index.clusters(sketch_column="sketch", bands=True)
    with pytest.raises(SimpgError, match="max_sketch_distance must be an integer from 0 to 256, got 300"):
        list(index.pairs(sketch_column="sketch", max_sketch_distance=300))
    with pytest.raises(SimpgError, match="takes bands, got true, only with a sketch_column"):
        index.clusters(bands=True)
    with pytest.raises(SimpgError, match="k=4 is above the radius k=3"):
        list(index.pairs(4, sketch_column="sketch"))
    assert brute_pairs({k: r.fp for k, r in table.items()}, K) == {
        (p.a, p.b): p.distance for p in index.pairs()}  # without a sketch, as before


def test_python_pairs_and_clusters_with_where(conn: psycopg.Connection) -> None:
    """where= keeps the rows meeting it, with a sketch column too: brute force over those rows."""
    rng = random.Random(13)
    table = with_copies(keyed(make_rows(13), rng), rng)
    load(conn, table)
    index = SimHashColumn(conn, "docs", "simhash")
    kept = {key: row for key, row in table.items() if key % 3}
    assert 0 < len(kept) < len(table)
    where = sql.SQL("t.id % {} <> 0").format(3)
    for bands in (False, True):
        want = brute(kept, K, T, bands)
        for method in ("representative", "components"):
            pairs, clusters = handle_pairs_and_clusters(index, None, None, bands, method, where)
            assert {(a, b): d for a, b, d in pairs} == want and len(pairs) == len(want)
            assert labelled(clusters) == brute_clusters(kept, want, method)
        assert want != brute(table, K, T, bands)  # the condition matters
    assert list(index.pairs(where=sql.SQL("false"), sketch_column="sketch")) == []
    assert index.clusters(where=sql.SQL("false"), sketch_column="sketch") == []


def test_python_confirmed_uuid_keys_and_bad_columns(conn: psycopg.Connection) -> None:
    """uuid keys: a < b and clusters as the reports give them. A missing or mistyped sketch or
    band column, or a bit varying sketch not 256 bits long, raises naming the column."""
    rng = random.Random(5)
    table = {uuid.UUID(int=rng.getrandbits(128)): row for row in make_rows(5)}
    load(conn, table, "uuid")
    index = SimHashColumn(conn, "docs", "simhash")
    for method in ("representative", "components"):
        pairs, clusters = handle_pairs_and_clusters(index, None, None, None, method)
        assert (pairs, clusters) == report_pairs_and_clusters(conn, K, None, None, method, "NULL::uuid, ")
        assert {(a, b): d for a, b, d in pairs} == brute(table, K, T, True)
    conn.execute("ALTER TABLE docs ADD COLUMN lone bit varying, ADD COLUMN lone_b0 bigint, ADD COLUMN lone_b1 text")
    bad = [("nope", None, "column nope of table public.docs does not exist (the sketches to confirm with)"),
           ("body", False, "column body of table public.docs must be bit(256) (sketches), got text"),
           ("lone", None, "column lone_b1 of table public.docs must be bigint (band keys), got text")]
    for column, bands, message in bad:
        with pytest.raises(SimpgError, match=re.escape(message)):
            list(index.pairs(sketch_column=column, bands=bands))
        with pytest.raises(SimpgError, match=re.escape(message)):
            index.clusters(sketch_column=column, bands=bands)
    assert index.clusters(sketch_column="lone", bands=False) == []  # no sketch in it: nobody's pair
    conn.execute("UPDATE docs SET lone = sketch WHERE sketch IS NOT NULL")
    assert list(index.pairs(sketch_column="lone", bands=False)) == list(index.pairs(sketch_column="sketch",
                                                                                   bands=False))
    conn.execute("UPDATE docs SET lone = B'101' "
                 "WHERE id = (SELECT id FROM docs WHERE sketch IS NOT NULL ORDER BY id DESC LIMIT 1)")
    with pytest.raises(SimpgError, match=re.escape(
            "column lone of table docs must be bit(256) (sketches), got a sketch of 3 bits")):
        list(index.pairs(sketch_column="lone", bands=False))


def test_python_confirmed_on_a_partitioned_table(conn: psycopg.Connection) -> None:
    """Partition by partition, in one snapshot: the pairs and clusters of the same rows in a
    hash-partitioned table are brute force's, and the plain table's."""
    rng = random.Random(17)
    table = with_copies(keyed(make_rows(17), rng), rng)
    load(conn, table)
    columns = ", ".join(["id", "simhash", "sketch", "body", *BAND_COLUMNS])
    conn.execute("CREATE TABLE parts (id bigint PRIMARY KEY, simhash bigint, sketch bit(256), body text, "
                 + ", ".join(f"{c} bigint" for c in BAND_COLUMNS) + ") PARTITION BY HASH (id)")
    for p in range(3):
        conn.execute(f"CREATE TABLE parts_{p} PARTITION OF parts FOR VALUES WITH (MODULUS 3, REMAINDER {p})")
    conn.execute(f"INSERT INTO parts ({columns}) SELECT {columns} FROM docs")
    conn.execute("SELECT simpg.create_index('parts', 'simhash', %s, %s)", [K, K + 2])
    plain, parts = SimHashColumn(conn, "docs", "simhash"), SimHashColumn(conn, "parts", "simhash")
    for where in (None, sql.SQL("t.id % 2 = 0")):
        kept = {key: row for key, row in table.items() if where is None or key % 2 == 0}
        want = brute(kept, K, T, True)
        for method in ("representative", "components"):
            got = handle_pairs_and_clusters(parts, None, None, None, method, where)
            assert got == handle_pairs_and_clusters(plain, None, None, None, method, where)
            assert {(a, b): d for a, b, d in got[0]} == want and len(got[0]) == len(want)
            assert labelled(got[1]) == brute_clusters(kept, want, method)
