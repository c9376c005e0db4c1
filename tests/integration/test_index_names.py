"""Index names of two (table, column) pairs that spell alike (issue 27, class 7).

Table ``a_b`` with column ``c`` and table ``a`` with column ``b_c`` both name their
B-trees ``a_b_c_p<t>_idx``. PostgreSQL keeps index names in one namespace per schema, so
the second index used to fail; simpg now numbers the second as PostgreSQL numbers the
names of unnamed indexes, and the SQLAlchemy declaration refuses the clash by name and
takes ``name=``.
"""

from __future__ import annotations

import random

import pytest
from sqlalchemy import BigInteger, Column, Integer, MetaData, Table, create_engine

from simpg import bits
from simpg.exc import SimpgError
from simpg.sqlalchemy import simhash_index


def fill(conn, table: str, column: str, rows: dict[int, int]) -> None:
    conn.execute(f'CREATE TABLE {table} (id bigint PRIMARY KEY, "{column}" bigint)')
    with conn.cursor().copy(f'COPY {table} (id, "{column}") FROM STDIN') as copy:
        for key, fp in rows.items():
            copy.write_row((key, bits.to_db(fp)))


def near(conn, table: str, column: str, probe: int, k: int) -> set[int]:
    return {r[0] for r in conn.execute(f"SELECT id FROM simpg.near(NULL::{table}, %s, %s, %s)",
                                        [bits.to_db(probe), k, column])}


def test_two_tables_whose_names_spell_alike_both_get_an_index(conn):
    rng = random.Random(3)
    first = {i: rng.getrandbits(64) for i in range(1, 201)}
    second = {i: fp ^ (1 << (i % 64)) for i, fp in first.items()}  # other rows, one bit apart
    fill(conn, "a_b", "c", first)
    fill(conn, "a", "b_c", second)
    conn.execute("SELECT simpg.create_index('a_b', 'c', 3, 5)")
    conn.execute("SELECT simpg.create_index('a', 'b_c', 3, 5)")
    names = dict(conn.execute("SELECT indexed_table::text, index_names FROM simpg.indexes").fetchall())
    assert names["a_b"][0] == "a_b_c_p0_idx" and names["a"][0] == "a_b_c_p0_idx1"
    assert not set(names["a_b"]) & set(names["a"])
    for table, column, rows in (("a_b", "c", first), ("a", "b_c", second)):
        assert conn.execute("SELECT count(*) FROM simpg.check(%s)", [table]).fetchone() == (0,)
        for probe in list(rows.values())[:20]:
            assert near(conn, table, column, probe, 3) == {i for i, fp in rows.items() if bits.hamming(fp, probe) <= 3}
    # a B-tree dropped by hand is rebuilt by repair under a free name, and the index answers again
    conn.execute(f"DROP INDEX {names['a'][2]}")
    assert conn.execute("SELECT count(*) FROM simpg.check('a')").fetchone() == (1,)
    conn.execute("SELECT simpg.repair('a')")
    assert conn.execute("SELECT count(*) FROM simpg.check('a')").fetchone() == (0,)
    conn.execute("SELECT simpg.drop_index('a_b', 'c')")
    conn.execute("SELECT simpg.drop_index('a', 'b_c')")
    assert conn.execute("SELECT count(*) FROM simpg.indexes").fetchone() == (0,)


def test_partitions_whose_names_spell_alike_get_their_b_trees(conn):
    conn.execute("CREATE TABLE p (id bigint, fp bigint) PARTITION BY RANGE (id)")
    conn.execute("CREATE TABLE p_1 PARTITION OF p FOR VALUES FROM (0) TO (100)")
    conn.execute("CREATE TABLE p_1_fp_p0_idx (x integer)")  # a table holding the first name
    conn.execute("SELECT simpg.create_index('p', 'fp', 3, 5)")
    conn.execute("CREATE TABLE p_2 PARTITION OF p FOR VALUES FROM (100) TO (200)")  # created later
    conn.execute("INSERT INTO p SELECT i, i * 7919 FROM generate_series(0, 199) AS i")
    assert conn.execute("SELECT count(*) FROM simpg.check('p')").fetchone() == (0,)
    assert conn.execute("SELECT id FROM simpg.near(NULL::p, 7919 * 150, 0)").fetchall() == [(150,)]


def test_the_sqlalchemy_declaration_refuses_names_that_clash_and_takes_a_name(pg, db):
    metadata = MetaData()
    first = Table("a_b", metadata, Column("id", Integer, primary_key=True), Column("c", BigInteger))
    second = Table("a", metadata, Column("id", Integer, primary_key=True), Column("b_c", BigInteger))
    simhash_index(first.c.c, k=3, blocks=5)
    with pytest.raises(SimpgError, match=r"index name a_b_c_p0_idx of a\.b_c is taken by an index of a_b; "
                                         r"pass simhash_index\(\.\.\., name=\.\.\.\)"):
        simhash_index(second.c.b_c, k=3, blocks=5)
    spec = simhash_index(second.c.b_c, k=3, blocks=5, name="a_bc")
    assert spec.index_names[0] == "a_bc_p0_idx"
    engine = create_engine("postgresql+psycopg://", creator=lambda: __import__("psycopg").connect(db.dsn))
    metadata.create_all(engine)
    names = dict(db.conn.execute("SELECT indexed_table::text, index_names FROM simpg.indexes").fetchall())
    assert names == {"a_b": [f"a_b_c_p{t}_idx" for t in range(10)], "a": [f"a_bc_p{t}_idx" for t in range(10)]}
    engine.dispose()
