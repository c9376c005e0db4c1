"""Everything simpg does with psycopg's private API: in this module only, on tested versions only.

psycopg documents ``Connection.pgconn`` (libpq) for "low level commands", but not the
protocol generators (``psycopg.generators``, ``psycopg.abc.PQGen``, ``psycopg.waiting``),
``Connection.wait`` or ``Connection.lock``. simpg uses them for two things whose gain
was measured (``bench/psycopg_api.py``):

1. **The lookup fast path** (:func:`near` / :func:`near_async`): a single ``near`` sent
   with ``PQsendQueryPrepared`` and read with psycopg's own protocol generator, under
   the connection's lock and through its ``wait()``, skipping the cursor. Against the
   best that psycopg's public API does (:class:`~simpg.psycopg.lookup.NearLookup`: a
   kept ``RawCursor``, binary, prepared), ``SimHashColumn.near`` takes less latency and
   client CPU (``bench/psycopg_api.py --public-apis``, docs/benchmarks.md). Only where it
   means exactly what the cursor would (:func:`usable`): integer ids, autocommit,
   outside transaction blocks (what lookup connections are).
2. **Polling for the answer** (:func:`poll_wait`, behind
   :class:`~simpg.psycopg.busywait.BusyWaitConnection`): psycopg has no public hook
   for how it waits; it shortens lookups with the server on other CPUs.

Both are accelerators over a public path that gives the same answers, and both are
on only for the psycopg versions this module was tested with (:data:`ENABLED`):
from :data:`OLDEST_TESTED` (the lowest version ``pyproject.toml`` allows, run by
tests/integration/test_psycopg_versions.py in a virtualenv of its own) to the
:data:`NEWEST_TESTED` minor series (the one the test suite runs on;
tests/unit/test_psycopg_internals.py fails when a newer psycopg is installed, so the
range is widened only after the suite passed on it). Outside that range, or with
``SIMPG_PSYCOPG_INTERNALS=0`` in the environment, simpg uses the public API alone:
a new psycopg release can make lookups slower, never wrong or broken.
"""

from __future__ import annotations

import itertools
import os
import select
import struct
import time
from collections.abc import Callable
from typing import Any, TypeVar

import psycopg
from psycopg import errors, generators
from psycopg.abc import PQGen
from psycopg.pq import ExecStatus, Format, PipelineStatus, TransactionStatus
from psycopg.waiting import Ready, Wait

from simpg import bits
from simpg.psycopg._common import nearest_first
from simpg.psycopg.catalog import IndexInfo
from simpg.psycopg.statements import near_sql
from simpg.results import Neighbor

__all__ = [
    "ENABLED",
    "NEWEST_TESTED",
    "OLDEST_TESTED",
    "NearStatement",
    "near",
    "near_async",
    "near_gen",
    "poll_wait",
    "tested",
    "usable",
]

RV = TypeVar("RV")

#: The oldest psycopg this module was tested with: pyproject.toml's lower bound.
OLDEST_TESTED = (3, 2, 0)
#: The newest minor series it was tested with (every patch release of it).
NEWEST_TESTED = (3, 3)


def _version(text: str) -> tuple[int, ...]:
    """``"3.2.10"`` -> ``(3, 2, 10)``; a pre-release or local suffix is dropped (``3.4.0.dev1`` -> 3.4.0)."""
    parts = []
    for piece in text.split(".")[:3]:
        digits = ""
        for ch in piece:
            if not ch.isdigit():
                break
            digits += ch
        parts.append(int(digits or 0))
    return tuple(parts)


def tested(version: str) -> bool:
    """Whether psycopg ``version`` is in the range this module was tested with."""
    v = _version(version)
    return OLDEST_TESTED <= v and v[:2] <= NEWEST_TESTED


#: Whether simpg uses psycopg's private API here (the installed version was tested, and
#: ``SIMPG_PSYCOPG_INTERNALS`` is not ``0``); else the public API alone.
ENABLED = tested(psycopg.__version__) and os.environ.get("SIMPG_PSYCOPG_INTERNALS", "1") != "0"


# -- 1. the lookup fast path ----------------------------------------------------------

_INT8 = struct.Struct(">q")
_INT8_OID, _INT8_ARRAY_OID = 20, 1016
_PARAM_TYPES = [_INT8_OID, _INT8_ARRAY_OID, _INT8_OID]  # q, lows, k
_BINARY = [Format.BINARY] * 3
# Statement names unique in this process: several handles may share a connection.
_names = itertools.count(1)


def usable(conn: psycopg.Connection[Any] | psycopg.AsyncConnection[Any], info: IndexInfo) -> bool:
    """Whether a lookup on ``conn`` may skip the cursor with the same meaning.

    Integer ids (read here without psycopg's loaders), no pipeline, and a connection in
    autocommit mode outside any transaction block. Not inside one: psycopg sends
    ``DEALLOCATE ALL`` when a transaction or savepoint rolls back (and after ``DROP`` or
    ``ALTER``) once it has prepared statements of its own, which removes this path's
    statement too; outside a transaction the lookup prepares it again and repeats
    itself, inside one the error would abort the caller's transaction (0.1.1 did; the
    public path's statements psycopg prepares again itself). Never outside the tested
    psycopg versions (:data:`ENABLED`).
    """
    if not ENABLED:
        return False
    pgconn = conn.pgconn
    return (info.integer_ids and conn.autocommit and not conn.closed
            and pgconn.transaction_status == TransactionStatus.IDLE
            and pgconn.pipeline_status == PipelineStatus.OFF)


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
        self.query = near_sql(info).as_bytes(conn)
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
    if the server lost it (``DISCARD ALL``, ``DEALLOCATE``, psycopg's own ``DEALLOCATE
    ALL`` after a rollback) while no transaction was open that the error would have
    aborted (:func:`usable` takes this path only outside transactions).
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
        found.sort(key=nearest_first)
        return found
    raise AssertionError("unreachable")


def near(conn: psycopg.Connection[Any], statement: NearStatement, fp: int, k: int) -> list[Neighbor] | None:
    """One lookup on the fast path, or None where it would not mean what the cursor does."""
    with conn.lock:
        if not usable(conn, statement.info):
            return None
        return conn.wait(near_gen(statement, conn, statement.params(fp, k)))


async def near_async(conn: psycopg.AsyncConnection[Any], statement: NearStatement, fp: int,
                     k: int) -> list[Neighbor] | None:
    """:func:`near` on an async connection."""
    async with conn.lock:
        if not usable(conn, statement.info):
            return None
        return await conn.wait(near_gen(statement, conn, statement.params(fp, k)))


def _integer(value: bytes | None) -> int | None:
    """A binary int2, int4 or int8 (NULL: None)."""
    return None if value is None else int.from_bytes(value, "big", signed=True)


def _check(results: list[Any], status: ExecStatus,
           conn: psycopg.Connection[Any] | psycopg.AsyncConnection[Any]) -> Any:
    """The one result of a statement, or the error it carries, as psycopg raises it."""
    result = results[-1]
    if result.status != status:
        if result.status == ExecStatus.FATAL_ERROR:
            raise errors.error_from_result(result, encoding=conn.info.encoding)
        raise psycopg.InterfaceError(f"unexpected result {ExecStatus(result.status).name} from a simpg lookup")
    return result


# -- 2. polling for the answer ----------------------------------------------------------

# psycopg's generators yield what they wait for (Wait) and take what is ready (Ready):
# flags with the values of selectors.EVENT_READ and EVENT_WRITE.
_READ, _WRITE = int(Ready.R), int(Ready.W)
#: Windows has neither poll() nor sched_yield(): there the connection waits as psycopg does.
CAN_POLL = hasattr(select, "poll")
_BROKEN = (select.POLLERR | select.POLLHUP | select.POLLNVAL) if CAN_POLL else 0
_yield_cpu = getattr(os, "sched_yield", lambda: None)


def poll_wait(conn: psycopg.Connection[Any], gen: PQGen[RV], budget: float,
              psycopg_wait: Callable[..., RV], args: tuple[Any, ...], kwargs: dict[str, Any]) -> RV:
    """Drive ``gen`` (psycopg's protocol generator) polling for up to ``budget`` seconds.

    Then, or when the socket reports an error, hands the rest to ``psycopg_wait``
    (psycopg's own ``Connection.wait``, with the caller's ``args`` and ``kwargs``).
    """
    fileno = conn.pgconn.socket
    poller = select.poll()
    deadline = time.perf_counter() + budget
    try:
        waiting_for = next(gen)
        poller.register(fileno, _poll_mask(waiting_for))
        try:
            while time.perf_counter() < deadline:
                events = poller.poll(0)
                if not events:
                    # The server process may have been woken on this very CPU: let it run.
                    _yield_cpu()
                    continue
                event = events[0][1]
                if event & _BROKEN:
                    break  # psycopg's wait reports a closed or broken socket
                ready = (_READ if event & select.POLLIN else 0) | (_WRITE if event & select.POLLOUT else 0)
                waiting_for = gen.send(Ready(ready))
                poller.modify(fileno, _poll_mask(waiting_for))
        except KeyboardInterrupt:
            # As psycopg's wait does on Ctrl-C: cancel the statement and finish the
            # exchange, so that the connection is not left busy.
            cancel = getattr(conn, "cancel_safe", None) or conn.cancel
            cancel()
            try:
                psycopg_wait(_resume(gen, waiting_for), *args, **kwargs)
            except psycopg.Error:
                pass  # the cancellation itself ("canceling statement due to user request")
            raise
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]
    return psycopg_wait(_resume(gen, waiting_for), *args, **kwargs)


def _poll_mask(waiting_for: int) -> int:
    """poll() events for what a psycopg generator waits for."""
    return (select.POLLIN if waiting_for & _READ else 0) | (select.POLLOUT if waiting_for & _WRITE else 0)


def _resume(gen: PQGen[RV], waiting_for: Wait) -> PQGen[RV]:
    """``gen`` continued from a yield already taken: yields ``waiting_for`` first."""
    while True:
        ready = yield waiting_for
        try:
            waiting_for = gen.send(ready)
        except StopIteration as done:
            return done.value  # type: ignore[no-any-return]
