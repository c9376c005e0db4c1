"""The SQL that the sync and async handles send, built in one place.

Nothing here touches a connection: each function returns a statement (a
:class:`psycopg.sql.Composed`) or its parameters, and :mod:`simpg.psycopg.index` and
:mod:`simpg.psycopg.aio` only run them.

The lookups (docs/python.md shows their plans on a 10M-row table):

* ``near``: one statement, an OR of the index's prefix ranges plus the exact
  ``simpg.hamming(...) <= k`` filter; PostgreSQL turns the OR into a BitmapOr of one
  B-tree range scan per table, which also de-duplicates rows found through several
  tables. Each table's range start is computed here (Python) and all of them are
  sent as one binary ``bigint[]`` (3 parameters in all, not 23: half the Python
  time); the statement is prepared (parsed once; on an ordinary connection
  PostgreSQL still plans each call, a lookup connection runs one generic plan).
  Measured against a UNION of per-table scans, which plans three times
  slower (0.3 ms against 0.1 ms), and against ranges computed in SQL, which makes the
  planner run the PL/pgSQL layout functions at every call.
* ``near_many``: one statement for all queries: per table, ``unnest`` of parameter
  arrays (query numbers, fingerprints and that table's ``lo``, sorted by ``lo``)
  joined to the table on its prefix range, so each query costs one B-tree probe per
  table and consecutive probes share the index's upper pages; the tables' results
  are combined with ``UNION``, which keeps a row found through several tables once.
  The planner cannot know how narrow a range between two columns of ``u`` is (it
  assumes a large share of the table per range), so on its own it may pick a
  sequential scan per query, and the inflated cost turns on JIT compilation (a second
  or more). The statement therefore runs in a transaction (a savepoint inside the
  caller's) with ``enable_seqscan`` and ``jit`` off locally
  (:data:`NEAR_MANY_SETTINGS`), the same choice ``simpg.near`` makes with its
  ``SET enable_seqscan = off``. Measured against the previous form, one LATERAL OR
  of ranges per query (a BitmapOr each): 22% more lookups per second at 10M rows
  with 1,000 queries per call, 1.9 times as many at 1M with 10,000, 0.81 times with 100.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
from psycopg import sql
from psycopg.adapt import Dumper, Loader
from psycopg.pq import Format
from psycopg.types.numeric import Int8

from simpg import bits
from simpg.exc import InvalidLayout
from simpg.layout import Layout

__all__ = [
    "BLOCKS_SQL",
    "CATALOG_SQL",
    "CHECK_SQL",
    "DAMAGED",
    "FETCH_BLOCKS",
    "INDEXED_SQL",
    "INTEGER_TYPES",
    "LAYOUT_CHANGED",
    "LOOKUP_SETTINGS",
    "LOOKUP_SETTINGS_SQL",
    "IndexInfo",
    "Int8Array",
    "Int8ArrayBinaryDumper",
    "FETCH_SETTINGS",
    "LocalSettings",
    "NEAR_MANY_SETTINGS",
    "REPAIR_SQL",
    "RangeMaker",
    "RawByteaLoader",
    "binary_copy_payload",
    "check_k",
    "copy_in_sql",
    "fetch_ranges",
    "fetch_sql",
    "id_column_sql",
    "layout_guard",
    "near_many_params",
    "near_many_sql",
    "near_params",
    "near_sql",
    "parse_fetch",
    "regclass_text",
    "register_dumpers",
    "stats_query",
]

#: The simpg.indexes row of (table, column), with the table's schema and name.
CATALOG_SQL = """
SELECT n.nspname, c.relname, i.fingerprint_column, i.k, i.levels, i.prefix_columns,
       i.index_names, i.fingerprint_config
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
INDEXED_SQL = """
SELECT EXISTS (SELECT FROM simpg.indexes AS i
               WHERE i.indexed_table = %s::regclass AND i.fingerprint_column = %s)
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

#: Types fetched as int8 on the fast binary-COPY path of pairs() and clusters().
INTEGER_TYPES = frozenset({"smallint", "integer", "bigint"})


def id_column_sql() -> tuple[str, str]:
    """The two catalog queries that find the id column: primary key, named column type."""
    return PRIMARY_KEY_SQL, COLUMN_TYPE_SQL


@dataclass(frozen=True)
class IndexInfo:
    """What a handle needs to query one indexed fingerprint column."""

    schema: str
    table: str
    column: str
    id_column: str | None  # None: no single-column primary key, and none named
    id_type: str | None
    layout: Layout
    prefix_columns: tuple[str, ...]
    index_names: tuple[str, ...]
    fingerprint_config: str | None

    @classmethod
    def from_rows(cls, catalog: Sequence[Any], id_column: str | None, id_type: str | None) -> IndexInfo:
        """Build from a :data:`CATALOG_SQL` row and the id column."""
        schema, table, column, k, levels, prefix_columns, index_names, config = catalog
        return cls(schema, table, column, id_column, id_type, Layout(k, tuple(levels)),
                   tuple(prefix_columns), tuple(index_names), config)

    @property
    def relation(self) -> sql.Identifier:
        """The table, schema-qualified."""
        return sql.Identifier(self.schema, self.table)

    @property
    def label(self) -> str:
        """``table.column`` for messages."""
        return f"{self.table}.{self.column}"

    @cached_property
    def ranges(self) -> RangeMaker:
        """Prefix-range arithmetic of this layout."""
        return RangeMaker(self.layout)


class RangeMaker:
    """Each table's signed ``[lo, hi]`` prefix range of a query, fast.

    The same values as :meth:`Layout.prefix_range` (tested): each table's
    :attr:`Permutation.prefix_runs <simpg.layout.Permutation.prefix_runs>` (the runs cut
    to the bits that land in its prefix; the rest are zero in ``lo`` anyway), unpacked
    once into plain tuples, since a lookup computes them on every call.
    """

    def __init__(self, layout: Layout) -> None:
        self.layout = layout
        self._tables = [(p.prefix_runs, p.ones) for p in layout.permutations]
        n = len(self._tables)
        # a binary bigint[] of n elements: the header, then (length 8, value) per element
        self._array = struct.Struct(_INT8_ARRAY_HEADER + "iq" * n)
        self._array_header = int8_array_header(n)

    def lows(self, fp: int) -> list[int]:
        """Each table's ``lo`` (signed) for one unsigned fingerprint."""
        out = []
        for segs, _ in self._tables:
            lo = 0
            for src, mask, dst in segs:
                lo |= ((fp >> src) & mask) << dst
            out.append(lo - (1 << 64) if lo >> 63 else lo)
        return out

    def lows_array(self, fp: int) -> Int8Array:
        """:meth:`lows` as a ready-made ``bigint[]`` parameter (what ``near`` sends)."""
        items: list[int] = []
        for lo in self.lows(fp):
            items += (8, lo)
        return Int8Array.from_payload(self._array.pack(*self._array_header, *items))

    def flat(self, fp: int) -> list[int]:
        """``[lo0, hi0, lo1, hi1, ...]`` as signed bigints for one unsigned fingerprint."""
        out: list[int] = []
        for lo, (_, ones) in zip(self.lows(fp), self._tables, strict=True):
            out += (lo, lo | ones)  # the low bits of lo are 0: | is +, also when negative
        return out

    def ones(self, t: int) -> int:
        """``hi - lo`` of table ``t``'s ranges: the bits below its prefix, all set."""
        return self._tables[t][1]

    def lows_many(self, fps: np.ndarray) -> list[np.ndarray]:
        """Per table, the ``lo`` array (int64) of many unsigned fingerprints."""
        out = []
        for segs, _ in self._tables:
            lo = np.zeros(len(fps), dtype=np.uint64)
            for src, mask, dst in segs:
                lo |= ((fps >> np.uint64(src)) & np.uint64(mask)) << np.uint64(dst)
            out.append(lo.view(np.int64))
        return out

    def arrays(self, fps: np.ndarray) -> list[np.ndarray]:
        """Per table, the ``lo`` and ``hi`` arrays (int64) of many unsigned fingerprints."""
        out = []
        for t, lo in enumerate(self.lows_many(fps)):
            out += [lo, lo | np.int64(self.ones(t))]
        return out


def _id(info: IndexInfo) -> str:
    # Handles check with_ids() before building lookups; this only narrows the type.
    assert info.id_column is not None, "no id column"
    return info.id_column


def check_k(k: Any, info: IndexInfo) -> int:
    """``k`` if the index answers it exactly, else an error naming the value."""
    if isinstance(k, bool) or not isinstance(k, int) or k < 0:
        raise InvalidLayout(f"k must be a non-negative integer, got {k!r}")
    if k > info.layout.k:
        raise InvalidLayout(
            f"k={k} is above the radius k={info.layout.k} that the simpg index on {info.label} "
            "guarantees; re-create the index with a larger k"
        )
    return k


def _prefix_condition(info: IndexInfo, lows: sql.Composable) -> sql.Composed:
    """Each table's prefix range, ORed: the index scans of a lookup."""
    return sql.SQL(" OR ").join(
        sql.SQL("t.{col} BETWEEN {lows}[{i}] AND {lows}[{i}] + {ones}").format(
            col=sql.Identifier(col), lows=lows, i=sql.Literal(t + 1), ones=sql.Literal(info.ranges.ones(t)))
        for t, col in enumerate(info.prefix_columns))


def near_sql(info: IndexInfo, *, numbered: bool = False) -> sql.Composed:
    """One lookup: named parameters ``q``, ``lows`` and ``k`` (see :func:`near_params`).

    Table ``t``'s range is ``lows[t + 1]`` plus the layout's constant width, so a
    lookup sends three parameters whatever the number of tables. ``numbered``: the
    form of :mod:`simpg.psycopg.lookup`, with libpq's ``$1, $2, $3`` for ``q, lows, k``
    and no ``ORDER BY`` (it sorts the rows itself).
    """
    q, lows, k = ((sql.SQL("$1"), sql.SQL("$2"), sql.SQL("$3")) if numbered
                  else (sql.Placeholder("q"), sql.Placeholder("lows"), sql.Placeholder("k")))
    cond = _prefix_condition(info, lows)
    order = sql.SQL("") if numbered else sql.SQL(" ORDER BY distance, t.{id}").format(id=sql.Identifier(_id(info)))
    return sql.SQL(
        "SELECT t.{id}, simpg.hamming(t.{fp}, {q}) AS distance FROM {rel} AS t "
        "WHERE ({cond}) AND simpg.hamming(t.{fp}, {q}) <= {k} AND {guard}{order}"
    ).format(id=sql.Identifier(_id(info)), fp=sql.Identifier(info.column), rel=info.relation,
             cond=cond, q=q, k=k, guard=layout_guard(info), order=order)


def duplicates_sql(info: IndexInfo, sketch_column: str) -> sql.Composed:
    """:func:`near_sql` confirmed by sketches: named parameters ``q``, ``lows``, ``k``, ``s``, ``t``.

    ``s`` is the query's sketch (``'x' + hex``), ``t`` the largest sketch distance. The
    sketch is read from the rows the prefix indexes found (the heap rows the fingerprint
    check reads anyway), so it needs no index of its own. Rows come back as
    ``(id, distance, sketch distance)``, nearest sketch first.
    """
    q, k = sql.Placeholder("q"), sql.Placeholder("k")
    sketch = sql.SQL("bit_count(t.{sk} # {s}::bit(256))").format(
        sk=sql.Identifier(sketch_column), s=sql.Placeholder("s"))
    return sql.SQL(
        "SELECT t.{id}, simpg.hamming(t.{fp}, {q}) AS distance, {sketch} AS sketch_distance FROM {rel} AS t "
        "WHERE ({cond}) AND simpg.hamming(t.{fp}, {q}) <= {k} AND {sketch} <= {t} AND {guard} "
        "ORDER BY sketch_distance, distance, t.{id}"
    ).format(id=sql.Identifier(_id(info)), fp=sql.Identifier(info.column), rel=info.relation,
             cond=_prefix_condition(info, sql.Placeholder("lows")), q=q, k=k, sketch=sketch,
             t=sql.Placeholder("t"), guard=layout_guard(info))


#: SQLSTATE of simpg.layout_is: the index no longer has the layout a statement was made for.
LAYOUT_CHANGED = "SPG01"
#: SQLSTATE of simpg.index_layout and the queries: the index lost a prefix column and
#: cannot answer exactly (simpg.check says which; simpg.repair removes it).
DAMAGED = "SPG02"


def layout_guard(info: IndexInfo) -> sql.Composed:
    """``simpg.layout_is(...)`` for this layout, put in each lookup statement.

    A lookup made for the layout fails (SQLSTATE :data:`LAYOUT_CHANGED`) once the index
    was re-created with another one, instead of reading other permutations under the
    same column names. ``simpg.layout_is`` is declared immutable, so PostgreSQL
    checks it when it plans the statement: at every call where each call is planned,
    once per generic plan on a lookup connection (re-planned after any change to the
    table's columns, which a new layout is). That took a tenth off a lookup.
    """
    levels = "{" + ",".join(map(str, info.layout.levels)) + "}"
    return sql.SQL("simpg.layout_is({}::regclass, {}, {}, {}::integer[])").format(
        sql.Literal(regclass_text(info)), sql.Literal(info.column), sql.Literal(info.layout.k),
        sql.Literal(levels))


def near_params(info: IndexInfo, fp: int, k: int) -> dict[str, Any]:
    """Parameters of :func:`near_sql` for an unsigned fingerprint.

    The handles register :class:`Int8ArrayBinaryDumper` on their connection
    (:func:`register_dumpers`), which ``lows`` needs.
    """
    return {"q": Int8(bits.to_db(fp)), "lows": info.ranges.lows_array(fp), "k": Int8(k)}


def near_many_sql(info: IndexInfo) -> sql.Composed:
    """Many lookups in one statement: parameters ``n[], q[], lo[], k`` for each table in turn.

    One join per table, each probing that table's B-tree once per query, in prefix
    order (see :func:`near_many_params`); ``UNION`` keeps a row found through several
    tables once (``ctid`` tells two rows with equal ids apart). Rows come back as
    ``(query number from 1, id, distance)``, ordered.
    """
    arms = [
        sql.SQL(
            "SELECT u.n, t.ctid, t.{id} AS id, simpg.hamming(t.{fp}, u.q) AS distance "
            "FROM unnest(%s::bigint[], %s::bigint[], %s::bigint[]) AS u(n, q, lo) "
            "JOIN {rel} AS t ON t.{prefix} BETWEEN u.lo AND u.lo + {ones} "
            "WHERE simpg.hamming(t.{fp}, u.q) <= %s"
        ).format(id=sql.Identifier(_id(info)), fp=sql.Identifier(info.column), rel=info.relation,
                 prefix=sql.Identifier(col), ones=sql.Literal(info.ranges.ones(t)))
        for t, col in enumerate(info.prefix_columns)
    ]
    return sql.SQL("SELECT s.n, s.id, s.distance FROM ({arms}) AS s WHERE {guard} "
                   "ORDER BY s.n, s.distance, s.id").format(arms=sql.SQL(" UNION ").join(arms),
                                                            guard=layout_guard(info))


#: Session settings of a connection that serves simpg lookups (SimIndex.connect,
#: configure_lookups). A prepared ``near`` then runs one generic plan instead of being
#: planned at every call, which is about half of a single lookup's server time. The
#: generic plan cannot see how narrow a prefix range is (it assumes a large share of
#: the table), hence no sequential scans, no parallel workers (their start-up costs
#: milliseconds for a lookup that reads one row) and no JIT.
LOOKUP_SETTINGS: dict[str, str] = {
    "plan_cache_mode": "force_generic_plan",
    "enable_seqscan": "off",
    "max_parallel_workers_per_gather": "0",
    "jit": "off",
}
#: Apply :data:`LOOKUP_SETTINGS` to the session.
LOOKUP_SETTINGS_SQL: sql.Composed = sql.SQL("SELECT {}").format(sql.SQL(", ").join(
    sql.SQL("pg_catalog.set_config({}, {}, false)").format(sql.Literal(name), sql.Literal(value))
    for name, value in LOOKUP_SETTINGS.items()))


class LocalSettings:
    """Planner settings changed for one statement, in the transaction around it.

    ``sql`` reads the current values and sets the new ones locally (``set_config(...,
    true)``); inside the caller's transaction (a savepoint) a local setting would
    outlive the savepoint, so ``restore_sql`` with the values read puts them back.
    """

    def __init__(self, **settings: str) -> None:
        names = list(settings)
        # names and values are quoted as literals by psycopg, never pasted into the text
        self.sql: sql.Composed = sql.SQL("SELECT {}").format(sql.SQL(", ").join(
            [sql.SQL("pg_catalog.current_setting({})").format(sql.Literal(n)) for n in names]
            + [sql.SQL("pg_catalog.set_config({}, {}, true)").format(sql.Literal(n), sql.Literal(v))
               for n, v in settings.items()]))
        self.restore_sql: sql.Composed = sql.SQL("SELECT {}").format(sql.SQL(", ").join(
            sql.SQL("pg_catalog.set_config({}, %s, true)").format(sql.Literal(n)) for n in names))
        self.count = len(names)


#: near_many's statement: index probes only (see the module docstring).
NEAR_MANY_SETTINGS = LocalSettings(enable_seqscan="off", jit="off")
#: fetch_all's statements read whole tables: a sequential scan, even on a connection
#: with :data:`LOOKUP_SETTINGS`.
FETCH_SETTINGS = LocalSettings(enable_seqscan="on")


def near_many_params(info: IndexInfo, fps: np.ndarray, k: int) -> list[Any]:
    """Parameters of :func:`near_many_sql` for unsigned fingerprints (``uint64`` array).

    Each table gets the queries sorted by their prefix there, so that consecutive
    B-tree probes share the upper pages of the index (22% more lookups per second
    than in query order at 10M rows, bench/psycopg_api.py).
    """
    numbers = np.arange(1, len(fps) + 1, dtype=np.int64)
    signed = fps.view(np.int64)
    params: list[Any] = []
    for lo in info.ranges.lows_many(fps):
        order = np.argsort(lo, kind="stable")
        params += [Int8Array(numbers[order]), Int8Array(signed[order]), Int8Array(lo[order]), Int8(k)]
    return params


#: Heap blocks read per fetch statement: 2**18 blocks (2 GiB of table at 8 KiB) keep
#: each aggregated bytea far below PostgreSQL's 1 GiB limit for any row width.
FETCH_BLOCKS = 1 << 18

#: Number of heap blocks of a table now, after simpg.snapshot_sees_table: a transaction
#: whose snapshot is older than a rewrite of the table would read it empty (SQLSTATE 40001).
BLOCKS_SQL = ("SELECT pg_catalog.pg_relation_size(x.r) / pg_catalog.current_setting('block_size')::bigint "
              "FROM (SELECT %s::pg_catalog.regclass AS r) AS x, LATERAL simpg.snapshot_sees_table(x.r) AS ok")


def fetch_sql(info: IndexInfo, first_block: int, end_block: int | None,
              where: sql.Composable | None = None) -> sql.Composed:
    """``(ids, fingerprints)`` of the rows with a fingerprint in heap blocks ``[first, end)``.

    Each comes back as ONE value: the fingerprints as a bytea of big-endian int8
    (``string_agg(int8send(...))``), which numpy reads without a Python loop; the ids
    the same way when they are integers, else as an array. Measured on 1M rows
    (bench/psycopg_api.py): 0.2-0.3 s, against 0.7-0.9 s for a binary COPY (psycopg
    reads COPY data one row at a time) and about the same for ``array_agg``. Both
    aggregates read the same rows in the same order.
    ``end_block`` None reads to the end of the table; ``where`` is an extra condition
    on the table's alias ``t``.
    """
    integer = info.id_type in INTEGER_TYPES
    ids = (sql.SQL("pg_catalog.string_agg(pg_catalog.int8send(t.{}::bigint), ''::bytea)") if integer
           else sql.SQL("pg_catalog.array_agg(t.{})")).format(sql.Identifier(_id(info)))
    conditions = [sql.SQL("t.{} IS NOT NULL").format(sql.Identifier(info.column))]
    if where is not None:
        conditions.append(sql.SQL("({})").format(where))
    if first_block:
        conditions.append(sql.SQL("t.ctid >= {}::tid").format(sql.Literal(f"({first_block},0)")))
    if end_block is not None:
        conditions.append(sql.SQL("t.ctid < {}::tid").format(sql.Literal(f"({end_block},0)")))
    return sql.SQL(
        "SELECT {ids}, pg_catalog.string_agg(pg_catalog.int8send(t.{fp}), ''::bytea) "
        "FROM {rel} AS t WHERE {where}"
    ).format(ids=ids, fp=sql.Identifier(info.column), rel=info.relation,
             where=sql.SQL(" AND ").join(conditions))


def regclass_text(info: IndexInfo) -> str:
    """The table as text that ``::regclass`` reads back exactly (schema-qualified, quoted)."""
    return sql.Identifier(info.schema, info.table).as_string(None)


def fetch_ranges(blocks: int) -> list[tuple[int, int | None]]:
    """Block ranges of the fetch statements; the last one is open (rows added since)."""
    starts = list(range(0, max(blocks, 1), FETCH_BLOCKS))
    return [(lo, starts[i + 1] if i + 1 < len(starts) else None) for i, lo in enumerate(starts)]


def parse_fetch(ids: Any, fps: Any, integer: bool) -> tuple[np.ndarray, np.ndarray]:
    """Numpy arrays from one :func:`fetch_sql` row (bytea loaded as raw bytes)."""
    fp_arr = np.frombuffer(fps or b"", dtype=">i8").astype(np.int64).view(np.uint64)
    if integer:
        id_arr = np.frombuffer(ids or b"", dtype=">i8").astype(np.int64)
    else:
        id_arr = np.empty(len(fp_arr), dtype=object)
        id_arr[:] = list(ids or [])
    return id_arr, fp_arr


class RawByteaLoader(Loader):
    """Load bytea as the raw bytes of the binary protocol (registered on one cursor only)."""

    format = Format.BINARY

    def load(self, data: Any) -> bytes:
        """The bytes as they came."""
        return bytes(data)


def copy_in_sql(info: IndexInfo, columns: Sequence[str], binary: bool = True) -> sql.Composed:
    """``COPY table (fingerprint column, *columns) FROM STDIN``, binary or text."""
    return sql.SQL("COPY {rel} ({cols}) FROM STDIN{fmt}").format(
        rel=info.relation,
        cols=sql.SQL(", ").join(sql.Identifier(c) for c in [info.column, *columns]),
        fmt=sql.SQL(" (FORMAT BINARY)" if binary else ""))


def stats_query(info: IndexInfo, exact: bool) -> tuple[sql.Composed, list[Any]]:
    """Rows (counted or estimated), table size, and the size of each prefix index."""
    rows = (sql.SQL("(SELECT count(*) FROM {rel})").format(rel=info.relation) if exact
            else sql.SQL("greatest(c.reltuples, 0)::bigint"))
    statement = sql.SQL(
        "SELECT {rows}, pg_catalog.pg_table_size(c.oid), "
        "ARRAY(SELECT coalesce(pg_catalog.pg_relation_size(x.oid), 0) "
        "FROM unnest(%s::name[]) WITH ORDINALITY AS u(name, o) "
        "LEFT JOIN pg_catalog.pg_class AS x ON x.relname = u.name AND x.relnamespace = c.relnamespace "
        "ORDER BY u.o) "
        "FROM pg_catalog.pg_class AS c WHERE c.oid = %s::regclass"
    ).format(rows=rows)
    return statement, [list(info.index_names), regclass_text(info)]


# -- COPY and arrays, with numpy ---------------------------------------------

_COPY_SIGNATURE = b"PGCOPY\n\xff\r\n\x00"


def binary_copy_payload(columns: Sequence[np.ndarray]) -> bytes:
    """A whole binary COPY stream of NOT NULL bigint columns (int64 arrays)."""
    n = len(columns[0]) if columns else 0
    fields: list[tuple[str, str]] = [("nfields", ">i2")]
    for c in range(len(columns)):
        fields += [(f"len{c}", ">i4"), (f"v{c}", ">i8")]
    rows = np.empty(n, dtype=np.dtype(fields))
    rows["nfields"] = len(columns)
    for c, values in enumerate(columns):
        rows[f"len{c}"] = 8
        rows[f"v{c}"] = values
    return _COPY_SIGNATURE + b"\x00" * 8 + rows.tobytes() + b"\xff\xff"


#: struct format of the header of a one-dimensional binary array.
_INT8_ARRAY_HEADER = ">iiiii"


def int8_array_header(n: int) -> tuple[int, int, int, int, int]:
    """Header of a binary ``bigint[]`` of ``n`` elements.

    ndim 1, no nulls, element type int8 (oid 20), then the length and lower bound 1.
    """
    return (1, 0, 20, n, 1)


class Int8Array:
    """A ``bigint[]`` parameter, already in PostgreSQL's binary array format.

    Built from an int64 numpy array without a Python loop, or by
    :meth:`RangeMaker.lows_array`. Needs :class:`Int8ArrayBinaryDumper` registered
    (:func:`register_dumpers`).
    """

    __slots__ = ("payload",)

    def __init__(self, values: np.ndarray) -> None:
        values = np.ascontiguousarray(values, dtype=np.int64)
        n = len(values)
        header = struct.pack(_INT8_ARRAY_HEADER, *int8_array_header(n))
        items = np.empty(n, dtype=[("len", ">i4"), ("v", ">i8")])
        items["len"] = 8
        items["v"] = values
        self.payload = header + items.tobytes()

    @classmethod
    def from_payload(cls, payload: bytes) -> Int8Array:
        """Wrap bytes that are already a binary ``bigint[]``."""
        array = cls.__new__(cls)
        array.payload = payload
        return array


class Int8ArrayBinaryDumper(Dumper):
    """Dump :class:`Int8Array` as the ``bigint[]`` it holds."""

    format = Format.BINARY
    oid = 1016  # int8[]

    def dump(self, obj: Int8Array) -> bytes:
        """The payload as it is."""
        return obj.payload


def register_dumpers(conn: Any) -> None:
    """Teach ``conn`` (sync or async) to send :class:`Int8Array` parameters.

    Only objects of that class are affected, so this is safe on a caller's connection.
    """
    conn.adapters.register_dumper(Int8Array, Int8ArrayBinaryDumper)
