"""simpg.pairs, simpg.clusters, simpg.cluster_sizes and simpg.duplicate_stats against brute force.

Every answer is compared with a Python popcount over all pairs of rows (and a
union-find of its own for clusters), on random fingerprints mixed with adversarial
ones: distance 0 in different rows, bits 0 and 63, negative bigints, pairs whose k
differing bits sit in k different blocks (found by one table only), k + 1 neighbours
that must not match, chains that join rows farther apart than k, NULL fingerprints.
"""

from __future__ import annotations

import math
import random
import re
import uuid
from collections import Counter
from collections.abc import Callable, Hashable
from typing import Any

import psycopg
import pytest

from simpg import bits
from simpg.allpairs import prefix_masks, segment_masks
from simpg.layout import Layout
from tests.layouts import mask_family_is_exact
from tests.oracles import (
    adversarial_fingerprints,
    brute_clusters,
    brute_pairs,
    brute_representatives,
    flip,
)

Key = Hashable


def load(
    conn: psycopg.Connection,
    rows: dict[Key, int | None],
    key_type: str = "bigint",
    table: str = "docs",
) -> None:
    """CREATE TABLE docs (id <key_type> PRIMARY KEY, title text, simhash bigint) with rows."""
    conn.execute(f"CREATE TABLE {table} (id {key_type} PRIMARY KEY, title text, simhash bigint)")
    with conn.cursor().copy(f"COPY {table} (id, title, simhash) FROM STDIN") as copy:
        for key, fp in rows.items():
            copy.write_row((key, f"title {key}", None if fp is None else bits.to_db(fp)))


def keyed(
    fps: list[int | None], rng: random.Random, make_key: Callable[[int], Key] = lambda i: i
) -> dict[Key, int | None]:
    """Give the fingerprints shuffled keys, so key order is unrelated to insertion order."""
    keys = [make_key(i) for i in rng.sample(range(1, 10 * len(fps)), len(fps))]
    return dict(zip(keys, fps, strict=True))


def sql_pairs(
    conn: psycopg.Connection, query: str, params: list[Any]
) -> dict[tuple[Key, Key], int]:
    got = conn.execute(query, params).fetchall()
    result = {(a, b): d for a, b, d in got}
    assert len(result) == len(got), "a pair came out twice"
    return result


# (k of the index, blocks, inner_blocks): one table; one level with C(m, k) tables; two levels
LAYOUTS = [(0, 1, None), (1, 3, None), (3, 4, None), (3, 6, None), (3, 4, 4), (5, 7, None)]


@pytest.mark.parametrize("index_k, blocks, inner", LAYOUTS, ids=lambda v: str(v))
def test_pairs_equal_brute_force_for_every_k_up_to_the_index(conn, index_k, blocks, inner):
    rng = random.Random(index_k * 100 + blocks)
    rows = keyed(adversarial_fingerprints(rng, max(index_k, 1), blocks, random_rows=300), rng)
    load(conn, rows)
    conn.execute(
        "SELECT simpg.create_index('docs', 'simhash', %s, %s, %s)", [index_k, blocks, inner]
    )
    for k in range(index_k + 1):
        expected = brute_pairs(rows, k)
        got = sql_pairs(conn, "SELECT key_a, key_b, distance FROM simpg.pairs('docs', %s)", [k])
        assert got == expected, f"k={k}"
    # the adversarial rows make the answer non-trivial at the index's own k
    assert any(d == index_k for d in expected.values())
    assert any(d == 0 for d in expected.values())


def test_pairs_on_random_data_with_the_default_layout(conn):
    rng = random.Random(7)
    # clusters of near copies among random rows
    fps: list[int | None] = [rng.getrandbits(64) for _ in range(600)]
    for i in range(150):
        fps.append(flip(fps[i] or 0, rng.sample(range(64), rng.randint(0, 4))))
    rows = keyed(fps, rng)
    load(conn, rows)
    conn.execute("SELECT simpg.create_index('docs', 'simhash', 3)")
    for k in (0, 2, 3):
        assert sql_pairs(conn, "SELECT * FROM simpg.pairs('docs', %s)", [k]) == brute_pairs(rows, k)


TWO_LEVEL_LAYOUTS = [(0, (1,)), (1, (3,)), (3, (4,)), (3, (6,)), (3, (4, 4)), (5, (7,)), (2, (3, 5))]


@pytest.mark.parametrize("k, levels", TWO_LEVEL_LAYOUTS, ids=str)
def test_layout_masks_are_the_python_prefix_masks_and_exact(conn, k, levels):
    got = conn.execute("SELECT simpg.layout_masks(%s, %s)", [k, list(levels)]).fetchone()[0]
    layout = Layout(k, levels)
    assert got == [bits.to_db(m) for m in prefix_masks(layout)]
    assert mask_family_is_exact(got, k)
    # one more differing bit escapes every mask: the radius is tight
    assert not mask_family_is_exact(got, k + 1)


def test_segment_masks_are_exact_for_any_weights(conn):
    rng = random.Random(21)
    weight_sets = {
        "uniform": [1.0] * 64,
        "low 32 bits only": [0.0] * 32 + [1.0] * 32,
        "bits 0 and 63 only": [1.0] + [0.0] * 62 + [1.0],
        "random": [rng.random() for _ in range(64)],
        "all zero": [0.0] * 64,
    }
    for k in range(0, 7):
        for s in range(k + 1, k + 5):
            for name, weights in weight_sets.items():
                # weights are given bit 0 first; the SQL array is 1-based
                masks = conn.execute(
                    "SELECT simpg.segment_masks(%s, %s, %s::float8[])", [k, s, weights]
                ).fetchone()[0]
                assert len(masks) == math.comb(s, k), (k, s, name)
                assert mask_family_is_exact(masks, k), (k, s, name)
                assert [bits.to_db(m) for m in segment_masks(k, s, weights)] == masks, (k, s, name)
    # the balance follows the weights: with only 32 informative bits in 4 segments,
    # every segment gets 8 of them
    masks = conn.execute(
        "SELECT simpg.segment_masks(3, 4, %s::float8[])", [[0.0] * 32 + [1.0] * 32]
    ).fetchone()[0]
    assert sorted(bin(m & bits.MASK & ~0xFFFFFFFF).count("1") for m in masks) == [8] * 4


def low_entropy_fingerprints(rng: random.Random, kind: str, rows: int) -> list[int | None]:
    """Fingerprints whose bits are far from uniform, with planted neighbours within 3."""
    if kind == "32-bit values":
        free = list(range(32, 64))  # positions from the top: the low 32 bits vary
        base = 0
    elif kind == "small negative bigints":
        free = list(range(44, 64))  # -1 - (20 random bits): the top 44 bits are all ones
        base = bits.MASK
    elif kind == "a template with bits 0 and 63":
        free = [0, 63, *rng.sample(range(1, 63), 16)]
        base = rng.getrandbits(64)
    else:
        raise AssertionError(kind)
    fps: list[int | None] = []
    for _ in range(rows):
        fps.append(flip(base, [p for p in free if rng.random() < 0.5]))
    for i in range(rows // 5):  # neighbours at 0 to 4 bits, inside the free bits
        fps.append(flip(fps[i] or 0, rng.sample(free, rng.randint(0, 4))))
    return [*fps, None]


@pytest.mark.parametrize(
    "kind", ["32-bit values", "small negative bigints", "a template with bits 0 and 63"]
)
def test_pairs_and_clusters_on_low_entropy_fingerprints(conn, kind):
    """Issue 13 item 9: the index's prefixes are nearly constant on such data, so the
    reports join on bits fitted to it; answers stay exact."""
    rng = random.Random(kind)
    rows = keyed(low_entropy_fingerprints(rng, kind, 900), rng)
    load(conn, rows)
    conn.execute("SELECT simpg.create_index('docs', 'simhash', 3, 4)")
    masks = conn.execute(
        "SELECT simpg.pair_masks(i, 3) FROM simpg.indexes AS i WHERE indexed_table = 'docs'::regclass"
    ).fetchone()[0]
    assert masks != conn.execute("SELECT simpg.layout_masks(3, '{4}')").fetchone()[0]
    assert mask_family_is_exact(masks, 3)
    for k in (0, 2, 3):
        expected = brute_pairs(rows, k)
        got = sql_pairs(conn, "SELECT * FROM simpg.pairs('docs', %s)", [k])
        assert got == expected, f"k={k}"
    assert any(d == 3 for d in expected.values())
    for method, brute in (("components", brute_clusters), ("representative", brute_representatives)):
        got_clusters = conn.execute(
            "SELECT key, cluster_id, size FROM simpg.clusters('docs', 3, method => %s)", [method]).fetchall()
        assert {key: (cid, size) for key, cid, size in got_clusters} == brute(rows, 3), method


def test_a_sampled_plan_on_a_larger_skewed_table_stays_exact(conn):
    """Above 6,000 rows pair_masks samples (TABLESAMPLE SYSTEM, fixed seed); even with
    planner statistics far below the table's size the answer is exact."""
    import numpy as np

    rng = np.random.default_rng(31)
    fps = rng.integers(0, 2**32, size=9000, dtype=np.uint64)  # 32-bit values
    fps[:300] = fps[300:600] ^ (np.uint64(1) << rng.integers(0, 32, size=300).astype(np.uint64))
    rows = {i + 1: int(fp) for i, fp in enumerate(fps)}
    load(conn, dict(list(rows.items())[:1000]))
    conn.execute("ANALYZE docs")  # reltuples 1,000: stale once the rest is in
    with conn.cursor().copy("COPY docs (id, title, simhash) FROM STDIN") as copy:
        for key, fp in list(rows.items())[1000:]:
            copy.write_row((key, "t", bits.to_db(fp)))
    conn.execute("SELECT simpg.create_index('docs', 'simhash', 3, 4)")
    conn.execute("UPDATE pg_class SET reltuples = 3000 WHERE oid = 'docs'::regclass")
    masks = conn.execute(
        "SELECT simpg.pair_masks(i, 3) FROM simpg.indexes AS i WHERE indexed_table = 'docs'::regclass"
    ).fetchone()[0]
    assert masks != conn.execute("SELECT simpg.layout_masks(3, '{4}')").fetchone()[0]
    d = np.bitwise_count(fps[:, None] ^ fps[None, :])
    a, b = np.nonzero(np.triu(d <= 3, 1))
    expected = {(int(x) + 1, int(y) + 1): int(d[x, y]) for x, y in zip(a, b, strict=True)}
    assert sql_pairs(conn, "SELECT * FROM simpg.pairs('docs', 3)", []) == expected
    assert len(expected) >= 300


def test_one_fingerprint_everywhere_compares_every_pair_once(conn):
    """All rows equal: every plan compares every pair, so the cheapest is one pass."""
    rows = {i: 0x0123456789ABCDEF for i in range(1, 301)}
    rows[301] = flip(0x0123456789ABCDEF, [0, 63, 7])
    load(conn, rows)
    conn.execute("SELECT simpg.create_index('docs', 'simhash', 3, 4)")
    masks = conn.execute(
        "SELECT simpg.pair_masks(i, 3) FROM simpg.indexes AS i WHERE indexed_table = 'docs'::regclass"
    ).fetchone()[0]
    assert masks == [0]
    assert sql_pairs(conn, "SELECT * FROM simpg.pairs('docs', 3)", []) == brute_pairs(rows, 3)


def test_pairs_join_back_to_titles(conn):
    rng = random.Random(11)
    rows = keyed(adversarial_fingerprints(rng, 3, 4, random_rows=50), rng)
    load(conn, rows)
    conn.execute("SELECT simpg.create_index('docs', 'simhash', 3, 4)")
    got = conn.execute(
        "SELECT a.title, b.title, p.distance FROM simpg.pairs('docs', 3) AS p "
        "JOIN docs AS a ON a.id = p.key_a JOIN docs AS b ON b.id = p.key_b"
    ).fetchall()
    expected = {(f"title {a}", f"title {b}", d) for (a, b), d in brute_pairs(rows, 3).items()}
    assert set(got) == expected and len(got) == len(expected)


KEY_TYPES = [
    ("integer", "NULL::integer", lambda i: i),
    ("text", "NULL::text", lambda i: f"doc-{i:06d}"),
    ("uuid", "NULL::uuid", lambda i: uuid.UUID(int=i * 0x9E3779B97F4A7C15 % (1 << 128))),
    ("numeric", "NULL::numeric", lambda i: i / 8),
]


@pytest.mark.parametrize("key_type, sample, make_key", KEY_TYPES, ids=[t[0] for t in KEY_TYPES])
def test_typed_keys(conn, key_type, sample, make_key):
    rng = random.Random(5)
    rows = keyed(adversarial_fingerprints(rng, 3, 4, random_rows=80), rng, make_key)
    load(conn, rows, key_type)
    conn.execute("SELECT simpg.create_index('docs', 'simhash', 3, 4)")
    got = sql_pairs(conn, f"SELECT * FROM simpg.pairs({sample}, 'docs', 3)", [])
    assert got == brute_pairs(rows, 3)
    types = conn.execute(
        f"SELECT pg_typeof(key_a)::text FROM simpg.pairs({sample}, 'docs', 3) LIMIT 1"
    ).fetchone()
    assert types == (key_type,)
    # keys round-trip into a join on the key column with its own type
    joined = conn.execute(
        f"SELECT count(*) FROM simpg.pairs({sample}, 'docs', 3) AS p JOIN docs AS d ON d.id = "
        "p.key_a"
    ).fetchone()
    assert joined == (len(got),)
    clusters = conn.execute(
        f"SELECT key, cluster_id, size FROM simpg.clusters({sample}, 'docs', 3, method => 'components')"
    ).fetchall()
    assert {key: (cid, size) for key, cid, size in clusters} == brute_clusters(rows, 3)


def test_text_keys_of_any_key_type(conn):
    rng = random.Random(6)
    rows = keyed(
        adversarial_fingerprints(rng, 2, 3, random_rows=30), rng, lambda i: uuid.UUID(int=i)
    )
    load(conn, rows, "uuid")
    conn.execute("SELECT simpg.create_index('docs', 'simhash', 2, 3)")
    got = sql_pairs(
        conn,
        "SELECT key_a::uuid, key_b::uuid, distance FROM simpg.pairs(NULL::text, 'docs', 2)",
        [],
    )
    assert got == brute_pairs(rows, 2)


def test_key_column_other_than_the_primary_key(conn):
    rng = random.Random(8)
    rows = keyed(adversarial_fingerprints(rng, 2, 3, random_rows=30), rng)
    load(conn, rows)
    conn.execute("ALTER TABLE docs ADD COLUMN code bigint")
    conn.execute("UPDATE docs SET code = -id")
    conn.execute("ALTER TABLE docs ALTER COLUMN code SET NOT NULL, ADD UNIQUE (code)")
    conn.execute("SELECT simpg.create_index('docs', 'simhash', 2, 3)")
    got = sql_pairs(conn, "SELECT * FROM simpg.pairs('docs', 2, key_column => 'code')", [])
    by_code = {-key: fp for key, fp in rows.items()}  # type: ignore[operator]
    assert got == brute_pairs(by_code, 2)


@pytest.mark.parametrize("method", ["representative", "components"])
def test_clusters_stats_and_histogram_equal_brute_force(conn, method):
    rng = random.Random(9)
    fps = adversarial_fingerprints(rng, 3, 5, random_rows=400)
    # a long chain: each link 3 bits from the previous, so ends are far apart
    chain = [rng.getrandbits(64)]
    for _ in range(12):
        chain.append(flip(chain[-1], rng.sample(range(64), 3)))
    rows = keyed(fps + chain, rng)  # type: ignore[operator]
    load(conn, rows)
    conn.execute("SELECT simpg.create_index('docs', 'simhash', 3, 5)")
    for k in (0, 1, 3):
        expected = brute_clusters(rows, k) if method == "components" else brute_representatives(rows, k)
        got = conn.execute(
            "SELECT key, cluster_id, size FROM simpg.clusters('docs', %s, method => %s)", [k, method]
        ).fetchall()
        assert {key: (cid, size) for key, cid, size in got} == expected, f"k={k}"
        assert len(got) == len(expected)
        assert [(cid, key) for key, cid, _ in got] == sorted((cid, key) for key, cid, _ in got)

        sizes = Counter(
            size for _, size in {cid: (cid, size) for cid, size in expected.values()}.values()
        )
        with_fp = sum(fp is not None for fp in rows.values())
        singles = with_fp - len(expected)
        histogram = conn.execute(
            "SELECT cluster_size, clusters, rows FROM simpg.cluster_sizes('docs', %s, method => %s)", [k, method]
        ).fetchall()
        want = ([(1, singles, singles)] if singles else []) + [
            (s, n, s * n) for s, n in sorted(sizes.items())
        ]
        assert histogram == want

        stats = conn.execute("SELECT * FROM simpg.duplicate_stats('docs', %s, method => %s)", [k, method]).fetchone()
        clusters = sum(sizes.values())
        assert stats == (
            with_fp,
            len(expected),
            clusters,
            max(sizes, default=0),
            singles + clusters,
        )
    if method == "components":  # the chain makes one cluster wider than k at k=3
        assert any(
            bits.hamming(rows[a], rows[b]) > 3  # type: ignore[arg-type]
            for a, (ca, _) in expected.items()
            for b, (cb, _) in expected.items()
            if ca == cb
        )
    else:  # every member within k of its representative, the row cluster_id names
        assert all(bits.hamming(rows[key], rows[cid]) <= 3 for key, (cid, _) in expected.items())  # type: ignore[arg-type]
        assert len({cid for cid, _ in expected.values()}) > len(set(brute_clusters(rows, 3).values()))


def test_fingerprint_clusters_on_distinct_fingerprints(conn):
    rng = random.Random(10)
    rows = keyed(adversarial_fingerprints(rng, 2, 4, random_rows=50), rng)
    load(conn, rows)
    conn.execute("SELECT simpg.create_index('docs', 'simhash', 2, 4)")
    # one node per distinct fingerprint, keyed by its signed value: the cluster is the smallest
    by_signed = {bits.to_db(fp): fp for fp in rows.values() if fp is not None}
    expected = {fp: cid for fp, (cid, _) in brute_clusters(by_signed, 2).items()}  # type: ignore[arg-type]
    got = dict(
        conn.execute(
            "SELECT fingerprint, cluster FROM simpg.fingerprint_clusters('docs', 2)"
        ).fetchall()
    )
    assert got == expected


def test_empty_table_and_no_pairs(conn):
    load(conn, {})
    conn.execute("SELECT simpg.create_index('docs', 'simhash', 3, 4)")
    assert conn.execute("SELECT * FROM simpg.pairs('docs', 3)").fetchall() == []
    assert conn.execute("SELECT * FROM simpg.clusters('docs', 3)").fetchall() == []
    assert conn.execute("SELECT * FROM simpg.cluster_sizes('docs', 3)").fetchall() == []
    assert conn.execute("SELECT * FROM simpg.duplicate_stats('docs', 3)").fetchone() == (
        0,
        0,
        0,
        0,
        0,
    )
    conn.execute("INSERT INTO docs VALUES (1, 'a', 5), (2, 'b', NULL)")
    assert conn.execute("SELECT * FROM simpg.duplicate_stats('docs', 3)").fetchone() == (
        1,
        0,
        0,
        0,
        1,
    )


def test_reports_see_one_snapshot(conn):
    """clusters runs several statements; all of them read the calling query's snapshot."""
    rows = {1: 0, 2: 1, 3: 3}
    load(conn, rows)
    conn.execute("SELECT simpg.create_index('docs', 'simhash', 1, 2)")
    with conn.transaction():
        conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        before = conn.execute("SELECT * FROM simpg.clusters('docs', 1, method => 'components')").fetchall()
        with psycopg.connect(conn.info.dsn, autocommit=True) as other:
            other.execute("INSERT INTO docs VALUES (4, 'x', 2)")  # bridges 1-2 and 3
        assert conn.execute("SELECT * FROM simpg.clusters('docs', 1, method => 'components')").fetchall() == before
    after = conn.execute("SELECT key, cluster_id FROM simpg.clusters('docs', 1, method => 'components')").fetchall()
    assert sorted(after) == [(1, 1), (2, 1), (3, 1), (4, 1)]
    # around representatives, 3 (0b11) is 2 bits from 1's 0: it stays alone
    after = conn.execute("SELECT key, cluster_id FROM simpg.clusters('docs', 1)").fetchall()
    assert sorted(after) == [(1, 1), (2, 1), (4, 1)]


def test_pairs_query_is_the_statement_pairs_runs(conn):
    rng = random.Random(12)
    rows = keyed(adversarial_fingerprints(rng, 2, 3, random_rows=20), rng)
    load(conn, rows)
    conn.execute("SELECT simpg.create_index('docs', 'simhash', 2, 3)")
    query = conn.execute("SELECT simpg.pairs_query('docs', 2)").fetchone()[0]
    assert sql_pairs(conn, query, []) == brute_pairs(rows, 2)
    query = conn.execute("SELECT simpg.clusters_query('docs', 2)").fetchone()[0]
    got = conn.execute(query).fetchall()
    assert {key: (cid, size) for cid, key, size in got} == brute_representatives(rows, 2)


@pytest.mark.parametrize(
    "call, message",
    [
        (
            "simpg.pairs('docs', 4)",
            "k=4 is above the radius k=3 that the simpg index on public.docs.simhash guarantees",
        ),
        ("simpg.pairs('docs', -1)", "k must be a non-negative integer, got -1"),
        ("simpg.pairs('docs', NULL)", "k must be a non-negative integer, got null"),
        ("simpg.pairs(NULL, 3)", "table must not be null"),
        ("simpg.pairs('docs', 3, 'title')", "no simpg index on public.docs.title"),
        ("simpg.pairs('nodocs', 3)", 'relation "nodocs" does not exist'),
        (
            "simpg.pairs('docs', 3, key_column => 'title')",
            "key column public.docs.title must be not null and unique (a primary key or a unique "
            "index of its own)",
        ),
        (
            "simpg.pairs('docs', 3, key_column => 'nope')",
            "column nope of table public.docs does not exist",
        ),
        (
            "simpg.pairs(NULL::uuid, 'docs', 3)",
            "key column public.docs.id is bigint, not uuid; pass NULL::bigint as the first "
            "argument to get bigint keys",
        ),
        (
            "simpg.clusters('docs', 17)",
            "k=17 is above the radius k=3 that the simpg index on public.docs.simhash guarantees",
        ),
        ("simpg.duplicate_stats('docs', NULL)", "k must be a non-negative integer, got null"),
        ("simpg.cluster_sizes('plain', 3)", "no simpg index on public.plain"),
        (
            "simpg.clusters('nokey', 3)",
            "table public.nokey has no single-column primary key; name a unique not-null column "
            "as key_column",
        ),
        (
            "simpg.pairs('textkey', 3)",
            "key column public.textkey.id is text, not bigint; pass NULL::text as the first "
            "argument to get text keys",
        ),
    ],
)
def test_bad_arguments_raise_naming_the_value(conn, call, message):
    load(conn, {1: 1, 2: 2})
    conn.execute("SELECT simpg.create_index('docs', 'simhash', 3, 4)")
    conn.execute("CREATE TABLE plain (id bigint PRIMARY KEY, simhash bigint)")
    conn.execute("CREATE TABLE nokey (a int, b int, simhash bigint, PRIMARY KEY (a, b))")
    conn.execute("SELECT simpg.create_index('nokey', 'simhash', 3, 4)")
    conn.execute("CREATE TABLE textkey (id text PRIMARY KEY, simhash bigint)")
    conn.execute("SELECT simpg.create_index('textkey', 'simhash', 3, 4)")
    with pytest.raises(psycopg.Error) as err:
        conn.execute(f"SELECT * FROM {call}").fetchall()
    assert err.value.diag.message_primary == message


def test_the_example_reports_in_the_docs_run_and_dedup_leaves_no_pair(conn):
    """Every statement of docs/reports.md's example block, on the reference schema."""
    import re
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[2] / "docs" / "reports.md").read_text()
    block = next(b for b in re.findall(r"```sql\n(.*?)```", doc, re.DOTALL)
                 if "simpg.pairs('simpg_documents'" in b)  # the example reports, not the setup
    code = "\n".join(line.split("--")[0] for line in block.splitlines())
    statements = [s.strip() for s in code.split(";") if s.strip()]
    conn.execute("""
        CREATE TABLE simpg_documents (
            id bigserial PRIMARY KEY, collection text NOT NULL DEFAULT 'default',
            source text NOT NULL, title text, body text NOT NULL, simhash bigint NOT NULL,
            fingerprint_config text NOT NULL,
            created_at timestamptz NOT NULL DEFAULT now())""")
    conn.execute("CREATE TABLE pages (page_id uuid PRIMARY KEY, url text, simhash bigint)")
    rng = random.Random(13)
    fps = [fp for fp in adversarial_fingerprints(rng, 3, 5, random_rows=100) if fp is not None]
    with conn.cursor().copy(
        "COPY simpg_documents (collection, source, title, body, simhash, fingerprint_config) "
        "FROM STDIN"
    ) as copy:
        for i, fp in enumerate(fps):
            copy.write_row(
                (f"c{i % 3}", f"f{i}.txt", f"title {i}", "body", bits.to_db(fp), "simpg-fp1:x")
            )
    with conn.cursor().copy("COPY pages FROM STDIN") as copy:
        for i, fp in enumerate(fps):
            copy.write_row((uuid.UUID(int=i + 1), f"https://example.com/{i}", bits.to_db(fp)))
    conn.execute("SELECT simpg.create_index('simpg_documents', 'simhash', k => 3, blocks => 5)")
    conn.execute("SELECT simpg.create_index('pages', 'simhash', 2, 3)")
    rows = {i + 1: fp for i, fp in enumerate(fps)}
    kept = conn.execute(
        "SELECT rows_after_dedup FROM simpg.duplicate_stats('simpg_documents', 3)"
    ).fetchone()[0]
    assert len(statements) >= 7
    results = [
        conn.execute(s).fetchall()
        if not s.upper().startswith("DELETE")
        else conn.execute(s).rowcount
        for s in statements
    ]
    assert len(results[0]) == len(brute_pairs(rows, 3))
    assert conn.execute("SELECT count(*) FROM simpg_documents").fetchone() == (kept,)
    assert conn.execute("SELECT count(*) FROM simpg.pairs('simpg_documents', 3)").fetchone() == (0,)
    assert len(results[-1]) == len(brute_pairs(rows, 2))


def test_reports_run_in_a_read_only_transaction(conn):
    """No temporary tables or writes: reports work on a hot standby or a read-only role."""
    rows = {1: 0, 2: 1, 3: 7, 4: None}  # 0 and 1 are 1 apart; 7 is 2 from 1
    load(conn, rows)
    conn.execute("SELECT simpg.create_index('docs', 'simhash', 1, 2)")
    with conn.transaction():
        conn.execute("SET TRANSACTION READ ONLY")
        assert conn.execute("SELECT * FROM simpg.pairs('docs', 1)").fetchall() == [(1, 2, 1)]
        assert conn.execute("SELECT key FROM simpg.clusters('docs', 1)").fetchall() == [(1,), (2,)]
        stats = conn.execute("SELECT * FROM simpg.duplicate_stats('docs', 1)").fetchone()
        assert stats == (3, 2, 1, 2, 2)


# Issue 17: with the layout's masks and SELECT on the prefix columns, the reports read
# each pass's candidate rows from its prefix B-tree (simpg.prefix_groups); a role that
# may read only the key and fingerprint columns gets the join over the whole table.
# Both paths must give the brute-force answer on the same adversarial data.
B_TREE_LAYOUTS = [(0, 1, None), (1, 3, None), (3, 5, None), (3, 4, 4), (5, 7, None)]


def _reports(conn: psycopg.Connection, k: int) -> tuple[Any, ...]:
    pairs = sql_pairs(conn, "SELECT key_a, key_b, distance FROM simpg.pairs('docs', %s)", [k])
    clusters = {
        method: {
            key: (cid, size)
            for cid, key, size in conn.execute(
                "SELECT * FROM simpg.clusters('docs', %s, method => %s)", [k, method]
            ).fetchall()
        }
        for method in ("representative", "components")
    }
    return pairs, clusters


@pytest.mark.parametrize("index_k, blocks, inner", B_TREE_LAYOUTS, ids=lambda v: str(v))
def test_b_tree_candidates_and_the_whole_table_join_equal_brute_force(db, index_k, blocks, inner):
    from tests.integration.roles import login_role, role_dsn

    conn = db.conn
    rng = random.Random(1700 + index_k * 10 + blocks)
    fps = adversarial_fingerprints(rng, max(index_k, 1), blocks, random_rows=400)
    # exact duplicates in a group of five, and near copies at distance index_k exactly
    fps += [fps[0]] * 5 + [flip(fps[3] or 0, range(0, 64, 64 // max(index_k, 1))[:index_k])]
    rows = keyed(fps, rng)
    load(conn, rows)
    conn.execute("SELECT simpg.create_index('docs', 'simhash', %s, %s, %s)", [index_k, blocks, inner])
    tables = len(conn.execute("SELECT simpg.layout_masks(k, levels) FROM simpg.indexes").fetchone()[0])
    with login_role(conn) as role, psycopg.connect(role_dsn(db, role), autocommit=True) as other:
        conn.execute(f'GRANT SELECT (id, simhash) ON docs TO "{role}"')
        for k in range(index_k + 1):
            # the owner's passes: one statement per table of the layout (the B-tree path)
            passes = conn.execute("SELECT simpg.pairs_passes('docs', %s)", [k]).fetchone()[0]
            assert len(passes) == tables and "LATERAL" in passes[0]
            # the role's: one statement joining the whole table
            passes = other.execute("SELECT simpg.pairs_passes('docs', %s)", [k]).fetchone()[0]
            assert len(passes) == 1 and "LATERAL" not in passes[0]
            expected = (
                brute_pairs(rows, k),
                {"representative": brute_representatives(rows, k), "components": brute_clusters(rows, k)},
            )
            assert _reports(conn, k) == expected, f"k={k}, B-trees"
            assert _reports(other, k) == expected, f"k={k}, whole table"
    assert any(d == 0 for d in expected[0].values()) and any(d == index_k for d in expected[0].values())


def test_b_tree_path_on_a_partitioned_table_and_a_large_group(conn):
    rng = random.Random(1717)
    fps: list[int | None] = [rng.getrandbits(64) for _ in range(300)]
    fps += [fps[1]] * 40  # one fingerprint in 41 rows: 820 pairs at distance 0
    fps += [flip(fps[2] or 0, [0, 63]), flip(fps[2] or 0, [31, 32, 33])]
    rows = keyed(fps, rng)
    conn.execute("CREATE TABLE docs (id bigint, title text, simhash bigint, PRIMARY KEY (id)) PARTITION BY HASH (id)")
    for r in range(3):
        conn.execute(f"CREATE TABLE docs_{r} PARTITION OF docs FOR VALUES WITH (MODULUS 3, REMAINDER {r})")
    with conn.cursor().copy("COPY docs (id, title, simhash) FROM STDIN") as copy:
        for key, fp in rows.items():
            copy.write_row((key, "t", None if fp is None else bits.to_db(fp)))
    conn.execute("SELECT simpg.create_index('docs', 'simhash', 3)")
    assert len(conn.execute("SELECT simpg.pairs_passes('docs', 3)").fetchone()[0]) > 1
    for k in (0, 3):
        assert sql_pairs(conn, "SELECT * FROM simpg.pairs('docs', %s)", [k]) == brute_pairs(rows, k)
        got = conn.execute("SELECT key, cluster_id, size FROM simpg.clusters('docs', %s)", [k]).fetchall()
        assert {key: (cid, size) for key, cid, size in got} == brute_representatives(rows, k)


def test_pairs_reports_its_progress_per_pass_on_large_tables(conn):
    rng = random.Random(1718)
    fps: list[int | None] = [rng.getrandbits(64) for _ in range(3000)]
    fps += [flip(fps[i] or 0, rng.sample(range(64), i % 4)) for i in range(100)]
    rows = keyed(fps, rng)
    load(conn, rows)
    conn.execute("SELECT simpg.create_index('docs', 'simhash', 3, 5)")
    notices: list[str] = []
    conn.add_notice_handler(lambda d: notices.append(d.message_primary or ""))
    conn.execute("SELECT count(*) FROM simpg.pairs('docs', 3)").fetchone()
    assert notices == []  # small tables stay quiet
    # what ANALYZE would record for a large table (the notices key on reltuples)
    conn.execute("UPDATE pg_class SET reltuples = 200000 WHERE oid = 'docs'::regclass")
    got = sql_pairs(conn, "SELECT * FROM simpg.pairs('docs', 3)", [])
    assert got == brute_pairs(rows, 3)
    assert len(notices) == 10
    for i, notice in enumerate(notices, 1):
        assert re.fullmatch(rf"simpg.pairs on public.docs: pass {i} of 10 done after [0-9.]+ s", notice)


def test_b_tree_path_on_crowded_prefixes(conn):
    # Many distinct fingerprints under one prefix of a table, with repeated values
    # among them: the pass must pair every two of them (not only neighbours in the
    # B-tree's order), equal fingerprints once, and prefixes on both sides of zero.
    rng = random.Random(1719)
    fps: list[int | None] = [rng.getrandbits(64) for _ in range(300)]
    conn.execute("CREATE TABLE masks AS SELECT simpg.layout_masks(3, ARRAY[5]) AS m")
    masks = [bits.from_db(m) for m in conn.execute("SELECT m FROM masks").fetchone()[0]]
    conn.execute("DROP TABLE masks")
    for t, base in [(0, 0), (0, bits.MASK), (3, 1 << 63), (9, rng.getrandbits(64))]:
        crowd = [(base & masks[t]) | (rng.getrandbits(64) & ~masks[t] & bits.MASK) for _ in range(12)]
        crowd += [flip(crowd[i], rng.sample(range(64), i % 5)) for i in range(12)]
        fps += crowd + crowd[:3] + [crowd[5]] * 3  # values repeated within the crowd
    rows = keyed(fps, rng)
    load(conn, rows)
    conn.execute("SELECT simpg.create_index('docs', 'simhash', 3, 5)")
    for k in range(4):
        assert _reports(conn, k) == (
            brute_pairs(rows, k),
            {"representative": brute_representatives(rows, k), "components": brute_clusters(rows, k)},
        ), f"k={k}"
        stats = conn.execute("SELECT rows, duplicated_rows FROM simpg.duplicate_stats('docs', %s)", [k]).fetchone()
        assert stats == (len(rows), len(brute_representatives(rows, k)))
    assert any(d == 0 for d in brute_pairs(rows, 3).values())


def test_b_tree_passes_read_each_b_tree_once_in_order(conn):
    # The point of the B-tree path: each pass is one index-only scan of its B-tree,
    # already in prefix order (no sort of the table, no sequential scan), and the
    # rows of the pairs are read by index.
    rng = random.Random(1720)
    rows = keyed([rng.getrandbits(64) for _ in range(20000)], rng)
    load(conn, rows)
    conn.execute("SELECT simpg.create_index('docs', 'simhash', 3, 5)")
    conn.execute("VACUUM ANALYZE docs")  # a settled table: its visibility map set
    for setting in ("enable_mergejoin", "enable_hashagg"):  # as simpg.pairs runs them
        conn.execute(f"SET {setting} = off")
    for statement in conn.execute("SELECT simpg.pairs_passes('docs', 3)").fetchone()[0]:
        plan = "\n".join(row[0] for row in conn.execute(f"EXPLAIN {statement}"))
        assert "Seq Scan" not in plan and "Index Only Scan" in plan, plan
        window = plan[plan.index("WindowAgg"):]
        assert window.split("->", 2)[1].strip().startswith("Index Only Scan"), plan
