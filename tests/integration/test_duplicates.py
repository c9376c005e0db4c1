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
from sqlalchemy import BigInteger, Column, MetaData, Table, Text, create_engine, or_, select, union
from sqlalchemy.ext.asyncio import AsyncSession, create_async_engine
from sqlalchemy.orm import DeclarativeBase, Session, mapped_column

from simpg import bits
from simpg.exc import SimpgError
from simpg.fingerprint import MAX_SKETCH_DISTANCE, sketch
from simpg.fingerprint.minhash import BANDS, band_columns, to_sql
from simpg.layout import Layout
from simpg.psycopg import AsyncSimHashColumn, Duplicate, SimHashColumn, configure_lookups
from simpg.sqlalchemy import (
    SimHash,
    Sketch,
    duplicates,
    duplicates_async,
    duplicates_select,
    simhash_index,
    url_from_dsn,
)
from tests.integration.psycopg_tables import make_table
from tests.oracles import brute_duplicates, numbered, planted_corpus

LAYOUT = Layout(4, (6,))  # the reference table's layout


def flip_bits(value: bytes, rng: random.Random, n: int) -> bytes:
    x = int.from_bytes(value, "big")
    for b in rng.sample(range(256), n):
        x ^= 1 << b
    return x.to_bytes(32, "big")


def setup(conn: psycopg.Connection, seed: int) -> tuple[SimHashColumn, list[int], list[bytes], list[tuple[int, bytes]]]:
    rows, queries = planted_corpus(seed, LAYOUT.k, n=300)
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
    """Adapter: oracles.brute_duplicates over the rows numbered 1..n, no band keys."""
    return brute_duplicates(numbered(zip(rows, sketches, [None] * len(rows), strict=True)), q, qs, k, t)


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
    """The documented raw SQL (simpg.near plus simpg.sketch_distance) and SQLAlchemy give the same rows."""
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
                    "SELECT n.id, simpg.hamming(n.simhash, %(q)s), simpg.sketch_distance(n.sketch, %(s)s::bit(256)) "
                    "FROM simpg.near(NULL::docs, %(q)s, %(k)s) AS n "
                    "WHERE simpg.sketch_distance(n.sketch, %(s)s::bit(256)) <= %(t)s",
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
                                         r"function simpg.sketch_distance\(text, bit\) does not exist"):
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
        "SELECT p.key_a, p.key_b, p.distance, simpg.sketch_distance(x.sketch, y.sketch) "
        "FROM simpg.pairs('docs', %s) AS p JOIN docs AS x ON x.id = p.key_a JOIN docs AS y ON y.id = p.key_b "
        "WHERE simpg.sketch_distance(x.sketch, y.sketch) <= %s", [DEDUP_K, MAX_SKETCH_DISTANCE]).fetchall())
    fps = np.array(rows, dtype=np.uint64)
    want = {(int(i) + 1, int(j) + 1, int(d), int(s))
            for a, b, c, e in allpairs.confirmed_pair_chunks(fps, sketches, DEDUP_K)
            for i, j, d, s in zip(a, b, c, e, strict=True)}
    assert got == want and len(want) > 50


# -- band keys: a second candidate source (simpg.fingerprint.sketch_and_bands) ------------

BAND_COLUMNS = [f"sketch_b{i}" for i in range(4)]
EXTREMES = [-(1 << 63), (1 << 63) - 1, 0, -1]


def add_bands(conn: psycopg.Connection, rows: list[int], sketches: list[bytes | None],
              queries: list[tuple[int, bytes]], seed: int) -> tuple[list[list[int | None]], list[list[int]]]:
    """Band columns with B-trees; rows sharing one band with a query (their sketch near its sketch,
    their fingerprint anywhere), rows with NULL bands or NULL sketches, extreme int8 keys."""
    rng = random.Random(seed)
    query_bands = [[rng.randrange(-(1 << 63), 1 << 63) for _ in range(4)] for _ in queries]
    query_bands[0] = list(EXTREMES)
    row_bands: list[list[int | None]] = []
    for n in range(len(rows)):
        keys: list[int | None] = [rng.randrange(-(1 << 63), 1 << 63) for _ in range(4)]
        r = rng.random()
        if r < 0.3:
            x = rng.randrange(len(queries))
            i = rng.randrange(4)
            keys[i] = query_bands[x][i]
            sketches[n] = flip_bits(queries[x][1], rng, rng.randint(0, MAX_SKETCH_DISTANCE + 8))
        elif r < 0.4:
            keys = [None] * 4  # a short document: found through its fingerprint only
        elif r < 0.45:
            keys[rng.randrange(4)] = None
        elif r < 0.5:
            sketches[n] = None
        elif r < 0.55:  # the key in another band's column: not a match
            x = rng.randrange(len(queries))
            keys[0] = query_bands[x][1]
        row_bands.append(keys)
    for col in BAND_COLUMNS:
        conn.execute(f"ALTER TABLE docs ADD COLUMN {col} bigint")
        conn.execute(f"CREATE INDEX docs_{col}_idx ON docs ({col})")
    with conn.cursor() as cur:
        cur.executemany("UPDATE docs SET sketch = %s::bit(256), sketch_b0 = %s, sketch_b1 = %s, sketch_b2 = %s, "
                        "sketch_b3 = %s WHERE id = %s",
                        [(None if s is None else to_sql(s), *b, i)
                         for i, (s, b) in enumerate(zip(sketches, row_bands, strict=True), start=1)])
    conn.execute("ANALYZE docs")
    return row_bands, query_bands


def brute_banded(rows: list[int], sketches: list[bytes | None], row_bands: list[list[int | None]], q: int,
                 qs: bytes, qb: list[int], k: int, t: int) -> list[Duplicate]:
    """Adapter: oracles.brute_duplicates over the rows numbered 1..n, with the query's band keys."""
    return brute_duplicates(numbered(zip(rows, sketches, row_bands, strict=True)), q, qs, k, t, qb)


def test_banded_duplicates_equal_brute_force(conn: psycopg.Connection) -> None:
    index, rows, sketches, queries = setup(conn, 51)
    stored: list[bytes | None] = list(sketches)
    row_bands, query_bands = add_bands(conn, rows, stored, queries, 51)
    through_bands = 0
    for k, t in ((LAYOUT.k, MAX_SKETCH_DISTANCE), (0, 256), (2, 0), (3, 10)):
        for (q, qs), qb in zip(queries, query_bands, strict=True):
            got = index.duplicates(q, qs, k, band_keys=qb, max_sketch_distance=t)
            assert got == brute_banded(rows, stored, row_bands, q, qs, qb, k, t), (k, t, q)
            through_bands += sum(d.distance > k for d in got)
            # without bands: the lookup of before, on the same rows
            assert index.duplicates(q, qs, k, max_sketch_distance=t) == brute_banded(
                rows, stored, [[None] * 4] * len(rows), q, qs, qb, k, t)
    assert through_bands > 50  # rows beyond k found through a shared band
    q, qs = queries[0]
    assert index.duplicates(q, qs, band_keys=query_bands[0], band_columns=BAND_COLUMNS) == brute_banded(
        rows, stored, row_bands, q, qs, query_bands[0], LAYOUT.k, MAX_SKETCH_DISTANCE)
    # band keys in the wrong order are other keys
    swapped = [query_bands[1][1], query_bands[1][0], *query_bands[1][2:]]
    assert index.duplicates(queries[1][0], queries[1][1], band_keys=swapped) == brute_banded(
        rows, stored, row_bands, queries[1][0], queries[1][1], swapped, LAYOUT.k, MAX_SKETCH_DISTANCE)


def test_banded_async_duplicates(db: object) -> None:
    dsn = db.dsn  # type: ignore[attr-defined]
    with psycopg.connect(dsn, autocommit=True) as conn:
        _, rows, sketches, queries = setup(conn, 52)
        stored: list[bytes | None] = list(sketches)
        row_bands, query_bands = add_bands(conn, rows, stored, queries, 52)

    async def main() -> list[list[Duplicate]]:
        aconn = await psycopg.AsyncConnection.connect(dsn, autocommit=True)
        async with aconn:
            index = AsyncSimHashColumn(aconn, "docs", "simhash")
            return [await index.duplicates(q, qs, band_keys=qb)
                    for (q, qs), qb in zip(queries, query_bands, strict=True)]

    got = asyncio.run(main())
    assert got == [brute_banded(rows, stored, row_bands, q, qs, qb, LAYOUT.k, MAX_SKETCH_DISTANCE)
                   for (q, qs), qb in zip(queries, query_bands, strict=True)]


def test_banded_lookup_is_one_bitmap_or_never_a_seq_scan(conn: psycopg.Connection) -> None:
    """The prefix B-trees and the band B-trees in one BitmapOr, on a table where a scan would be cheap."""
    from simpg.psycopg import statements as q_sql
    from simpg.psycopg._common import band_key_array, duplicates_params, with_ids

    conn.execute("CREATE TABLE docs (id bigserial PRIMARY KEY, simhash bigint, sketch bit(256), "
                 "sketch_b0 bigint, sketch_b1 bigint, sketch_b2 bigint, sketch_b3 bigint)")
    conn.execute("INSERT INTO docs (simhash, sketch, sketch_b0, sketch_b1, sketch_b2, sketch_b3) "
                 "SELECT (random() * 2^62)::bigint, NULL, g, g + 1, g + 2, g + 3 FROM generate_series(1, 20000) g")
    for col in BAND_COLUMNS:
        conn.execute(f"CREATE INDEX ON docs ({col})")
    index = SimHashColumn(conn, "docs", "simhash")
    index.create(LAYOUT.k, LAYOUT.levels[0])
    conn.execute("ANALYZE docs")
    info = with_ids(index.info)
    row = conn.execute(q_sql.DUPLICATES_CONDITION_SQL,
                       q_sql.duplicates_condition_params(info, "sketch", BAND_COLUMNS)).fetchone()
    assert row is not None
    statement = q_sql.duplicates_sql(info, "sketch", row[0]).as_bytes(conn)
    params = duplicates_params(info, 12345, LAYOUT.k, sketch("some text"), None, [7, 8, 9, 10], BAND_COLUMNS)
    assert isinstance(params[5], type(band_key_array([1, 2, 3, 4], BAND_COLUMNS)))
    with psycopg.RawCursor(conn) as cur:
        cur.execute(b"EXPLAIN " + statement, params, binary=True)
        plan = "\n".join(r[0] for r in cur.fetchall())
    assert "Seq Scan" not in plan, plan
    assert plan.count("BitmapOr") == 1, plan
    assert plan.count("Bitmap Index Scan on docs_simhash_p") == len(info.prefix_columns), plan
    for col in BAND_COLUMNS:
        assert f"Bitmap Index Scan on docs_{col}_idx" in plan, plan
    # the generic plan a lookup connection runs (prepared, parameters unknown to the planner)
    configure_lookups(conn)
    conn.execute("LOAD 'auto_explain'")
    conn.execute("SET auto_explain.log_min_duration = 0")
    conn.execute("SET client_min_messages = log")
    conn.execute("SET auto_explain.log_level = notice")
    notices: list[str] = []
    conn.add_notice_handler(lambda diag: notices.append(diag.message_primary or ""))
    for _ in range(3):
        assert index.duplicates(12345, sketch("some text"), band_keys=[7, 8, 9, 10], max_sketch_distance=256) == []
    generic = notices[-1]
    assert "$" in generic and "BitmapOr" in generic and "Seq Scan" not in generic, generic
    for col in BAND_COLUMNS:
        assert f"Bitmap Index Scan on docs_{col}_idx" in generic, generic


def test_banded_bad_arguments_name_the_value(conn: psycopg.Connection) -> None:
    index, rows, sketches, queries = setup(conn, 53)
    q, qs = queries[0]
    with pytest.raises(SimpgError, match=r"column sketch_b0 of table docs does not exist \(band keys, bigint\)"):
        index.duplicates(q, qs, band_keys=[1, 2, 3, 4])
    conn.execute("ALTER TABLE docs ADD COLUMN sketch_b0 text, ADD COLUMN sketch_b1 bigint, "
                 "ADD COLUMN sketch_b2 bigint, ADD COLUMN sketch_b3 bigint")
    with pytest.raises(SimpgError, match="band columns sketch_b0, sketch_b1, sketch_b2, sketch_b3 of table docs "
                                         "must be bigint, got: operator does not exist: text = bigint"):
        index.duplicates(q, qs, band_keys=[1, 2, 3, 4])
    with pytest.raises(SimpgError, match=r"expected 4 band keys \(one per band column\), got 3: \[1, 2, 3\]"):
        index.duplicates(q, qs, band_keys=[1, 2, 3])
    with pytest.raises(SimpgError, match="expected a signed 64-bit band key, got 9223372036854775808"):
        index.duplicates(q, qs, band_keys=[1, 2, 3, 1 << 63])
    with pytest.raises(SimpgError, match="expected a signed 64-bit band key, got '5'"):
        index.duplicates(q, qs, band_keys=[1, 2, 3, "5"])  # type: ignore[list-item]
    with pytest.raises(SimpgError, match="expected a sequence of band keys, got 5"):
        index.duplicates(q, qs, band_keys=5)  # type: ignore[arg-type]
    with pytest.raises(SimpgError, match="expected band_columns as a list of column names, got 'sketch_b1'"):
        index.duplicates(q, qs, band_keys=[1], band_columns="sketch_b1")
    got = index.duplicates(q, qs, band_keys=[1], band_columns=["sketch_b1"])  # one band of a table's four
    assert got == brute(rows, sketches, q, qs, LAYOUT.k, MAX_SKETCH_DISTANCE)
    assert index.near(q) is not None  # the handle still works


def test_sketch_and_bands_find_an_edited_text_beyond_k(conn: psycopg.Connection) -> None:
    """Real texts end to end: a copy with words added is beyond k = 0, shares a band, and is confirmed."""
    from simpg.fingerprint import fingerprint, sketch_and_bands

    rng = random.Random(2)
    words = [f"term{i}" for i in range(3000)]
    base = " ".join(rng.choice(words) for _ in range(400))
    texts = [base, base + " " + " ".join(rng.choice(words) for _ in range(60))]  # 1 bit away, 2 bands shared
    texts += [" ".join(rng.choice(words) for _ in range(400)) for _ in range(30)]
    conn.execute("CREATE TABLE pages (id bigint PRIMARY KEY, simhash bigint, sketch bit(256), "
                 "sketch_b0 bigint, sketch_b1 bigint, sketch_b2 bigint, sketch_b3 bigint)")
    made = [sketch_and_bands(t) for t in texts]
    with conn.cursor() as cur:
        cur.executemany("INSERT INTO pages VALUES (%s, %s, %s::bit(256), %s, %s, %s, %s)",
                        [(i, bits.to_db(fingerprint(t)), to_sql(s), *(b or [None] * 4))
                         for i, (t, (s, b)) in enumerate(zip(texts, made, strict=True), start=1)])
    index = SimHashColumn(conn, "pages", "simhash")
    index.create(k=0, blocks=1)
    s, b = made[0]
    assert [d.id for d in index.duplicates(fingerprint(texts[0]), s)] == [1]
    found = index.duplicates(fingerprint(texts[0]), s, band_keys=b)
    assert [d.id for d in found] == [1, 2] and found[1].distance > 0


#: The documented SQL for band keys (docs/fingerprinting.md, "Band keys from SQL and SQLAlchemy").
BANDED_SQL = """
SELECT n.id, simpg.hamming(n.simhash, %(q)s), simpg.sketch_distance(n.sketch, %(s)s::bit(256))
FROM docs AS n
JOIN (SELECT id FROM simpg.near(NULL::docs, %(q)s, %(k)s)
      UNION
      SELECT id FROM docs
      WHERE sketch_b0 = %(b)s[1] OR sketch_b1 = %(b)s[2] OR sketch_b2 = %(b)s[3] OR sketch_b3 = %(b)s[4]
     ) AS c USING (id)
WHERE n.simhash IS NOT NULL AND simpg.sketch_distance(n.sketch, %(s)s::bit(256)) <= %(t)s
"""


def test_banded_sql_and_sqlalchemy_recipes_equal_duplicates(conn: psycopg.Connection, db: object) -> None:
    """From SQL (simpg.near UNION the band equalities) and SQLAlchemy (within() or a band, in one
    union), the rows SimHashColumn.duplicates(band_keys=) confirms."""
    index, rows, sketches, queries = setup(conn, 53)
    stored: list[bytes | None] = list(sketches)
    _, query_bands = add_bands(conn, rows, stored, queries, 53)
    docs = Table("docs", MetaData(), Column("id", BigInteger, primary_key=True), Column("simhash", SimHash()),
                 Column("sketch", Sketch()), *(Column(c, BigInteger) for c in BAND_COLUMNS))
    simhash_index(docs.c.simhash, k=LAYOUT.k, blocks=LAYOUT.levels[0])
    engine = create_engine(url_from_dsn(db.dsn))  # type: ignore[attr-defined]
    try:
        with engine.connect() as sa:
            for (q, qs), qb in zip(queries, query_bands, strict=True):
                want = {(d.id, d.distance, d.sketch_distance) for d in index.duplicates(q, qs, band_keys=qb)}
                got = conn.execute(BANDED_SQL, {"q": bits.to_db(q), "s": to_sql(qs), "k": LAYOUT.k, "b": qb,
                                                "t": MAX_SKETCH_DISTANCE}).fetchall()
                assert set(got) == want
                candidates = union(
                    select(docs.c.id).where(docs.c.simhash.within(q, LAYOUT.k)),
                    select(docs.c.id).where(or_(*(docs.c[c] == key for c, key in zip(BAND_COLUMNS, qb,
                                                                                       strict=True))))).subquery()
                stmt = (select(docs.c.id, docs.c.simhash.distance(q), docs.c.sketch.sketch_distance(qs))
                        .join(candidates, candidates.c.id == docs.c.id)
                        .where(docs.c.simhash.is_not(None))
                        .where(docs.c.sketch.sketch_distance(qs) <= MAX_SKETCH_DISTANCE))
                assert set(map(tuple, sa.execute(stmt))) == want
    finally:
        engine.dispose()


# -- simpg.duplicates (SQL) and duplicates_select (SQLAlchemy): the same lookup as functions --

DUPLICATES_SQL = ("SELECT id, simpg.hamming(simhash, %(q)s), simpg.sketch_distance(sketch, %(s)s::bit(256)) "
                  "FROM simpg.duplicates(NULL::docs, %(q)s, %(k)s, %(s)s::bit(256), %(b)s, "
                  "max_sketch_distance => %(t)s)")


class _Base(DeclarativeBase):
    pass


class Doc(_Base):
    """The docs table of setup() and add_bands()."""

    __tablename__ = "docs"
    id = mapped_column(BigInteger, primary_key=True)
    simhash = mapped_column(SimHash)
    note = mapped_column(Text)
    sketch = mapped_column(Sketch)
    sketch_b0 = mapped_column(BigInteger)
    sketch_b1 = mapped_column(BigInteger)
    sketch_b2 = mapped_column(BigInteger)
    sketch_b3 = mapped_column(BigInteger)


simhash_index(Doc.simhash, k=LAYOUT.k, blocks=LAYOUT.levels[0])


def test_sql_constants_are_pythons(conn: psycopg.Connection) -> None:
    assert conn.execute("SELECT simpg.max_sketch_distance(), simpg.band_count()").fetchone() == (
        MAX_SKETCH_DISTANCE, BANDS)
    assert conn.execute("SELECT band_column FROM simpg.band_columns('sketch') ORDER BY i").fetchall() == [
        (c,) for c in band_columns("sketch", None)]


def test_sql_function_and_sqlalchemy_helper_equal_duplicates_and_brute_force(conn: psycopg.Connection,
                                                                             db: object) -> None:
    index, rows, sketches, queries = setup(conn, 54)
    stored: list[bytes | None] = list(sketches)
    row_bands, query_bands = add_bands(conn, rows, stored, queries, 54)
    # a row without a fingerprint that shares every band and the sketch of query 0: never returned
    conn.execute("INSERT INTO docs (id, simhash, sketch, sketch_b0, sketch_b1, sketch_b2, sketch_b3) "
                 "VALUES (0, NULL, %s::bit(256), %s, %s, %s, %s)", [to_sql(queries[0][1]), *query_bands[0]])
    engine = create_engine(url_from_dsn(db.dsn))  # type: ignore[attr-defined]
    through_bands = 0
    try:
        with Session(engine) as session:
            for k, t in ((LAYOUT.k, MAX_SKETCH_DISTANCE), (0, 256), (2, 0), (3, 10)):
                for (q, qs), qb in zip(queries, query_bands, strict=True):
                    for keys in (qb, None):
                        want = index.duplicates(q, qs, k, band_keys=keys, max_sketch_distance=t)
                        assert want == brute_banded(rows, stored, row_bands if keys else [[None] * 4] * len(rows),
                                                    q, qs, qb, k, t), (k, t, q, keys)
                        got = conn.execute(DUPLICATES_SQL, {"q": bits.to_db(q), "s": to_sql(qs), "k": k, "b": keys,
                                                            "t": t}).fetchall()
                        # nearest sketch, then nearest fingerprint first; ties in any order
                        assert [g[2:0:-1] for g in got] == sorted(g[2:0:-1] for g in got)
                        assert sorted(got) == sorted(map(tuple, want)), (k, t, q, keys)
                        orm = duplicates(session, Doc, q, qs, k, band_keys=keys, max_sketch_distance=t)
                        assert [(d.id, bits.hamming(d.simhash, q)) for d in orm] == [(d.id, d.distance) for d in want]
                        through_bands += sum(d.distance > k for d in want)
    finally:
        engine.dispose()
    assert through_bands > 50
    # the default radius is the index's, the default limit MAX_SKETCH_DISTANCE; another sketch column name
    conn.execute("ALTER TABLE docs RENAME COLUMN sketch TO sk")
    for i in range(4):
        conn.execute(f"ALTER TABLE docs RENAME COLUMN sketch_b{i} TO sk_b{i}")
    (q, qs), qb = queries[1], query_bands[1]
    got = conn.execute("SELECT id FROM simpg.duplicates(NULL::docs, %s, 4, %s::bit(256), %s, 'sk')",
                       [bits.to_db(q), to_sql(qs), qb]).fetchall()
    assert sorted(r[0] for r in got) == sorted(d.id for d in brute_banded(
        rows, stored, row_bands, q, qs, qb, LAYOUT.k, MAX_SKETCH_DISTANCE))


def test_sql_duplicates_follow_a_new_layout_and_new_columns(conn: psycopg.Connection) -> None:
    """The session's prepared statement is made again when the index or the columns change."""
    index, rows, sketches, queries = setup(conn, 55)
    stored: list[bytes | None] = list(sketches)
    row_bands, query_bands = add_bands(conn, rows, stored, queries, 55)

    def check(k: int) -> None:
        for (q, qs), qb in zip(queries, query_bands, strict=True):
            got = conn.execute(DUPLICATES_SQL, {"q": bits.to_db(q), "s": to_sql(qs), "k": k, "b": qb,
                                                "t": MAX_SKETCH_DISTANCE}).fetchall()
            want = brute_banded(rows, stored, row_bands, q, qs, qb, k, MAX_SKETCH_DISTANCE)
            assert sorted(got) == sorted(map(tuple, want))

    check(LAYOUT.k)
    index.drop()
    index.create(2, 5)
    check(2)
    conn.execute("ALTER TABLE docs ADD COLUMN extra text")
    check(2)
    conn.execute("ALTER TABLE docs DROP COLUMN sketch_b3")
    with pytest.raises(psycopg.errors.UndefinedColumn, match="column sketch_b3 of table public.docs does not exist "
                                                             r"\(band keys, bigint\)"):
        check(2)


def test_sql_duplicates_bad_arguments_name_the_value(conn: psycopg.Connection) -> None:
    setup(conn, 56)
    s = to_sql(sketch("some text"))
    cases = [
        ("NULL, 4, %s::bit(256)", [s], "fingerprint must not be null"),
        ("1, -1, %s::bit(256)", [s], "k must be a non-negative integer, got -1"),
        ("1, NULL, %s::bit(256)", [s], "k must be a non-negative integer, got null"),
        ("1, 5, %s::bit(256)", [s], "k=5 is above the radius k=4 that the simpg index on public.docs.simhash"),
        ("1, 4, NULL", [], "sketch must not be null"),
        ("1, 4, B'101'", [], "sketch must have 256 bits, got 3"),
        ("1, 4, %s::bit(256), max_sketch_distance => 257", [s], "max_sketch_distance must be an integer from "
                                                                 "0 to 256, got 257"),
        ("1, 4, %s::bit(256), max_sketch_distance => NULL", [s], "max_sketch_distance must be .* got null"),
        ("1, 4, %s::bit(256), sketch_column => 'nope'", [s],
         r"column nope of table public.docs does not exist \(the sketches to confirm with\)"),
        ("1, 4, %s::bit(256), sketch_column => 'note'", [s],
         r"column note of table public.docs must be bit\(256\) \(sketches\), got text"),
        ("1, 4, %s::bit(256), '{1,2,3,4}'", [s],
         r"column sketch_b0 of table public.docs does not exist \(band keys, bigint\)"),
        ("1, 4, %s::bit(256), '{1,2,3}'", [s], r"expected 4 band keys \(one per band column\), got \{1,2,3\}"),
        ("1, 4, %s::bit(256), '{{1,2},{3,4}}'", [s], "expected 4 band keys"),
        ("1, 4, %s::bit(256), '{1,2,NULL,4}'", [s], r"band keys must not be null, got \{1,2,NULL,4\}"),
        ("1, 4, %s::bit(256), col => 'note'", [s], "no simpg index on public.docs.note"),
    ]
    for args, params, message in cases:
        with pytest.raises(psycopg.Error, match=message):
            conn.execute(f"SELECT * FROM simpg.duplicates(NULL::docs, {args})", params).fetchall()
    with pytest.raises(psycopg.Error, match="first argument must be a table row type such as NULL::articles, "
                                            "got integer"):
        conn.execute("SELECT * FROM simpg.duplicates(NULL::integer, 1, 4, %s::bit(256))", [s]).fetchall()
    conn.execute("ALTER TABLE docs ADD COLUMN sketch_b0 bigint, ADD COLUMN sketch_b1 text, "
                 "ADD COLUMN sketch_b2 bigint, ADD COLUMN sketch_b3 bigint")
    with pytest.raises(psycopg.Error, match="column sketch_b1 of table public.docs must be bigint "
                                            r"\(band keys\), got text"):
        conn.execute("SELECT * FROM simpg.duplicates(NULL::docs, 1, 4, %s::bit(256), '{1,2,3,4}')", [s]).fetchall()
    # an array numbered from 0: band i is still the i-th key
    conn.execute("ALTER TABLE docs DROP COLUMN sketch_b1, ADD COLUMN sketch_b1 bigint")
    conn.execute("UPDATE docs SET sketch = %s::bit(256), sketch_b1 = 7 WHERE id = 1", [s])
    got = conn.execute("SELECT id FROM simpg.duplicates(NULL::docs, 1, 0, %s::bit(256), '[0:3]={5,7,5,5}')",
                       [s]).fetchall()
    assert got == [(1,)]


def test_sqlalchemy_duplicates_bad_arguments_name_the_value() -> None:
    q, qs = 5, sketch("some text")
    with pytest.raises(SimpgError, match="max_sketch_distance must be an integer from 0 to 256, got 300"):
        duplicates_select(Doc, q, qs, max_sketch_distance=300)
    with pytest.raises(SimpgError, match="expected a sketch of 32 bytes, got b'abc'"):
        duplicates_select(Doc, q, b"abc")
    with pytest.raises(SimpgError, match="k=5 is above the radius k=4"):
        duplicates_select(Doc, q, qs, 5)
    with pytest.raises(SimpgError, match=r"column nope of table docs does not exist \(the sketches"):
        duplicates_select(Doc, q, qs, sketch_column="nope")
    with pytest.raises(SimpgError, match=r"column sketch_b9 of table docs does not exist \(band keys, bigint\)"):
        duplicates_select(Doc, q, qs, band_keys=[1], band_columns=["sketch_b9"])
    with pytest.raises(SimpgError, match=r"expected 4 band keys \(one per band column\), got 3: \[1, 2, 3\]"):
        duplicates_select(Doc, q, qs, band_keys=[1, 2, 3])
    with pytest.raises(SimpgError, match="expected a signed 64-bit band key, got 9223372036854775808"):
        duplicates_select(Doc, q, qs, band_keys=[1, 2, 3, 1 << 63])
    with pytest.raises(SimpgError, match=r"expected 64-bit fingerprint in \[0, 2\*\*64\), got -1"):
        duplicates_select(Doc, -1, qs)


def test_sql_and_sqlalchemy_duplicates_read_the_indexes_never_a_seq_scan(conn: psycopg.Connection, db: object) -> None:
    """Through the function (its prepared statement's generic plan) and SQLAlchemy's statement:
    the prefix and band B-trees in a BitmapOr, on a table where a scan would be cheap."""
    conn.execute("CREATE TABLE docs (id bigserial PRIMARY KEY, simhash bigint, note text, sketch bit(256), "
                 "sketch_b0 bigint, sketch_b1 bigint, sketch_b2 bigint, sketch_b3 bigint)")
    conn.execute("INSERT INTO docs (simhash, sketch, sketch_b0, sketch_b1, sketch_b2, sketch_b3) "
                 "SELECT (random() * 2^62)::bigint, NULL, g, g + 1, g + 2, g + 3 FROM generate_series(1, 20000) g")
    for col in BAND_COLUMNS:
        conn.execute(f"CREATE INDEX docs_{col}_idx ON docs ({col})")
    SimHashColumn(conn, "docs", "simhash").create(LAYOUT.k, LAYOUT.levels[0])
    conn.execute("ANALYZE docs")
    conn.execute("LOAD 'auto_explain'")
    conn.execute("SET auto_explain.log_min_duration = 0")
    conn.execute("SET auto_explain.log_nested_statements = on")
    conn.execute("SET client_min_messages = log")
    conn.execute("SET auto_explain.log_level = notice")
    notices: list[str] = []
    conn.add_notice_handler(lambda diag: notices.append(diag.message_primary or ""))
    s = to_sql(sketch("some text"))
    for keys in ("{7,8,9,10}", None):
        for _ in range(2):  # the second call runs the statement prepared by the first
            notices.clear()
            conn.execute("SELECT * FROM simpg.duplicates(NULL::docs, 12345, 4, %s::bit(256), %s)", [s, keys]).fetchall()
            plan = "\n".join(n for n in notices if "Bitmap" in n)
            assert "Seq Scan on docs" not in "\n".join(notices) and plan.count("BitmapOr") == 1, notices
            assert plan.count("Bitmap Index Scan on docs_simhash_p") == 15, plan
            assert all((f"Bitmap Index Scan on docs_{col}_idx" in plan) == (keys is not None)
                       for col in BAND_COLUMNS), plan
    # SQLAlchemy's statement, as PostgreSQL runs it with its parameters
    engine = create_engine(url_from_dsn(db.dsn))  # type: ignore[attr-defined]
    try:
        with engine.connect() as sa:
            raw = sa.connection.dbapi_connection
            assert isinstance(raw, psycopg.Connection)
            for setting in ("LOAD 'auto_explain'", "SET auto_explain.log_min_duration = 0",
                            "SET client_min_messages = log", "SET auto_explain.log_level = notice"):
                raw.execute(setting)
            notices.clear()
            raw.add_notice_handler(lambda diag: notices.append(diag.message_primary or ""))
            assert sa.execute(duplicates_select(Doc, 12345, sketch("some text"), band_keys=[7, 8, 9, 10])).all() == []
    finally:
        engine.dispose()
    assert "Seq Scan on docs" not in "\n".join(notices), notices
    plan = "\n".join(n for n in notices if "Bitmap" in n)  # not the plans of layout_is's catalog reads
    assert "BitmapOr" in plan, plan  # within()'s own BitmapOr is one arm of the bands' BitmapOr
    assert plan.count("Bitmap Index Scan on docs_simhash_p") == 15, plan
    for col in BAND_COLUMNS:
        assert f"Bitmap Index Scan on docs_{col}_idx" in plan, plan


async def test_sqlalchemy_duplicates_async_equal_duplicates(db: object) -> None:
    dsn = db.dsn  # type: ignore[attr-defined]
    with psycopg.connect(dsn, autocommit=True) as conn:
        index, rows, sketches, queries = setup(conn, 57)
        stored: list[bytes | None] = list(sketches)
        _, query_bands = add_bands(conn, rows, stored, queries, 57)
        want = [[d.id for d in index.duplicates(q, qs, band_keys=qb)]
                for (q, qs), qb in zip(queries, query_bands, strict=True)]
    engine = create_async_engine(url_from_dsn(dsn, async_=True))
    try:
        async with AsyncSession(engine) as session:
            got = [[d.id for d in await duplicates_async(session, Doc, q, qs, band_keys=qb)]
                   for (q, qs), qb in zip(queries, query_bands, strict=True)]
    finally:
        await engine.dispose()
    assert got == want and sum(map(len, want)) > 20
