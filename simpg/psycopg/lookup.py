"""A single ``near`` sent straight through psycopg's libpq layer: the lookup fast path.

A lookup at 10M rows is a round trip of a few tenths of a millisecond, and psycopg's
cursor (adapting the parameters, the prepared-statement cache, loading the rows)
was about a tenth of it. For tables with integer ids the handles skip the cursor: the
parameters are already bytes in the binary format (:class:`NearStatement`), the
statement is prepared once under a name of its own, and :func:`near_gen` drives
``PQsendQueryPrepared`` with psycopg's own protocol generator, so the connection's
``wait()`` (Ctrl-C cancels, :class:`~simpg.psycopg.busywait.BusyWaitConnection`
polls) does the waiting as for any statement. The statement has no ``ORDER BY``:
sorting a handful of rows in Python is cheaper than the server's Sort node.
``bench/psycopg_api.py`` measures this path against the cursor.

The handles take this path only where it means the same as the cursor would:
integer ids (they are read without psycopg's loaders), no pipeline, and a
connection in autocommit mode or in a transaction that has not failed (on an idle
connection without autocommit psycopg first opens a transaction; a closed connection
or a failed transaction the cursor reports as psycopg does).
"""

from __future__ import annotations

import itertools
import struct
from typing import Any

import psycopg
from psycopg import errors, generators
from psycopg.abc import PQGen
from psycopg.pq import ExecStatus, Format, PipelineStatus, TransactionStatus

from simpg import bits
from simpg.psycopg._common import Neighbor
from simpg.psycopg.queries import INTEGER_TYPES, IndexInfo, near_sql

__all__ = ["NearStatement", "near_gen", "usable"]

_INT8 = struct.Struct(">q")
_INT8_OID, _INT8_ARRAY_OID = 20, 1016
_PARAM_TYPES = [_INT8_OID, _INT8_ARRAY_OID, _INT8_OID]  # q, lows, k
_BINARY = [Format.BINARY] * 3
# Statement names unique in this process: several handles may share a connection.
_names = itertools.count(1)


def usable(conn: psycopg.Connection[Any] | psycopg.AsyncConnection[Any], info: IndexInfo) -> bool:
    """Whether a lookup on ``conn`` may skip the cursor with the same meaning (see the module doc)."""
    pgconn = conn.pgconn
    status = pgconn.transaction_status
    return (info.id_type in INTEGER_TYPES
            and not conn.closed and status != TransactionStatus.INERROR  # psycopg's cursor says so
            and pgconn.pipeline_status == PipelineStatus.OFF
            and (conn.autocommit or status != TransactionStatus.IDLE))


class NearStatement:
    """The ``near`` statement of one layout, as the bytes libpq sends.

    Args:
        info: the index whose lookups it runs.
        conn: the connection (for the client encoding of names in the SQL).
        prepare: prepare it on the server under a name (else parsed at every call).
    """

    def __init__(self, info: IndexInfo, conn: psycopg.Connection[Any] | psycopg.AsyncConnection[Any],
                 prepare: bool) -> None:
        self.info = info
        self.query = near_sql(info, numbered=True).as_bytes(conn)
        self.name = b""  # b"": the unnamed statement, parsed with each call
        self.prepared = False  # on the server; cleared when the server says it has not got it
        if prepare:
            self.rename()

    def rename(self) -> None:
        """Take a name no statement of this process had."""
        self.name = f"simpg_near_{next(_names)}".encode()
        self.prepared = False

    def params(self, fingerprint: int, k: int) -> list[bytes]:
        """``$1..$3`` in the binary format: the signed fingerprint, each table's range start, k."""
        return [_INT8.pack(bits.to_db(fingerprint)), self.info.ranges.lows_array(fingerprint).payload,
                _INT8.pack(k)]


def near_gen(statement: NearStatement, conn: psycopg.Connection[Any] | psycopg.AsyncConnection[Any],
             params: list[bytes]) -> PQGen[list[Neighbor]]:
    """One lookup as a psycopg protocol generator (run it with ``conn.wait``).

    Prepares the statement first if the server does not have it yet, and again once
    if the server lost it (``DISCARD ALL``, ``DEALLOCATE``) while no transaction was
    open that the error would have aborted.
    """
    pgconn = conn.pgconn
    for attempt in (1, 2):
        if statement.name and not statement.prepared:
            pgconn.send_prepare(statement.name, statement.query, param_types=_PARAM_TYPES)
            try:
                _check((yield from generators.execute(pgconn)), ExecStatus.COMMAND_OK, conn)
            except BaseException:
                statement.rename()  # interrupted, the server may have it: never send a name twice
                raise
            statement.prepared = True
        if statement.name:
            pgconn.send_query_prepared(statement.name, params, param_formats=_BINARY, result_format=Format.BINARY)
        else:
            pgconn.send_query_params(statement.query, params, param_types=_PARAM_TYPES, param_formats=_BINARY,
                                     result_format=Format.BINARY)
        try:
            result = _check((yield from generators.execute(pgconn)), ExecStatus.TUPLES_OK, conn)
        except errors.InvalidSqlStatementName:
            statement.prepared = False
            if attempt == 2 or pgconn.transaction_status == TransactionStatus.INERROR:
                raise
            continue
        found = [Neighbor(_integer(result.get_value(i, 0)), _integer(result.get_value(i, 1)) or 0)
                 for i in range(result.ntuples)]  # a distance is never NULL (hamming <= k held)
        found.sort(key=_nearest_first)
        return found
    raise AssertionError("unreachable")


def _integer(value: bytes | None) -> int | None:
    """A binary int2, int4 or int8 (NULL: None)."""
    return None if value is None else int.from_bytes(value, "big", signed=True)


def _nearest_first(row: Neighbor) -> tuple[int, bool, int]:
    """The cursor path's ``ORDER BY distance, id``: by distance, then id, a NULL id last."""
    return row.distance, row.id is None, row.id or 0


def _check(results: list[Any], status: ExecStatus,
           conn: psycopg.Connection[Any] | psycopg.AsyncConnection[Any]) -> Any:
    """The one result of a statement, or the error it carries, as psycopg raises it."""
    result = results[-1]
    if result.status != status:
        if result.status == ExecStatus.FATAL_ERROR:
            raise errors.error_from_result(result, encoding=conn.info.encoding)
        raise psycopg.InterfaceError(f"unexpected result {ExecStatus(result.status).name} from a simpg lookup")
    return result
