"""What a handle knows about one indexed column, and the catalog queries that tell it.

:class:`IndexInfo` is read once per handle from ``simpg.indexes`` (:data:`CATALOG_SQL`)
and the table's primary key (:func:`key_column_sql`); every statement of
:mod:`simpg.psycopg.statements` is built from it. The check of ``k`` against the
index's radius (:func:`check_k`) lives here too, and the SQLSTATEs of simpg's lookups
(:data:`LAYOUT_CHANGED`, :data:`DAMAGED`) are re-exported from :mod:`simpg.exc`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from psycopg import sql

from simpg.exc import DAMAGED, LAYOUT_CHANGED  # the SQLSTATEs of simpg's own errors
from simpg.layout import Layout, check_radius
from simpg.psycopg.ranges import RangeMaker

__all__ = [
    "CATALOG_SQL",
    "CHECK_SQL",
    "COLUMN_TYPE_SQL",
    "DAMAGED",
    "INDEXED_SQL",
    "INTEGER_TYPES",
    "LAYOUT_CHANGED",
    "PRIMARY_KEY_SQL",
    "REPAIR_SQL",
    "IndexInfo",
    "check_k",
    "key_column_sql",
    "regclass_text",
]

#: The simpg.indexes row of (table, column), with the table's schema and name, and the
#: condition of its lookups as simpg.lookup_where writes it, with the parameters of
#: :func:`~simpg.psycopg.statements.near_sql` ($1 the fingerprint, $2 the range starts
#: computed here, $3 k), and for each table the condition of
#: :func:`~simpg.psycopg.statements.near_many_sql`'s join (a query ``u``: ``u.q`` its
#: fingerprint, ``u.lo`` its range start there; ``$1`` k).
CATALOG_SQL = """
SELECT n.nspname, c.relname, i.fingerprint_column, i.k, i.levels, i.prefix_columns,
       i.index_names, i.fingerprint_config,
       simpg.lookup_where(i.fingerprint_column, i.prefix_columns, '$1', '$3', i.k, i.levels, lows => '$2'),
       ARRAY(SELECT simpg.lookup_where(i.fingerprint_column, ARRAY[i.prefix_columns[t]], 'u.q', '$1',
                                       starts => '{u.lo}',
                                       prefix_bits => ARRAY[simpg.prefix_bits(i.k, i.levels, t - 1)])
             FROM pg_catalog.generate_series(1, pg_catalog.cardinality(i.prefix_columns)) AS t ORDER BY t)
FROM simpg.index_layout(%s::regclass, %s) AS i
JOIN pg_catalog.pg_class AS c ON c.oid = i.indexed_table
JOIN pg_catalog.pg_namespace AS n ON n.oid = c.relnamespace
"""

#: Problems of a table's simpg indexes (of one fingerprint column, unless NULL):
#: ``(fingerprint column, problem, detail)`` rows of ``simpg.check``; parameters
#: table, column, verify_rows.
CHECK_SQL = """
SELECT c.fingerprint_column, c.problem, c.detail
FROM simpg.check(%s::regclass, %s, %s) AS c
"""

#: Whether (table, column) has a complete simpg index (its B-trees may be missing). With
#: no problem from simpg.check either, a column without one has no simpg index at all.
#: Read from simpg.table_indexes, not the simpg.indexes view, which does not list the
#: partitions of a partitioned table (a handle may work on one partition).
INDEXED_SQL = """
SELECT EXISTS (SELECT FROM simpg.table_indexes(%s::regclass) AS i
               WHERE i.fingerprint_column = %s AND pg_catalog.array_position(i.prefix_columns, NULL) IS NULL)
"""

#: ``simpg.repair`` of a table (of one fingerprint column, unless NULL): the statements run.
REPAIR_SQL = "SELECT s FROM simpg.repair(%s::regclass, %s) AS s"

#: Name and type of the columns of a table's primary key.
PRIMARY_KEY_SQL = """
SELECT a.attname, pg_catalog.format_type(a.atttypid, NULL)
FROM pg_catalog.pg_index AS x
JOIN pg_catalog.pg_attribute AS a ON a.attrelid = x.indrelid AND a.attnum = ANY (x.indkey)
WHERE x.indrelid = %s::regclass AND x.indisprimary
"""

#: Type of one named column.
COLUMN_TYPE_SQL = """
SELECT pg_catalog.format_type(a.atttypid, NULL)
FROM pg_catalog.pg_attribute AS a
WHERE a.attrelid = %s::regclass AND a.attname = %s AND a.attnum > 0 AND NOT a.attisdropped
"""

#: Types fetched as int8 on the fast binary paths (lookups sorted in Python, fetch_all).
INTEGER_TYPES = frozenset({"smallint", "integer", "bigint"})



def key_column_sql() -> tuple[str, str]:
    """The two catalog queries that find the id column: primary key, named column type."""
    return PRIMARY_KEY_SQL, COLUMN_TYPE_SQL


@dataclass(frozen=True)
class IndexInfo:
    """What a handle needs to query one indexed fingerprint column."""

    schema: str
    table: str
    column: str
    key_column: str | None  # None: no single-column primary key, and none named
    id_type: str | None
    layout: Layout
    prefix_columns: tuple[str, ...]
    index_names: tuple[str, ...]
    fingerprint_config: str | None
    #: the lookups' condition (``simpg.lookup_where``): ``$1`` fingerprint, ``$2`` range starts, ``$3`` k
    condition: str
    #: each table's condition in near_many's join (``simpg.lookup_where``): ``u.q``, ``u.lo``, ``$1`` k
    many_conditions: tuple[str, ...]

    @classmethod
    def from_rows(cls, catalog: Sequence[Any], key_column: str | None, id_type: str | None) -> IndexInfo:
        """Build from a :data:`CATALOG_SQL` row and the id column."""
        schema, table, column, k, levels, prefix_columns, index_names, config, condition, many = catalog
        return cls(schema, table, column, key_column, id_type, Layout(k, tuple(levels)),
                   tuple(prefix_columns), tuple(index_names), config, condition, tuple(many))

    @property
    def relation(self) -> sql.Identifier:
        """The table, schema-qualified."""
        return sql.Identifier(self.schema, self.table)

    @property
    def label(self) -> str:
        """``table.column`` for messages."""
        return f"{self.table}.{self.column}"

    @property
    def integer_ids(self) -> bool:
        """Whether the ids are integers (read as int8, ordered in Python like in SQL)."""
        return self.id_type in INTEGER_TYPES

    @cached_property
    def ranges(self) -> RangeMaker:
        """Prefix-range arithmetic of this layout."""
        return RangeMaker(self.layout)


def regclass_text(info: IndexInfo) -> str:
    """The table as text that ``::regclass`` reads back exactly (schema-qualified, quoted)."""
    return sql.Identifier(info.schema, info.table).as_string(None)


def check_k(k: Any, info: IndexInfo) -> int:
    """``k`` if the index answers it exactly, else an error naming the value."""
    return check_radius(k, info.layout.k, what=f"the simpg index on {info.label}",
                        hint="re-create the index with a larger k")
