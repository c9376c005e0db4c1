"""The statements that the sync and async handles send, composed in one place.

Nothing here touches a connection: each function returns a statement (a
:class:`psycopg.sql.Composed`, identifiers quoted by psycopg) or its parameters, and
:mod:`simpg.psycopg.index`, :mod:`simpg.psycopg.aio` and :mod:`simpg.psycopg.lookup`
only run them. The catalog queries are in :mod:`simpg.psycopg.catalog`, the range
arithmetic in :mod:`simpg.psycopg.ranges`, the binary formats in
:mod:`simpg.psycopg.wire` and the planner settings in :mod:`simpg.psycopg.settings`.

The lookups (docs/python.md shows their plans on a 10M-row table):

* ``near``: one statement, an OR of the index's prefix ranges plus the exact
  ``simpg.hamming(...) <= k`` filter, the condition ``simpg.lookup_where`` writes for
  every lookup (SQL and Python); PostgreSQL turns the OR into a BitmapOr of one
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
  (:data:`~simpg.psycopg.settings.NEAR_MANY_SETTINGS`), the same choice ``simpg.near`` makes with its
  ``SET enable_seqscan = off``. Measured against the previous form, one LATERAL OR
  of ranges per query (a BitmapOr each): 22% more lookups per second at 10M rows
  with 1,000 queries per call, 1.9 times as many at 1M with 10,000, 0.81 times with 100.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from psycopg import sql
from psycopg.types.numeric import Int8

from simpg import bits
from simpg.psycopg.catalog import INTEGER_TYPES, IndexInfo, regclass_text
from simpg.psycopg.wire import Int8Array
from simpg.sqlnames import with_parameters

__all__ = [
    "DUPLICATES_CONDITION_SQL",
    "FETCH_BLOCKS",
    "FETCH_PARTS_SQL",
    "copy_in_sql",
    "duplicates_condition_params",
    "duplicates_sql",
    "fetch_ranges",
    "fetch_sketched_sql",
    "fetch_sql",
    "layout_guard",
    "near_many_params",
    "near_many_sql",
    "near_params",
    "near_sql",
    "stats_query",
]


def _id(info: IndexInfo) -> str:
    # Handles check with_ids() before building lookups; this only narrows the type.
    assert info.key_column is not None, "no id column"
    return info.key_column


def near_sql(info: IndexInfo, *, ordered: bool = False) -> sql.Composed:
    """One lookup: ``$1`` the fingerprint, ``$2`` the range starts, ``$3`` k (see :func:`near_params`).

    The condition is the index's, as ``simpg.lookup_where`` wrote it when the handle read
    the catalog (:attr:`IndexInfo.condition`): table ``t``'s range is ``$2[t + 1]``
    plus the layout's constant width, so a lookup sends three parameters whatever the
    number of tables. Run it with a :class:`psycopg.RawCursor` (``$n`` placeholders).
    ``ordered`` adds ``ORDER BY distance, id``; without it the rows come unordered,
    and :mod:`simpg.psycopg.lookup` sorts integer ids itself, cheaper than a Sort node.
    """
    order = (sql.SQL(" ORDER BY distance, t.{id}").format(id=sql.Identifier(_id(info))) if ordered
             else sql.SQL(""))
    # $n placeholders: psycopg reads no % in the text, so the names stay as they are
    return sql.SQL(
        "SELECT t.{id}, simpg.hamming(t.{fp}, $1) AS distance FROM {rel} AS t "
        "WHERE {cond} AND {guard}{order}"
    ).format(id=sql.Identifier(_id(info)), fp=sql.Identifier(info.column), rel=info.relation,
             cond=sql.SQL(info.condition), guard=layout_guard(info), order=order)


#: The condition of :func:`duplicates_sql` from ``simpg.lookup_where``: near's
#: (:attr:`IndexInfo.condition`), then ``$4`` the sketch, ``$5`` the largest sketch
#: distance, ``$6`` the band keys. Parameters: :func:`duplicates_condition_params`.
DUPLICATES_CONDITION_SQL = (
    "SELECT simpg.lookup_where(%s, %s::name[], '$1', '$3', %s, %s::integer[], lows => '$2', "
    "sketch_column => %s, sketch => '$4::bit(256)', max_sketch => '$5', band_columns => %s::name[], "
    "band_keys => '$6')")


def duplicates_condition_params(info: IndexInfo, sketch_column: str, band_columns: Sequence[str]) -> list[Any]:
    """Parameters of :data:`DUPLICATES_CONDITION_SQL`."""
    return [info.column, list(info.prefix_columns), info.layout.k, list(info.layout.levels), sketch_column,
            list(band_columns)]


def duplicates_sql(info: IndexInfo, sketch_column: str, condition: str) -> sql.Composed:
    """:func:`near_sql` confirmed by sketches: ``$1..$3`` as near's, ``$4`` the sketch, ``$5`` the limit, ``$6`` bands.

    ``condition`` is :data:`DUPLICATES_CONDITION_SQL`'s answer. ``$4`` is the query's
    sketch (``'x' + hex``), ``$5`` the largest sketch distance, ``$6`` the query's band
    keys (a ``bigint[]`` in band order; any value when the condition has no band
    columns). The sketch is read from the rows the indexes found (the heap rows the
    fingerprint check reads anyway), so it needs no index of its own. With band columns
    a row sharing a band key is a candidate too, at any fingerprint distance (rows
    without a fingerprint are left out). Rows come back as ``(id, distance, sketch
    distance)``, nearest sketch first. Run it with a :class:`psycopg.RawCursor`.
    """
    return sql.SQL(
        "SELECT t.{id}, simpg.hamming(t.{fp}, $1) AS distance, "
        "simpg.sketch_distance(t.{sk}, $4::bit(256)) AS sketch_distance "
        "FROM {rel} AS t WHERE {cond} AND {guard} ORDER BY sketch_distance, distance, t.{id}"
    ).format(id=sql.Identifier(_id(info)), fp=sql.Identifier(info.column), sk=sql.Identifier(sketch_column),
             rel=info.relation, cond=sql.SQL(condition), guard=layout_guard(info))


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


def near_params(info: IndexInfo, fp: int, k: int) -> list[Any]:
    """``$1..$3`` of :func:`near_sql` for an unsigned fingerprint.

    The handles register :class:`Int8ArrayBinaryDumper` on their connection
    (:func:`register_dumpers`), which the range starts need.
    """
    return [Int8(bits.to_db(fp)), info.ranges.lows_array(fp), Int8(k)]


def near_many_sql(info: IndexInfo) -> sql.Composed:
    """Many lookups in one statement: ``$1`` k, then ``n[], q[], lo[]`` for each table in turn.

    One join per table, each probing that table's B-tree once per query, in prefix
    order (see :func:`near_many_params`); the join's condition is the table's lookup
    condition from ``simpg.lookup_where`` (:attr:`IndexInfo.many_conditions`, the query's
    fingerprint ``u.q`` and range start ``u.lo``). ``UNION`` keeps a row found through
    several tables once (``tableoid`` and ``ctid`` tell two rows with equal ids apart,
    also in two partitions of a partitioned table). Rows come back as
    ``(query number from 1, id, distance)``, ordered. Run it with a :class:`psycopg.RawCursor`.
    """
    arms = [
        sql.SQL(
            "SELECT u.n, t.tableoid, t.ctid, t.{id} AS id, simpg.hamming(t.{fp}, u.q) AS distance "
            "FROM unnest({n}::bigint[], {q}::bigint[], {lo}::bigint[]) AS u(n, q, lo) "
            "JOIN {rel} AS t ON {cond}"
        ).format(id=sql.Identifier(_id(info)), fp=sql.Identifier(info.column), rel=info.relation,
                 n=sql.SQL(f"${2 + 3 * t}"), q=sql.SQL(f"${3 + 3 * t}"), lo=sql.SQL(f"${4 + 3 * t}"),
                 cond=sql.SQL(condition))
        for t, condition in enumerate(info.many_conditions)
    ]
    # $n placeholders: psycopg reads no % in the text, so the names stay as they are
    return sql.SQL("SELECT s.n, s.id, s.distance FROM ({arms}) AS s WHERE {guard} "
                   "ORDER BY s.n, s.distance, s.id").format(arms=sql.SQL(" UNION ").join(arms),
                                                           guard=layout_guard(info))


def near_many_params(info: IndexInfo, fps: np.ndarray, k: int) -> list[Any]:
    """Parameters of :func:`near_many_sql` for unsigned fingerprints (``uint64`` array).

    Each table gets the queries sorted by their prefix there, so that consecutive
    B-tree probes share the upper pages of the index (22% more lookups per second
    than in query order at 10M rows, bench/psycopg_api.py).
    """
    numbers = np.arange(1, len(fps) + 1, dtype=np.int64)
    signed = fps.view(np.int64)
    params: list[Any] = [Int8(k)]
    for lo in info.ranges.lows_many(fps):
        order = np.argsort(lo, kind="stable")
        params += [Int8Array(numbers[order]), Int8Array(signed[order]), Int8Array(lo[order])]
    return params


#: Heap blocks read per fetch statement: 2**18 blocks (2 GiB of table at 8 KiB) keep
#: each aggregated bytea far below PostgreSQL's 1 GiB limit for any row width.
FETCH_BLOCKS = 1 << 18

#: The relations that hold a table's rows and their heap blocks now, after
#: simpg.snapshot_sees_table (a transaction whose snapshot is older than a rewrite of the
#: table would read it empty: SQLSTATE 40001). A plain table is its own one part; a
#: partitioned one is its leaf partitions, each read in its own block ranges, so no
#: statement aggregates more than FETCH_BLOCKS of any partition (one statement for all
#: of them would pass PostgreSQL's 1 GiB limit at about 67M rows). A foreign partition
#: (a shard over postgres_fdw, which sends the ctid ranges to its server) has no size
#: here: its blocks are its last ANALYZE's estimate, and its last range is open, so an
#: estimate too small costs larger statements, never missing rows.
FETCH_PARTS_SQL = (
    "SELECT n.nspname, c.relname, CASE WHEN c.relkind = 'f' THEN GREATEST(c.relpages, 0)::bigint "
    "ELSE pg_catalog.pg_relation_size(c.oid) / pg_catalog.current_setting('block_size')::bigint END "
    "FROM (SELECT %s::pg_catalog.regclass AS r) AS x, LATERAL simpg.snapshot_sees_table(x.r) AS ok, "
    "LATERAL (SELECT t.relid FROM pg_catalog.pg_partition_tree(x.r) AS t WHERE t.isleaf "
    "UNION SELECT x.r) AS p "  # pg_partition_tree has no row for a table outside a partition tree
    "JOIN pg_catalog.pg_class AS c ON c.oid = p.relid "
    "JOIN pg_catalog.pg_namespace AS n ON n.oid = c.relnamespace "
    "WHERE c.relkind <> 'p' ORDER BY c.oid")


def fetch_sql(info: IndexInfo, first_block: int, end_block: int | None,
              where: sql.Composable | None = None, part: sql.Composable | None = None,
              extra: Sequence[sql.Composable] = ()) -> sql.Composed:
    """``(ids, fingerprints)`` of the rows with a fingerprint in heap blocks ``[first, end)``.

    Each comes back as ONE value: the fingerprints as a bytea of big-endian int8
    (``string_agg(int8send(...))``), which numpy reads without a Python loop; the ids
    the same way when they are integers, else as an array. Measured on 1M rows
    (bench/psycopg_api.py): 0.2-0.3 s, against 0.7-0.9 s for a binary COPY (psycopg
    reads COPY data one row at a time) and about the same for ``array_agg``. Both
    aggregates read the same rows in the same order.
    ``end_block`` None reads to the end of the table; ``where`` is an extra condition
    on the table's alias ``t``; ``part`` a partition to read instead of the table
    (:data:`FETCH_PARTS_SQL`); ``extra`` more aggregates over the same rows, selected after
    those two (:func:`fetch_sketched_sql`).
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
        "SELECT {ids}, pg_catalog.string_agg(pg_catalog.int8send(t.{fp}), ''::bytea){extra} "
        "FROM {rel} AS t WHERE {where}"
    ).format(ids=ids, fp=sql.Identifier(info.column), rel=info.relation if part is None else part,
             where=sql.SQL(" AND ").join(conditions), extra=sql.SQL("").join(sql.SQL(", {}").format(e) for e in extra))


def fetch_sketched_sql(info: IndexInfo, first_block: int, end_block: int | None, where: sql.Composable | None,
                       part: sql.Composable | None, sketch_column: str, band_columns: Sequence[str] = (),
                       ) -> sql.Composed:
    """:func:`fetch_sql` for the rows with a fingerprint and a sketch, with their sketches and band keys.

    After the ids and fingerprints: the sketches as one bytea of ``varbit_send`` values (a
    4-byte bit count, then the bits: 36 bytes a row for ``bit(256)``), and with
    ``band_columns`` each column's keys as a bytea of big-endian int8 (0 for NULL), then
    one bytea of int2 flags, bit ``i`` set where column ``i`` is NULL. Rows without a
    sketch are left out: nobody's pair.
    """
    sketch = sql.Identifier(sketch_column)
    extra = [sql.SQL("pg_catalog.string_agg(pg_catalog.varbit_send(t.{}), ''::bytea)").format(sketch)]
    if band_columns:
        extra += [sql.SQL("pg_catalog.string_agg(pg_catalog.int8send(coalesce(t.{}, 0)), ''::bytea)").format(
            sql.Identifier(c)) for c in band_columns]
        flags = sql.SQL(" + ").join(sql.SQL("(t.{} IS NULL)::integer * {}").format(sql.Identifier(c),
                                                                                   sql.Literal(1 << i))
                                    for i, c in enumerate(band_columns))
        extra.append(sql.SQL("pg_catalog.string_agg(pg_catalog.int2send(({})::smallint), ''::bytea)").format(flags))
    sketched = sql.SQL("t.{} IS NOT NULL").format(sketch)
    if where is not None:
        sketched = sql.SQL("{} AND ({})").format(sketched, where)
    return fetch_sql(info, first_block, end_block, sketched, part, extra)


def fetch_ranges(blocks: int) -> list[tuple[int, int | None]]:
    """Block ranges of the fetch statements; the last one is open (rows added since)."""
    starts = list(range(0, max(blocks, 1), FETCH_BLOCKS))
    return [(lo, starts[i + 1] if i + 1 < len(starts) else None) for i, lo in enumerate(starts)]


def copy_in_sql(info: IndexInfo, columns: Sequence[str], binary: bool = True) -> sql.Composed:
    """``COPY table (fingerprint column, *columns) FROM STDIN``, binary or text."""
    return sql.SQL("COPY {rel} ({cols}) FROM STDIN{fmt}").format(
        rel=info.relation,
        cols=sql.SQL(", ").join(sql.Identifier(c) for c in [info.column, *columns]),
        fmt=sql.SQL(" (FORMAT BINARY)" if binary else ""))


def stats_query(info: IndexInfo, exact: bool) -> tuple[sql.Composed, list[Any]]:
    """Rows (counted or estimated), table size, and the size of each prefix index.

    A partitioned table's sizes are its partitions' at every level, and so are its
    indexes' (pg_partition_tree, which lists nothing for a table not partitioned).
    """
    rows = (sql.SQL("(SELECT count(*) FROM {rel})").format(rel=info.relation) if exact
            else sql.SQL("greatest(c.reltuples, 0)::bigint"))
    statement = sql.SQL(
        "SELECT {rows}, coalesce((SELECT sum(pg_catalog.pg_table_size(m.relid))::bigint "
        "FROM pg_catalog.pg_partition_tree(c.oid) AS m), pg_catalog.pg_table_size(c.oid)), "
        "ARRAY(SELECT coalesce((SELECT sum(pg_catalog.pg_relation_size(m.relid))::bigint "
        "FROM pg_catalog.pg_partition_tree(x.oid) AS m), pg_catalog.pg_relation_size(x.oid), 0) "
        "FROM unnest(%s::name[]) WITH ORDINALITY AS u(name, o) "
        "LEFT JOIN pg_catalog.pg_class AS x ON x.relname = u.name AND x.relnamespace = c.relnamespace "
        "ORDER BY u.o) "
        "FROM pg_catalog.pg_class AS c WHERE c.oid = %s::regclass"
    ).format(rows=rows)
    return with_parameters(statement), [list(info.index_names), regclass_text(info)]
