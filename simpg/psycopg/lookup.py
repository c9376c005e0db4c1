"""A single ``near``: psycopg's public API, and the measured fast path where it is tested.

A lookup at 10M rows is a round trip of a few tenths of a millisecond, and the client's
share of it is mostly psycopg's cursor: making one, adapting the parameters, loading
the rows. :class:`NearLookup` (and :class:`AsyncNearLookup`), one per handle, do the
least that psycopg's public API allows: one :class:`psycopg.RawCursor` kept for the
handle (``$1..$3``: no query conversion), parameters already in the binary format (one
``bigint[]`` of range starts, :mod:`simpg.psycopg.wire`), the statement prepared
(``prepare=True``, what ``prepare_threshold=0`` does), binary rows, and for integer ids
no ``ORDER BY``: Python sorts the handful of rows (cheaper than the server's Sort node;
other ids are ordered by the server, whose collation decides). A lock per handle keeps
the cursor to one lookup at a time when threads (or tasks) share a handle.

Side by side on one lookup connection (``bench/psycopg_api.py --public-apis``), that is
the best public form: a ``RawCursor`` made per lookup, or a cursor in pipeline mode, is
slower than a kept one. Still, skipping the cursor altogether
(:mod:`simpg.psycopg._internals`: ``PQsendQueryPrepared`` driven by psycopg's private
protocol generator) is faster and uses less client CPU (docs/benchmarks.md); so
for integer ids on a connection in autocommit mode, on the psycopg versions that module
was tested with, :class:`NearLookup` takes that path, and this public one everywhere
else (in transactions, pipelines, for other ids, on other psycopg versions).

The public path follows the cursor's rules: on an idle connection without autocommit
it opens the transaction the caller then commits, in a failed transaction it raises
``InFailedSqlTransaction``, in pipeline mode it syncs, and psycopg's prepared-statement
cache notices ``DISCARD ALL`` / ``DEALLOCATE ALL`` sent through the connection.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import psycopg
from psycopg.rows import TupleRow, tuple_row
from psycopg.types.numeric import Int8

from simpg import bits
from simpg.psycopg import _internals
from simpg.psycopg._common import nearest_first
from simpg.psycopg._internals import NearStatement, near_gen, usable  # 0.1.1's names, importable here
from simpg.psycopg.catalog import IndexInfo
from simpg.psycopg.statements import near_sql
from simpg.results import Neighbor

__all__ = ["AsyncNearLookup", "NearLookup", "NearStatement", "near_gen", "usable"]


def near_query(info: IndexInfo, conn: psycopg.Connection[Any] | psycopg.AsyncConnection[Any]) -> bytes:
    """The statement a lookup sends: ``$1..$3``, ordered by the server unless the ids are integers."""
    return near_sql(info, ordered=not info.integer_ids).as_bytes(conn)


def near_args(info: IndexInfo, fp: int, k: int) -> list[Any]:
    """``$1..$3`` for an unsigned fingerprint: the signed fingerprint, each table's range start, ``k``.

    The range starts go as one ready-made binary ``bigint[]``
    (:class:`~simpg.psycopg.wire.Int8Array`, whose dumper the handles register).
    """
    return [Int8(bits.to_db(fp)), info.ranges.lows_array(fp), Int8(k)]


def neighbors(rows: list[TupleRow], info: IndexInfo) -> list[Neighbor]:
    """The rows as neighbours, nearest first: sorted here for integer ids (the server sorted others)."""
    found = [Neighbor(id_, distance) for id_, distance in rows]
    if info.integer_ids:
        found.sort(key=nearest_first)
    return found


class _Kept:
    """What the lookups of one handle keep between calls, and which path each takes."""

    def __init__(self) -> None:
        self._info: IndexInfo | None = None
        self._query = b""
        self._fast: NearStatement | None = None

    def _fast_statement(self, conn: psycopg.Connection[Any] | psycopg.AsyncConnection[Any], info: IndexInfo,
                        prepare: bool) -> NearStatement | None:
        """The fast path's statement for ``info``, or None: the public path (with ``_query``)."""
        if self._info is not info:  # composing the OR of ten ranges costs more than planning it
            self._query, self._info = near_query(info, conn), info
            self._fast = NearStatement(info, conn, prepare) if info.integer_ids else None
        if self._fast is None or not _internals.ENABLED:
            return None
        if bool(self._fast.name) != prepare:  # the handle's prepare changed
            self._fast = NearStatement(info, conn, prepare)
        return self._fast


class NearLookup(_Kept):
    """The single lookups of one handle, on one connection, through a kept :class:`psycopg.RawCursor`.

    Args:
        conn: the handle's connection (with :func:`~simpg.psycopg.wire.register_dumpers` applied).
    """

    def __init__(self, conn: psycopg.Connection[Any]) -> None:
        super().__init__()
        self.conn = conn
        self._cursor: psycopg.RawCursor[TupleRow] | None = None
        self._lock = threading.Lock()

    def near(self, info: IndexInfo, fp: int, k: int, *, prepare: bool = True) -> list[Neighbor]:
        """Rows within ``k`` of the unsigned ``fp`` (checked by the caller), nearest first, then by id."""
        fast = self._fast_statement(self.conn, info, prepare)
        if fast is not None:
            found = _internals.near(self.conn, fast, fp, k)
            if found is not None:
                return found
        args = near_args(info, fp, k)
        with self._lock:
            cur = self._cursor
            if cur is None or cur.closed:
                cur = self._cursor = psycopg.RawCursor(self.conn, row_factory=tuple_row)
            cur.execute(self._query, args, prepare=prepare, binary=True)
            rows = cur.fetchall()
        return neighbors(rows, info)


class AsyncNearLookup(_Kept):
    """:class:`NearLookup` for an :class:`psycopg.AsyncConnection` (a kept :class:`psycopg.AsyncRawCursor`)."""

    def __init__(self, conn: psycopg.AsyncConnection[Any]) -> None:
        super().__init__()
        self.conn = conn
        self._cursor: psycopg.AsyncRawCursor[TupleRow] | None = None
        self._lock: asyncio.Lock | None = None  # made in the running loop, at the first lookup

    async def near(self, info: IndexInfo, fp: int, k: int, *, prepare: bool = True) -> list[Neighbor]:
        """Rows within ``k`` of the unsigned ``fp`` (checked by the caller), nearest first, then by id."""
        fast = self._fast_statement(self.conn, info, prepare)
        if fast is not None:
            found = await _internals.near_async(self.conn, fast, fp, k)
            if found is not None:
                return found
        args = near_args(info, fp, k)
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            cur = self._cursor
            if cur is None or cur.closed:
                cur = self._cursor = psycopg.AsyncRawCursor(self.conn, row_factory=tuple_row)
            await cur.execute(self._query, args, prepare=prepare, binary=True)
            rows = await cur.fetchall()
        return neighbors(rows, info)
