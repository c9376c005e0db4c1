"""Names full of SQL and Python syntax through every command and API that takes one (issue 27, class 6).

Schema, table and columns are named with braces (``{hi}``, which ``str.format`` reads),
``%s``, ``%(x)s`` and ``%%`` (which psycopg's placeholders and SQLAlchemy's percent
doubling read), double and single quotes, dots (which a split on ``.`` reads), spaces,
upper case and non-ASCII. Next to them stand look-alike tables and columns with the
names a wrong quoting would reach (the same table in ``public``, ``%%`` collapsed to
``%``, the column with one ``%``), holding other rows: every check compares the answer
with brute force over the right rows, so reading a look-alike fails it, not only an error.
"""

from __future__ import annotations

import asyncio
import json
import random
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql

from simpg import bits, shards
from simpg.cli import main
from simpg.exc import NearDuplicate
from simpg.fingerprint import MAX_SKETCH_DISTANCE, fingerprint, sketch, sketch_and_bands
from simpg.psycopg import AsyncSimHashColumn, SimHashColumn
from simpg.sqlnames import quoted_name
from tests.oracles import brute_decision, brute_duplicates, brute_near, brute_pairs, components

SCHEMA = "Sch{e}.%s \"q\" 'x' 表"
TABLE = "Tab{le}.%(x)s \"q\" 'x' 表 %%"
KEY = 'Id{x}.%s "q" 键'
TEXT = "Te{xt}.%s 'x' 文"
FP = "F{p}.%% \"q\" 'x' 指"
SKETCH = 'Sk{e}.%s "q"'
QUALIFIED = quoted_name(SCHEMA, TABLE)
#: what a wrong quoting would read instead: the table on the search path, ``%%`` read as ``%``
DECOYS = (quoted_name("public", TABLE), quoted_name(SCHEMA, TABLE.replace("%%", "%")))
DECOY_FP = FP.replace("%%", "%")  # a column of other fingerprints in the table itself
WORDS = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi".split()
K = 3


def texts(seed: int, n: int = 90) -> list[str]:
    """Texts with near-duplicates among them: every third one repeats an earlier one with one word changed."""
    rng = random.Random(seed)
    out: list[str] = []
    for i in range(n):
        if i % 3 == 2:
            words = out[i - 2].split()
            words[rng.randrange(len(words))] = rng.choice(WORDS)
            out.append(" ".join(words))
        else:
            out.append(" ".join(rng.choice(WORDS) for _ in range(30)) + f" {seed}-{i}")
    return out


BANDED = [f"{SKETCH}_b{i}" for i in range(4)]  # the sketch column's band keys, odd names too


def make_table(conn: psycopg.Connection[Any], name: str, seed: int) -> dict[int, str]:
    """``name`` with keys, texts, fingerprints, sketches and band keys; the look-alike fingerprint column: others."""
    conn.execute(sql.SQL("CREATE TABLE {} ({} bigint PRIMARY KEY, {} text, {} bigint, {} bit(256), {} bigint, "
                         "{} bigint, {} bigint, {} bigint, {} bigint)").format(
        sql.SQL(name), sql.Identifier(KEY), sql.Identifier(TEXT), sql.Identifier(FP), sql.Identifier(SKETCH),
        sql.Identifier(DECOY_FP), *map(sql.Identifier, BANDED)))
    rows = dict(enumerate(texts(seed), start=seed * 1000))
    rng = random.Random(seed)
    with conn.cursor() as cur, cur.copy(sql.SQL("COPY {} ({}, {}, {}, {}, {}, {}, {}, {}, {}) FROM STDIN").format(
            sql.SQL(name), *map(sql.Identifier, (KEY, TEXT, FP, SKETCH, DECOY_FP, *BANDED)))) as copy:
        for key, text in rows.items():
            sk, keys = sketch_and_bands(text)
            copy.write_row((key, text, bits.to_db(fingerprint(text)), "".join(f"{b:08b}" for b in sk),
                            bits.to_db(rng.getrandbits(64)), *(keys or [None] * 4)))
    return rows


@pytest.fixture
def named(db: Any) -> dict[int, str]:
    """The table of odd names (keys to texts) and its look-alikes, each with a simpg index on ``FP``."""
    conn = db.conn
    conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(SCHEMA)))
    rows = make_table(conn, QUALIFIED, 1)
    for seed, decoy in enumerate(DECOYS, start=2):
        make_table(conn, decoy, seed)
        conn.execute("SELECT simpg.create_index(%s::regclass, %s, %s, %s)", [decoy, FP, K, 4])
    return rows


def fingerprints(rows: dict[int, str]) -> dict[int, int]:
    return {key: fingerprint(text) for key, text in rows.items()}


def documents(rows: dict[int, str]) -> dict[int, tuple[int, bytes, tuple[int, ...] | None]]:
    """The rows as the sketch-confirmed oracles take them: fingerprint, sketch, band keys."""
    return {key: (fingerprint(text), *sketch_and_bands(text)) for key, text in rows.items()}


def pair_rows(rows: dict[int, str], confirm: bool = False, bands: bool = True) -> list[tuple[int, int, int]]:
    """Adapter: the oracle's pairs of the texts within K (with ``confirm``, oracles.brute_decision)
    as the sorted (a, b, distance) rows the lookups return."""
    if not confirm:
        return sorted((a, b, d) for (a, b), d in brute_pairs(fingerprints(rows), K).items())
    decided = brute_decision(documents(rows), K, MAX_SKETCH_DISTANCE, bands)
    return sorted((a, b, d) for (a, b), (d, _) in decided.items())


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


# -- psycopg ----------------------------------------------------------------------------


def test_psycopg_api(db: Any, named: dict[int, str]) -> None:
    conn = db.conn
    conn.execute("SET search_path = public")  # where a look-alike of the table is
    index = SimHashColumn(conn, QUALIFIED, FP)
    assert index.create(k=K, blocks=5).name == "k3:5"
    queries = [fingerprint(text) for text in list(named.values())[:6]]
    for q in queries:
        assert [(n.id, n.distance) for n in index.near(q)] == brute_near(fingerprints(named), q, K)
    assert [[(n.id, n.distance) for n in found] for found in index.near_many(queries)] == [
        brute_near(fingerprints(named), q, K) for q in queries]
    expected = pair_rows(named)
    assert len(expected) >= 15
    assert sorted(index.pairs()) == expected
    clusters = components(named, ((a, b) for a, b, _ in expected))
    assert sorted(sorted(c) for c in index.clusters(method="components")) == sorted(g for g in clusters if len(g) > 1)
    # confirmed by sketches: simpg.pairs in the database, named parameters next to the names
    confirmed = sorted(tuple(p) for p in index.pairs(sketch_column=SKETCH))  # band keys too, by default
    assert confirmed == pair_rows(named, confirm=True)
    assert sorted(tuple(p) for p in index.pairs(sketch_column=SKETCH, bands=False)) == pair_rows(
        named, confirm=True, bands=False)
    ids, _ = index.fetch_all()
    assert sorted(ids.tolist()) == sorted(named)
    assert index.stats().rows == len(named)
    assert index.check() == []
    conn.execute(sql.SQL("DROP INDEX {}").format(sql.Identifier(SCHEMA, index.info.index_names[0])))
    assert [p.problem for p in index.check()] == ["missing b-tree"]
    assert len(index.repair()) == 1 and index.check() == []
    index.drop()
    assert conn.execute("SELECT count(*) FROM simpg.indexes").fetchone() == (len(DECOYS),)


def test_guard_and_insert_or_get(db: Any) -> None:
    """The guard's trigger, its lock rows and insert_or_get on odd names, beside a look-alike table."""
    conn = db.conn
    conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(SCHEMA)))
    docs = texts(7, 30)[0::3]  # ten unrelated texts
    for name in (QUALIFIED, *DECOYS):
        conn.execute(sql.SQL("CREATE TABLE {} ({} bigint PRIMARY KEY, {} bigint)").format(
            sql.SQL(name), sql.Identifier(KEY), sql.Identifier(FP)))
    index = SimHashColumn(conn, QUALIFIED, FP, key_column=KEY)
    index.create(k=K, blocks=5)
    guard = index.create_guard()
    assert [(g.name, g.column, g.key_column) for g in index.guards()] == [(guard, FP, KEY)]
    for key, text in enumerate(docs):
        assert index.insert_or_get({KEY: key, FP: fingerprint(text)}) == (True, str(key), None)
    # a copy of a stored text is refused, naming the stored row, and nothing is stored
    assert index.insert_or_get({KEY: 100, FP: fingerprint(docs[3])}) == (False, "3", 0)
    with pytest.raises(NearDuplicate) as err:
        index.add([fingerprint(docs[4])], columns={KEY: [101]})
    assert err.value.key == "4"
    assert conn.execute(sql.SQL("SELECT count(*) FROM {}").format(sql.SQL(QUALIFIED))).fetchone() == (len(docs),)
    # the look-alikes are other tables: the same copies go in there unguarded
    for decoy in DECOYS:
        copy = sql.Literal(bits.to_db(fingerprint(docs[3])))
        conn.execute(sql.SQL("INSERT INTO {} VALUES (1, {}), (2, {})").format(sql.SQL(decoy), copy, copy))
    index.drop_guard()
    assert index.guards() == []


def test_psycopg_async_api(db: Any, named: dict[int, str]) -> None:
    async def main_() -> None:
        async with await psycopg.AsyncConnection.connect(db.dsn, autocommit=True) as aconn:
            await aconn.execute("SET search_path = public")
            index = AsyncSimHashColumn(aconn, QUALIFIED, FP)
            await index.create(k=K, blocks=4)
            queries = [fingerprint(text) for text in list(named.values())[:4]]
            for q in queries:
                assert [(n.id, n.distance) for n in await index.near(q)] == brute_near(fingerprints(named), q, K)
            found = await index.near_many(queries)
            assert [[(n.id, n.distance) for n in f] for f in found] == [
                brute_near(fingerprints(named), q, K) for q in queries]
            assert sorted([tuple(p) async for p in index.pairs()]) == pair_rows(named)
            assert await index.check() == []
            confirmed = sorted([tuple(p) async for p in index.pairs(sketch_column=SKETCH)])
            assert confirmed == pair_rows(named, confirm=True)

    asyncio.run(main_())


# -- the command line ----------------------------------------------------------------------


def test_cli_near_check_and_repair(db: Any, named: dict[int, str], capsys: pytest.CaptureFixture[str]) -> None:
    conn = db.conn
    SimHashColumn(conn, QUALIFIED, FP).create(k=K, blocks=5)
    queries = [fingerprint(text) for text in list(named.values())[:3]]
    code, out, err = run(capsys, "near", *map(str, queries), "--dsn", db.dsn, "--table", QUALIFIED,
                         "--column", FP, "--json")
    assert code == 0, err
    assert [[(n["id"], n["distance"]) for n in r["neighbors"]] for r in json.loads(out)] == [
        brute_near(fingerprints(named), q, K) for q in queries]
    # --text: confirmed by the sketch column, through simpg.duplicates's statement, with the band keys
    text = list(named.values())[0]
    code, out, err = run(capsys, "near", "--text", text, "--dsn", db.dsn, "--table", QUALIFIED, "--column", FP,
                         "--sketch-column", SKETCH, "--json")
    assert code == 0, err
    expected = [(d.id, d.distance) for d in brute_duplicates(
        documents(named), fingerprint(text), sketch(text), K, MAX_SKETCH_DISTANCE, sketch_and_bands(text)[1])]
    assert sorted((n["id"], n["distance"]) for n in json.loads(out)[0]["neighbors"]) == sorted(expected)
    code, out, err = run(capsys, "check", "--dsn", db.dsn, "--table", QUALIFIED, "--column", FP, "--json")
    assert code == 0, err
    report = json.loads(out)
    assert report["problems"] == [] and [i["column"] for i in report["indexes"]] == [FP]
    name = report["indexes"][0]["index_names"][1]
    conn.execute(sql.SQL("DROP INDEX {}").format(sql.Identifier(SCHEMA, name)))
    code, out, _ = run(capsys, "check", "--dsn", db.dsn, "--table", QUALIFIED, "--column", FP)
    assert code == 1 and "missing b-tree" in out
    code, out, err = run(capsys, "repair", "--dsn", db.dsn, "--table", QUALIFIED, "--column", FP, "--json")
    assert code == 0, err
    code, _, err = run(capsys, "check", "--dsn", db.dsn, "--table", QUALIFIED, "--column", FP, "--verify-rows")
    assert code == 0, err
    # the look-alikes were left alone
    for decoy in DECOYS:
        assert conn.execute("SELECT count(*) FROM simpg.check(%s::regclass, %s, true)", [decoy, FP]).fetchone() == (0,)


FP2 = 'Fp2{x}.%s "q" 新'
SKETCH2 = "Sk2{y}.%% 新"


def stored(conn: psycopg.Connection[Any], column: str) -> dict[int, Any]:
    return dict(conn.execute(sql.SQL("SELECT {}, {} FROM {}").format(
        sql.Identifier(KEY), sql.Identifier(column), sql.SQL(QUALIFIED))).fetchall())


def test_cli_backfill(db: Any, named: dict[int, str], capsys: pytest.CaptureFixture[str]) -> None:
    conn = db.conn
    code, out, err = run(capsys, "backfill", "--dsn", db.dsn, "--table", QUALIFIED, "--text-column", TEXT,
                         "--column", FP2, "--sketch-column", SKETCH2, "--bands", "--batch-size", "40",
                         "-k", "3", "--blocks", "4", "--json")
    assert code == 0, err
    result = json.loads(out)
    assert (result["rows"], result["index"]["layout"]) == (len(named), "k3:4")
    assert stored(conn, FP2) == {key: bits.to_db(fingerprint(text)) for key, text in named.items()}
    assert stored(conn, SKETCH2) == {key: "".join(f"{b:08b}" for b in sketch(text)) for key, text in named.items()}
    index = SimHashColumn(conn, QUALIFIED, FP2)
    q = fingerprint(named[1000])
    assert [(n.id, n.distance) for n in index.near(q)] == brute_near(fingerprints(named), q, K)
    assert index.check() == []
    # a second run resumes: nothing left to fill or build
    code, out, err = run(capsys, "backfill", "--dsn", db.dsn, "--table", QUALIFIED, "--text-column", TEXT,
                         "--column", FP2, "-k", "3", "--blocks", "4", "--json")
    assert code == 0, err
    assert json.loads(out)["rows"] == 0
    # the look-alikes got no column
    for decoy in DECOYS:
        assert conn.execute("SELECT count(*) FROM pg_attribute WHERE attrelid = %s::regclass AND attname = %s",
                            [decoy, FP2]).fetchone() == (0,)


# -- SQLAlchemy and Alembic ------------------------------------------------------------------


@contextmanager
def engine_of(dsn: str) -> Iterator[Any]:
    from sqlalchemy import create_engine

    from simpg.sqlalchemy import url_from_dsn

    engine = create_engine(url_from_dsn(dsn))
    try:
        yield engine
    finally:
        engine.dispose()


def test_sqlalchemy_types_and_orm_lookups(db: Any, named: dict[int, str]) -> None:
    from sqlalchemy import BigInteger, Column, Table, Text, select
    from sqlalchemy.orm import DeclarativeBase, Session

    from simpg.sqlalchemy import SimHash, Sketch, near, simhash_index

    SimHashColumn(db.conn, QUALIFIED, FP).create(k=K, blocks=5)

    class Base(DeclarativeBase):
        pass

    table = Table(TABLE, Base.metadata, Column(KEY, BigInteger, primary_key=True, key="key"),
                  Column(TEXT, Text, key="text"), Column(FP, SimHash, key="fp"), Column(SKETCH, Sketch, key="sk"),
                  schema=SCHEMA)
    spec = simhash_index(table.c.fp, k=K, blocks=5)

    class Row(Base):
        __table__ = table

    queries = [fingerprint(text) for text in list(named.values())[:4]]
    with engine_of(db.dsn) as engine, engine.connect() as conn:
        conn.exec_driver_sql("SET search_path = public")
        for q in queries:
            got = conn.execute(select(table.c.key, table.c.fp.distance(q).label("d"))
                               .where(table.c.fp.within(q, K)).order_by("d", table.c.key)).all()
            assert [tuple(r) for r in got] == brute_near(fingerprints(named), q, K)
        assert spec.check(conn) == []
        assert spec.repair(conn) == []
        with Session(conn) as session:
            for q in queries:
                found = near(session, Row, q)
                assert [(r.key, bits.hamming(r.fp, q)) for r in found] == brute_near(fingerprints(named), q, K)
                assert all(r.text == named[r.key] for r in found)


def test_alembic_ops(db: Any, named: dict[int, str]) -> None:
    from alembic.migration import MigrationContext
    from alembic.operations import Operations

    import simpg.alembic  # noqa: F401  (registers the operations)

    q = fingerprint(named[1003])
    for concurrently in (False, True):
        with engine_of(db.dsn) as engine, engine.connect() as conn:
            context = MigrationContext.configure(conn)
            with context.begin_transaction():
                op = Operations(context)
                op.create_simhash_index(TABLE, FP, schema=SCHEMA, k=K, blocks=4,  # type: ignore[attr-defined]
                                        concurrently=concurrently)
        index = SimHashColumn(db.conn, QUALIFIED, FP)
        assert index.layout.name == "k3:4"
        assert [(n.id, n.distance) for n in index.near(q)] == brute_near(fingerprints(named), q, K)
        assert index.check() == []
        with engine_of(db.dsn) as engine, engine.connect() as conn:
            context = MigrationContext.configure(conn)
            with context.begin_transaction():
                Operations(context).drop_simhash_index(  # type: ignore[attr-defined]
                    TABLE, FP, schema=SCHEMA, concurrently=concurrently)
        assert db.conn.execute("SELECT count(*) FROM simpg.indexes WHERE indexed_table = %s::regclass",
                               [QUALIFIED]).fetchone() == (0,)
    # the look-alikes kept theirs
    for decoy in DECOYS:
        assert db.conn.execute("SELECT count(*) FROM simpg.check(%s::regclass, %s, true)",
                               [decoy, FP]).fetchone() == (0,)


def test_alembic_offline_script(db: Any, named: dict[int, str]) -> None:
    """``alembic upgrade --sql`` (paramstyle named, as Alembic's env.py template has it), run as psql would."""
    import io

    from alembic.migration import MigrationContext
    from alembic.operations import Operations

    import simpg.alembic  # noqa: F401  (registers the operations)

    buffer = io.StringIO()
    context = MigrationContext.configure(dialect_name="postgresql", dialect_opts={"paramstyle": "named"},
                                         opts={"as_sql": True, "literal_binds": True, "output_buffer": buffer})
    Operations(context).create_simhash_index(TABLE, FP, schema=SCHEMA, k=K, blocks=4,  # type: ignore[attr-defined]
                                             concurrently=True)
    statements = [s.strip() for s in buffer.getvalue().split(";\n\n") if s.strip()]
    for statement in statements[1:-1]:  # between COMMIT and BEGIN
        db.conn.execute(statement)
    index = SimHashColumn(db.conn, QUALIFIED, FP)
    q = fingerprint(named[1006])
    assert [(n.id, n.distance) for n in index.near(q)] == brute_near(fingerprints(named), q, K)
    assert index.check() == []


def test_sqlalchemy_create_all(db: Any) -> None:
    """A model with odd names: create_all makes the table, its prefix columns and B-trees, and registers them."""
    from sqlalchemy import BigInteger, Column, MetaData, Table, insert, select

    from simpg.sqlalchemy import SimHash, simhash_index

    db.conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(SCHEMA)))
    table = Table(TABLE, MetaData(), Column(KEY, BigInteger, primary_key=True, key="key"),
                  Column(FP, SimHash, key="fp"), schema=SCHEMA)
    simhash_index(table.c.fp, k=K, blocks=5)
    rows = texts(7)
    fps = {i: fingerprint(t) for i, t in enumerate(rows)}
    with engine_of(db.dsn) as engine:
        table.metadata.create_all(engine)
        with engine.begin() as conn:
            conn.execute(insert(table), [{"key": i, "fp": fp} for i, fp in fps.items()])
            q = fps[3]
            got = conn.execute(select(table.c.key).where(table.c.fp.within(q, K)).order_by(table.c.key)).scalars()
            assert list(got) == sorted(n.id for n in brute_near(fps, q, K))
    index = SimHashColumn(db.conn, QUALIFIED, FP)
    assert index.layout.name == "k3:5" and index.check() == []
    assert [(n.id, n.distance) for n in index.near(q)] == brute_near(fps, q, K)


# -- Spark -------------------------------------------------------------------------------------
# few tests: a Spark job takes seconds


def test_spark_table_in_and_out(spark: Any, db: Any, named: dict[int, str],
                                capsys: pytest.CaptureFixture[str]) -> None:
    """``simpg spark find-all --table --output-table`` with odd names, then read_table on issue 27's ``t{hi}``."""
    from simpg.spark import io

    conn = db.conn
    out_table = quoted_name(SCHEMA, 'Pairs{hi}.%s "q" 表')
    code, out, err = run(capsys, "spark", "find-all", "-d", "3", "--dsn", db.dsn, "--table", QUALIFIED,
                         "--column", FP, "--key", KEY, "--output-table", out_table, "--partitions", "2")
    assert code == 0, err
    assert json.loads(out)["rows"] == len(named)
    got = conn.execute(sql.SQL("SELECT id_a, id_b, distance FROM {} ORDER BY 1, 2").format(
        sql.SQL(out_table))).fetchall()
    assert got == pair_rows(named)
    # issue 27's case: the page bounds were put in with str.format, so "t{hi}" read "t4294967295"
    conn.execute('CREATE TABLE "t{hi}" (id bigint PRIMARY KEY, simhash bigint)')
    conn.execute('CREATE TABLE "t4294967295" (id bigint PRIMARY KEY, simhash bigint)')
    conn.execute('INSERT INTO "t{hi}" SELECT g, g * 7 FROM generate_series(1, 50) AS g')
    conn.execute('INSERT INTO "t4294967295" SELECT g, g FROM generate_series(100, 120) AS g')
    with io.read_table(spark, db.dsn, '"t{hi}"', "simhash", "id", partitions=2) as df:
        assert sorted((r["id"], r["fp"]) for r in df.collect()) == [(g, g * 7) for g in range(1, 51)]


def test_spark_files_with_odd_column_names(spark: Any, tmp_path: Path) -> None:
    """read_file with column names that Spark would read as a field path (dots) or quoting (backticks)."""
    from simpg.spark import io

    fp_name, id_name = "f.p `x` {hi} %s", "i.d `y`"
    rows = [(i * 5, random.Random(i).getrandbits(63)) for i in range(1, 30)]
    frame = spark.createDataFrame([(fp, i, -1) for i, fp in rows], f"`{fp_name.replace('`', '``')}` long, "
                                  f"`{id_name.replace('`', '``')}` string, `f` long")
    frame.write.parquet(str(tmp_path / "in.parquet"))
    df = io.read_file(spark, str(tmp_path / "in.parquet"), fp_column=fp_name, key_column=id_name)
    assert sorted((r["id"], r["fp"]) for r in df.collect()) == sorted(rows)


# -- shards -----------------------------------------------------------------------------


@pytest.mark.parametrize("distribution", ["hash", "range"])
def test_shards(db: Any, distribution: str) -> None:
    """simpg.shards on odd names: the table, its columns, the foreign server and the shard's
    database; lookups through postgres_fdw (loopback to a second database) equal brute force."""
    conn = db.conn
    shard_db = f"{db.name}_s"
    server = "s{1}.%s \"q\" 'x' 服"
    with psycopg.connect(db.pg.server.dsn(), autocommit=True) as root:
        root.execute(sql.SQL("CREATE DATABASE {} TEMPLATE simpg_tmpl").format(sql.Identifier(shard_db)))
    with psycopg.connect(db.pg.server.dsn(shard_db), autocommit=True) as shard:  # the shard's table goes there
        shard.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(SCHEMA)))
    try:
        conn.execute("CREATE EXTENSION IF NOT EXISTS postgres_fdw")
        conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(SCHEMA)))
        partitioning = sql.SQL(" PARTITION BY HASH ({})").format(sql.Identifier(KEY)) if distribution == "hash" \
            else sql.SQL("")
        conn.execute(sql.SQL("CREATE TABLE {} ({} bigint {}, {} bigint){}").format(
            sql.SQL(QUALIFIED), sql.Identifier(KEY), sql.SQL("NOT NULL" if distribution == "hash" else "PRIMARY KEY"),
            sql.Identifier(FP), partitioning))
        shard_list = [shards.Shard(server, db.pg.server.dsn(shard_db))]
        assert shards.create_shards(conn, QUALIFIED, FP, shard_list, k=K, blocks=5, distribution=distribution) == []
        docs = dict(enumerate(texts(11, 60)))
        with conn.cursor() as cur, cur.copy(sql.SQL("COPY {} ({}, {}) FROM STDIN").format(
                sql.SQL(QUALIFIED), sql.Identifier(KEY), sql.Identifier(FP))) as copy:
            for key, text in docs.items():
                copy.write_row((key, bits.to_db(fingerprint(text))))
        index = shards.ShardedColumn(conn, QUALIFIED, FP, key_column=KEY if distribution == "hash" else None)
        queries = [fingerprint(text) for text in list(docs.values())[:8]]
        for q in queries:
            assert [(n.id, n.distance) for n in index.near(q)] == brute_near(fingerprints(docs), q, K)
        assert [[(n.id, n.distance) for n in found] for found in index.near_many(queries)] == [
            brute_near(fingerprints(docs), q, K) for q in queries]
    finally:
        conn.execute("DROP EXTENSION IF EXISTS postgres_fdw CASCADE")
        with psycopg.connect(db.pg.server.dsn(), autocommit=True) as root:
            root.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(shard_db)))
