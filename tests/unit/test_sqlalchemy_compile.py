"""Compiled SQL of simpg.sqlalchemy, without a database (GeoAlchemy2 eq_sql style)."""

from __future__ import annotations

import pytest
from sqlalchemy import BigInteger, Column, MetaData, String, Table, select
from sqlalchemy.dialects import postgresql
from sqlalchemy.orm import DeclarativeBase, Mapped, aliased, mapped_column
from sqlalchemy.schema import CreateIndex, CreateTable

from simpg import bits
from simpg.exc import InvalidFingerprint, SimpgError
from simpg.sqlalchemy import (
    SimHash,
    Sketch,
    hamming,
    index_for,
    object_name,
    permute,
    simhash_index,
    sketch_distance,
    url_from_dsn,
)

DIALECT = postgresql.psycopg.dialect()

# k=3 with 5 blocks of 13,13,13,13,12 bits: table t's prefix is the two blocks of the
# t-th pair in lexicographic order; pairs with the 12-bit block (4) have 25 bits.
PAIRS = [(0, 1), (0, 2), (0, 3), (0, 4), (1, 2), (1, 3), (1, 4), (2, 3), (2, 4), (3, 4)]
PREFIX_BITS = [25 if 4 in pair else 26 for pair in PAIRS]


class Base(DeclarativeBase):
    pass


class Article(Base):
    __tablename__ = "articles"
    id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    title: Mapped[str] = mapped_column(String)
    simhash: Mapped[int] = mapped_column(SimHash)


SPEC = simhash_index(Article.simhash, k=3, blocks=5)
# every within() carries it: the model's layout, checked against simpg.indexes
GUARD = "simpg.layout_is('articles'::regclass, 'simhash'::name, 3, '{5}'::integer[])"


def sql(stmt, literal=False) -> str:
    kwargs = {"literal_binds": True} if literal else {}
    return " ".join(str(stmt.compile(dialect=DIALECT, compile_kwargs=kwargs)).split())


def test_function_factories_are_schema_qualified():
    t = Article.__table__
    assert (
        sql(select(hamming(t.c.simhash, t.c.id)))
        == "SELECT simpg.hamming(articles.simhash, articles.id) AS hamming_1 FROM articles"
    )
    assert (
        sql(select(permute(t.c.simhash, 3, (4, 4), 7)))
        == "SELECT simpg.permute(articles.simhash, 3, '{4,4}'::integer[], 7) AS permute_1 "
        "FROM articles"
    )


def test_sketch_distance_is_the_sql_function():
    t = Table("pages", MetaData(), Column("id", BigInteger), Column("sketch", Sketch), Column("other", Sketch))
    assert (
        sql(select(sketch_distance(t.c.sketch, t.c.other)))
        == "SELECT simpg.sketch_distance(pages.sketch, pages.other) AS sketch_distance_1 FROM pages"
    )
    assert (
        sql(select(t.c.id).where(t.c.sketch.sketch_distance(bytes(32)) <= 36))
        == "SELECT pages.id FROM pages WHERE simpg.sketch_distance(pages.sketch, %(param_1)s::BIT(256)) "
        "<= %(sketch_distance_1)s::INTEGER"
    )


def test_prefix_columns_and_indexes_are_plain_schema():
    ddl = sql(CreateTable(Article.__table__))
    for t in range(10):
        assert (
            f"simhash_p{t} BIGINT GENERATED ALWAYS AS "
            f"(simpg.permute(simhash, 3, '{{5}}'::integer[], {t})) STORED"
        ) in ddl
    assert (
        sql(CreateIndex(SPEC.indexes[9]))
        == "CREATE INDEX articles_simhash_p9_idx ON articles (simhash_p9) WITH (fillfactor = 100)"
    )
    # not mapped: ORM selects never load them
    assert "simhash_p0" not in sql(select(Article))


def test_within_compiles_to_prefix_ranges_and_hamming():
    compiled = select(Article.id).where(Article.simhash.within(0, 3)).compile(dialect=DIALECT)
    # two parameters, the range starts as one bigint[] and the fingerprint: the text is
    # the same for every fingerprint, so SQLAlchemy caches it
    lows = "(CAST(%(param_1)s::BIGINT[] AS bigint[]))"
    ranges = " OR ".join(
        f"articles.simhash_p{t} BETWEEN {lows}[{t + 1}] AND {lows}[{t + 1}] + '{2 ** (64 - p) - 1}'::bigint"
        for t, p in enumerate(PREFIX_BITS)
    )
    assert " ".join(str(compiled).split()) == (
        f"SELECT articles.id FROM articles WHERE (({ranges}) "
        f"AND simpg.hamming(articles.simhash, %(param_2)s::BIGINT) <= 3 AND {GUARD})"
    )
    # q = 0 permutes to 0: every range starts at 0
    assert compiled.params == {"param_1": [0] * len(PREFIX_BITS), "param_2": 0}


@pytest.mark.parametrize("q", [0, 2**64 - 1, 2**63, 1, 0x0123456789ABCDEF, 0xFEDCBA9876543210])
@pytest.mark.parametrize("blocks", [(5,), (4, 3)])
def test_within_sends_the_layouts_prefix_ranges(q, blocks):
    t = Table("ranges", MetaData(), Column("id", BigInteger, primary_key=True), Column("fp", SimHash))
    spec = simhash_index(t.c.fp, k=2, blocks=blocks[0], inner_blocks=blocks[1] if len(blocks) > 1 else None)
    compiled = select(t.c.id).where(t.c.fp.within(q, 2)).compile(dialect=DIALECT)
    assert compiled.params["param_1"] == [lo for lo, _ in spec.layout.prefix_ranges(q)]
    # the SimHash bind processor sends the fingerprint signed
    assert compiled._bind_processors["param_2"](q) == bits.to_db(q)
    text = " ".join(str(compiled).split())
    lows = "(CAST(%(param_1)s::BIGINT[] AS bigint[]))"
    for i in range(spec.layout.tables):
        ones = 2 ** (64 - spec.layout.prefix_bits(i)) - 1
        assert f"ranges.fp_p{i} BETWEEN {lows}[{i + 1}] AND {lows}[{i + 1}] + '{ones}'::bigint" in text
    # with literal_binds (as for EXPLAIN) the array is typed bigint[]
    literal = sql(select(t.c.id).where(t.c.fp.within(q, 2)), literal=True)
    assert f"(CAST(ARRAY[{spec.layout.prefix_ranges(q)[0][0]}, " in literal


def test_within_an_expression_uses_sql_prefix_bounds():
    other = aliased(Article)
    text = sql(select(Article.id, other.id).join(other, Article.simhash.within(other.simhash, 1)))
    assert (
        "articles.simhash_p0 BETWEEN simpg.prefix_lo(articles_1.simhash, 3::integer, '{5}'::integer[], 0::integer) "
        "AND simpg.prefix_hi(articles_1.simhash, 3::integer, '{5}'::integer[], 0::integer)"
    ) in text
    assert text.endswith(f"AND simpg.hamming(articles.simhash, articles_1.simhash) <= 1 AND {GUARD})")


def test_the_layout_guard_names_the_table_as_postgresql_reads_it():
    # constants only, so PostgreSQL checks it when it plans; names quoted where needed
    odd = Table("Odd 'name'", MetaData(schema="My Schema"), Column("id", BigInteger, primary_key=True),
                Column("fp", SimHash, nullable=False))
    spec = simhash_index(odd.c.fp, k=2, blocks=4, inner_blocks=3)
    assert sql(select(odd.c.id).where(odd.c.fp.within(1, 2))).endswith(
        "AND simpg.layout_is('\"My Schema\".\"Odd ''name''\"'::regclass, 'fp'::name, 2, '{4,3}'::integer[]))")
    assert spec.layout.levels == (4, 3)


def test_within_on_an_alias_uses_the_alias_columns():
    other = aliased(Article, name="a2")
    text = sql(select(other.id).where(other.simhash.within(5, 3)))
    assert "a2.simhash_p9 BETWEEN" in text and "articles." not in text.split("FROM")[1]


def test_distance_binds_signed():
    stmt = select(Article.id).where(Article.simhash.distance(2**63) <= 1)
    compiled = stmt.compile(dialect=DIALECT)
    assert compiled.construct_params()["param_1"] == 2**63
    # the SimHash bind processor sends the signed value
    processors = compiled._bind_processors
    assert processors["param_1"](2**63) == -(2**63)


def test_k_above_the_layout_names_both_values():
    with pytest.raises(SimpgError, match=r"k=4 is above the radius k=3 .* articles\.simhash"):
        Article.simhash.within(1, 4)
    with pytest.raises(SimpgError, match="k must be a non-negative integer, got -1"):
        Article.simhash.within(1, -1)


def test_bad_fingerprints_are_named():
    with pytest.raises(InvalidFingerprint, match="got -1"):
        Article.simhash.within(-1, 3)
    with pytest.raises(InvalidFingerprint, match=str(2**64)):
        Article.simhash.distance(2**64)


def test_within_needs_an_index():
    t = Table("plain", MetaData(), Column("fp", SimHash()))
    with pytest.raises(SimpgError, match="plain.fp has no simhash index"):
        t.c.fp.within(1, 1)


def test_second_declaration_and_bad_type_are_refused():
    with pytest.raises(SimpgError, match="already has a simhash index"):
        simhash_index(Article.simhash, k=3, blocks=5)
    t = Table("texts", MetaData(), Column("fp", String))
    with pytest.raises(SimpgError, match="expected SimHash or BigInteger"):
        simhash_index(t.c.fp)


def test_default_layout_and_two_levels():
    t = Table("two", MetaData(), Column("a", BigInteger), Column("b", BigInteger))
    a = simhash_index(t.c.a)  # default: the layout for ten million rows
    b = simhash_index(t.c.b, k=3, blocks=4, inner_blocks=4)
    assert (a.layout.k, a.layout.levels) == (3, (5,))
    assert b.layout.tables == 16 and b.prefix_names[15] == "b_p15"
    assert "simpg.permute(b, 3, '{4,4}'::integer[], 15)" in sql(CreateTable(t))
    assert index_for(t.c.b) is b


def test_object_name_shortens_long_names():
    assert object_name("t_col", "_p0_idx") == "t_col_p0_idx"
    long = "x" * 70
    name = object_name(long, "_p12_idx")
    assert len(name.encode()) <= 63 and name.endswith("_p12_idx") and name.startswith("xxx")
    assert object_name("y" * 70, "_p12_idx") != name


def test_url_from_dsn_keeps_socket_folder():
    url = url_from_dsn("host=/tmp/sock port=5433 user=app dbname=news")
    assert url.drivername == "postgresql+psycopg"
    assert (url.username, url.database, url.query["host"], url.query["port"]) == (
        "app",
        "news",
        "/tmp/sock",
        "5433",
    )
    assert url_from_dsn("dbname=x", async_=True).drivername == "postgresql+psycopg_async"
