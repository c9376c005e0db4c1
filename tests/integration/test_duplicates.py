"""Lookups confirmed by sketches (issue 14): SimHashColumn.duplicates, its async twin, SQL and SQLAlchemy.

Every answer is compared with brute force over all rows: within k bits of the fingerprint
and within the sketch limit, on the adversarial fingerprints of test_psycopg_index.corpus
(distance 0, duplicates, bits 0 and 63, values >= 2**63, k at the layout's limit) and on
sketches planted at 0 .. 2 x the limit from the queries' own.
"""

from __future__ import annotations

import asyncio
import random

import psycopg
import pytest
from sqlalchemy import BigInteger, Column, MetaData, Table, create_engine, select

from simpg import bits
from simpg.exc import SimpgError
from simpg.fingerprint import MAX_SKETCH_DISTANCE, sketch
from simpg.fingerprint.minhash import to_sql
from simpg.layout import Layout
from simpg.psycopg import AsyncSimHashColumn, Duplicate, SimHashColumn
from simpg.sqlalchemy import SimHash, Sketch, simhash_index, url_from_dsn
from tests.integration.test_psycopg_index import corpus, make_table

LAYOUT = Layout(4, (6,))  # the reference table's layout


def flip_bits(value: bytes, rng: random.Random, n: int) -> bytes:
    x = int.from_bytes(value, "big")
    for b in rng.sample(range(256), n):
        x ^= 1 << b
    return x.to_bytes(32, "big")


def setup(conn: psycopg.Connection, seed: int) -> tuple[SimHashColumn, list[int], list[bytes], list[tuple[int, bytes]]]:
    rows, queries = corpus(seed, LAYOUT.k, n=300)
    index = make_table(conn, LAYOUT, rows)
    rng = random.Random(seed)
    query_sketches = [rng.randbytes(32) for _ in queries]
    # each row's sketch: near one query's (0 .. 2x the limit bits away), or random
    sketches = []
    for _ in rows:
        base = rng.choice(query_sketches)
        sketches.append(flip_bits(base, rng, rng.randint(0, 2 * MAX_SKETCH_DISTANCE)) if rng.random() < 0.7
                        else rng.randbytes(32))
    conn.execute("ALTER TABLE docs ADD COLUMN sketch bit(256)")
    with conn.cursor() as cur:
        cur.executemany("UPDATE docs SET sketch = %s::bit(256) WHERE id = %s",
                        [(to_sql(s), i) for i, s in enumerate(sketches, start=1)])
    return index, rows, sketches, list(zip(queries, query_sketches, strict=True))


def brute(rows: list[int], sketches: list[bytes], q: int, qs: bytes, k: int, t: int) -> list[Duplicate]:
    found = []
    for i, (fp, s) in enumerate(zip(rows, sketches, strict=True), start=1):
        d = bits.hamming(fp, q)
        sd = (int.from_bytes(s, "big") ^ int.from_bytes(qs, "big")).bit_count()
        if d <= k and sd <= t:
            found.append(Duplicate(i, d, sd))
    return sorted(found, key=lambda x: (x.sketch_distance, x.distance, x.id))


def test_duplicates_equal_brute_force(conn: psycopg.Connection) -> None:
    index, rows, sketches, queries = setup(conn, 41)
    checked = 0
    for k, t in ((LAYOUT.k, MAX_SKETCH_DISTANCE), (0, 256), (2, 0), (3, 10)):
        for q, qs in queries:
            got = index.duplicates(q, qs, k, max_sketch_distance=t)
            assert got == brute(rows, sketches, q, qs, k, t), (k, t, q)
            checked += len(got)
    assert checked > 20  # the planted rows were found
    q, qs = queries[0]
    assert index.duplicates(q, qs) == brute(rows, sketches, q, qs, LAYOUT.k, MAX_SKETCH_DISTANCE)
    found = index.duplicates(q, qs, max_sketch_distance=256)
    assert found and all(d.similarity == max(0.0, 1 - d.sketch_distance / 128) for d in found)


def test_sql_and_sqlalchemy_confirm_the_same_rows(conn: psycopg.Connection, db: object) -> None:
    """The documented raw SQL (simpg.near plus bit_count) and SQLAlchemy give the same rows."""
    index, rows, sketches, queries = setup(conn, 42)
    docs = Table("docs", MetaData(), Column("id", BigInteger, primary_key=True), Column("simhash", SimHash()),
                 Column("sketch", Sketch()))
    simhash_index(docs.c.simhash, k=LAYOUT.k, blocks=LAYOUT.levels[0])
    engine = create_engine(url_from_dsn(db.dsn))  # type: ignore[attr-defined]
    try:
        with engine.connect() as sa:
            for q, qs in queries:
                want = {(d.id, d.distance, d.sketch_distance) for d in index.duplicates(q, qs)}
                sql_rows = conn.execute(
                    "SELECT n.id, simpg.hamming(n.simhash, %(q)s), bit_count(n.sketch # %(s)s::bit(256)) "
                    "FROM simpg.near(NULL::docs, %(q)s, %(k)s) AS n "
                    "WHERE bit_count(n.sketch # %(s)s::bit(256)) <= %(t)s",
                    {"q": bits.to_db(q), "s": to_sql(qs), "k": LAYOUT.k, "t": MAX_SKETCH_DISTANCE}).fetchall()
                assert set(sql_rows) == want
                stmt = (select(docs.c.id, docs.c.simhash.distance(q), docs.c.sketch.sketch_distance(qs))
                        .where(docs.c.simhash.within(q, LAYOUT.k))
                        .where(docs.c.sketch.sketch_distance(qs) <= MAX_SKETCH_DISTANCE))
                assert set(map(tuple, sa.execute(stmt))) == want
            stored = sa.execute(select(docs.c.sketch).where(docs.c.id == 1)).scalar_one()
            assert stored == sketches[0]
    finally:
        engine.dispose()


def test_async_duplicates(db: object) -> None:
    dsn = db.dsn  # type: ignore[attr-defined]
    with psycopg.connect(dsn, autocommit=True) as conn:
        _, rows, sketches, queries = setup(conn, 43)

    async def main() -> list[list[Duplicate]]:
        aconn = await psycopg.AsyncConnection.connect(dsn, autocommit=True)
        async with aconn:
            index = AsyncSimHashColumn(aconn, "docs", "simhash")
            return [await index.duplicates(q, qs) for q, qs in queries]

    got = asyncio.run(main())
    assert got == [brute(rows, sketches, q, qs, LAYOUT.k, MAX_SKETCH_DISTANCE) for q, qs in queries]


def test_texts_of_one_template_are_not_confirmed(conn: psycopg.Connection) -> None:
    """Fingerprints within k of each other, sketches far apart: the lookup returns only the copy."""
    # A navigation line repeated on every page: its weight decides the fingerprints (a
    # separator line did before fingerprint format 2), but it is a few shingles of the sets.
    template = "Home | Products | News | Support | Contact us | Log in\n" * 12
    bodies = ["button widgets display text and invoke a command when pressed by the user",
              "canvas widgets implement structured graphics such as lines polygons and ovals",
              "entry widgets let the user type one line of text that scrolls horizontally"]
    texts = [template + b for b in bodies] + [template + bodies[0] + " today"]
    from simpg.fingerprint import fingerprint

    conn.execute("CREATE TABLE pages (id bigint PRIMARY KEY, simhash bigint, sketch bit(256))")
    with conn.cursor() as cur:
        cur.executemany("INSERT INTO pages VALUES (%s, %s, %s::bit(256))",
                        [(i, bits.to_db(fingerprint(t)), to_sql(sketch(t))) for i, t in enumerate(texts, start=1)])
    index = SimHashColumn(conn, "pages", "simhash")
    index.create(k=7, blocks=8)
    assert len(index.near(fingerprint(texts[0]))) > 2  # the fingerprints alone: the template decides
    assert [d.id for d in index.duplicates(fingerprint(texts[0]), sketch(texts[0]))] == [1, 4]


def test_bad_arguments_name_the_value(conn: psycopg.Connection) -> None:
    index, _, _, queries = setup(conn, 44)
    q, qs = queries[0]
    with pytest.raises(SimpgError, match="max_sketch_distance must be an integer from 0 to 256, got 300"):
        index.duplicates(q, qs, max_sketch_distance=300)
    with pytest.raises(SimpgError, match="expected a sketch of 32 bytes, got b'abc'"):
        index.duplicates(q, b"abc")
    with pytest.raises(SimpgError, match="k=5 is above the radius k=4"):
        index.duplicates(q, qs, 5)
    with pytest.raises(SimpgError, match=r"column nope of table docs does not exist \(the sketches"):
        index.duplicates(q, qs, sketch_column="nope")
    with pytest.raises(SimpgError, match=r"column note of table docs must be bit\(256\) \(sketches\), got: "
                                         "operator does not exist: text # bit"):
        index.duplicates(q, qs, sketch_column="note")
    assert index.near(q) is not None  # the handle still works


def test_sql_report_pairs_confirmed_equal_dedup_engine(conn: psycopg.Connection) -> None:
    """simpg.pairs at dedup's radius joined with the sketches gives what simpg dedup decides
    (allpairs.confirmed_pair_chunks), on the same rows."""
    import numpy as np

    from simpg import allpairs
    from simpg.fingerprint import DEDUP_K

    index, rows, sketches, queries = setup(conn, 45)
    rng = random.Random(45)
    for n, fp in enumerate(rows):  # rows planted around one query: sketches near that query's
        for q, qs in queries:
            if bits.hamming(fp, q) <= LAYOUT.k + 1:
                sketches[n] = flip_bits(qs, rng, rng.randint(0, MAX_SKETCH_DISTANCE // 2 + 4))
                conn.execute("UPDATE docs SET sketch = %s::bit(256) WHERE id = %s", [to_sql(sketches[n]), n + 1])
                break
    index.drop()
    index.create(DEDUP_K, 8)  # the reports answer up to the index's radius
    got = set(conn.execute(
        "SELECT p.key_a, p.key_b, p.distance, bit_count(x.sketch # y.sketch) "
        "FROM simpg.pairs('docs', %s) AS p JOIN docs AS x ON x.id = p.key_a JOIN docs AS y ON y.id = p.key_b "
        "WHERE bit_count(x.sketch # y.sketch) <= %s", [DEDUP_K, MAX_SKETCH_DISTANCE]).fetchall())
    fps = np.array(rows, dtype=np.uint64)
    want = {(int(i) + 1, int(j) + 1, int(d), int(s))
            for a, b, c, e in allpairs.confirmed_pair_chunks(fps, sketches, DEDUP_K)
            for i, j, d, s in zip(a, b, c, e, strict=True)}
    assert got == want and len(want) > 50
