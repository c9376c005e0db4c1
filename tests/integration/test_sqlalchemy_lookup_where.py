"""SQLAlchemy's within() writes simpg.lookup_where's condition, to the character.

``within()`` compiles with no database at hand, so it renders the condition offline
(``simpg.sqlalchemy.types._lookup_where``); these tests hold that text equal to what
the SQL function writes for the same expressions, across layouts, tables and aliases
(names quoted or not) and both forms (range starts sent from Python, ranges computed
in SQL from another column).
"""

from __future__ import annotations

import psycopg
import pytest
from sqlalchemy import BigInteger, Column, MetaData, Table, select
from sqlalchemy.dialects import postgresql
from sqlalchemy.orm import aliased

from simpg.layout import Layout
from simpg.sqlalchemy import SimHash, simhash_index
from simpg.sqlalchemy.types import _lookup_where

DIALECT = postgresql.psycopg.dialect()
QUOTE = DIALECT.identifier_preparer.quote

LAYOUTS = [Layout(1, (2,)), Layout(2, (4,)), Layout(3, (5,)), Layout(3, (4, 4)), Layout(2, (4, 3)), Layout(4, (6,)),
           Layout(2, (3, 3))]
# plain, needing quotes (capitals, a space, a quote), a reserved word
ALIASES = ["t", "docs_1", "Docs", "my alias", 'odd"name', "select"]
COLUMNS = ["simhash", "SimHash"]
# the expressions within() passes: a bind parameter and its range starts, or another column
FORMS = [("%(param_2)s::BIGINT", "3", "(CAST(%(param_1)s::BIGINT[] AS bigint[]))"),
         ('other_1."SimHash"', "%(k)s", None)]


def sql_lookup_where(conn: psycopg.Connection, alias: str, col: str, prefix_columns: list[str], fp: str,
                     radius: str, layout: Layout, lows: str | None) -> str:
    row = conn.execute("SELECT simpg.lookup_where(%s, %s::name[], %s, %s, %s, %s::integer[], lows => %s, "
                       "alias => %s)", [col, prefix_columns, fp, radius, layout.k, list(layout.levels), lows,
                                        alias]).fetchone()
    assert row is not None
    return str(row[0])


@pytest.mark.parametrize("layout", LAYOUTS, ids=lambda layout: layout.name)
def test_the_offline_rendering_equals_the_function(conn: psycopg.Connection, layout: Layout) -> None:
    for alias in ALIASES:
        for col in COLUMNS:
            prefix_columns = [f"{col}_p{t}" for t in range(layout.tables)]
            for fp, radius, lows in FORMS:
                offline = _lookup_where(f"{QUOTE(alias)}.{QUOTE(col)}",
                                        [f"{QUOTE(alias)}.{QUOTE(name)}" for name in prefix_columns], fp, radius,
                                        layout.k, layout.levels, lows,
                                        [layout.prefix_bits(t) for t in range(layout.tables)])
                assert offline == sql_lookup_where(conn, alias, col, prefix_columns, fp, radius, layout, lows)


@pytest.mark.parametrize("name", ["docs", "Docs Odd"])
def test_within_compiles_to_the_functions_text(conn: psycopg.Connection, name: str) -> None:
    table = Table(name, MetaData(), Column("id", BigInteger, primary_key=True), Column("fp", SimHash))
    spec = simhash_index(table.c.fp, k=2, blocks=4, inner_blocks=3)
    layout = spec.layout
    for source in (table, table.alias("a2")):
        where = str(select(source.c.id).where(source.c.fp.within(5, 2)).compile(dialect=DIALECT)).split("WHERE ", 1)[1]
        alias = source.name
        expected = sql_lookup_where(conn, alias, "fp", list(spec.prefix_names), "%(param_2)s::BIGINT", "2", layout,
                                    "(CAST(%(param_1)s::BIGINT[] AS bigint[]))")
        assert where.startswith(f"({expected} AND simpg.layout_is("), where
    # a self-join: the ranges of the other row's column, computed in SQL
    other = aliased(table, name="other_1")
    on = select(table.c.id).join(other, table.c.fp.within(other.c.fp, 2))
    text = str(on.compile(dialect=DIALECT)).split(" ON ", 1)[1]
    expected = sql_lookup_where(conn, name, "fp", list(spec.prefix_names), "other_1.fp", "2", layout, None)
    assert text.startswith(f"({expected} AND simpg.layout_is("), text
