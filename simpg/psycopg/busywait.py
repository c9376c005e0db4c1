"""A psycopg connection that polls for the server's answer before it sleeps.

A single ``near`` is a round trip of a few hundred microseconds. psycopg waits for
the answer in ``poll()``, so the client thread sleeps and the kernel wakes it when the
bytes arrive; on the 2-core virtual machines of docs/benchmarks.md that wake-up is a
large part of a round trip (a prepared ``SELECT 1`` took 0.101 ms so, 0.064 polled).
:class:`BusyWaitConnection` polls the socket without sleeping for up to
:attr:`~BusyWaitConnection.busy_wait` seconds, then falls back to psycopg's own wait.

Use it where the server does not run on the client's CPUs (another host, or processes
pinned apart): there a lookup took 0.80-0.82 times as long at 1M rows. Where client
and server share two CPUs it gained only with lookups back to back (0.81), and lost
5% with lookups 0.5 or 2 ms apart (docs/python.md). The client's CPU is busy
meanwhile. There is no async twin: spinning would block the event loop.

Example:
    >>> from psycopg_pool import ConnectionPool  # doctest: +SKIP
    >>> from simpg.psycopg import BusyWaitConnection, configure_lookups
    >>> pool = ConnectionPool("dbname=app", connection_class=BusyWaitConnection,
    ...                       configure=configure_lookups)  # doctest: +SKIP
"""

from __future__ import annotations

import os
import select
import time
from typing import Any, TypeVar

import psycopg
from psycopg.abc import PQGen
from psycopg.rows import Row
from psycopg.waiting import Ready, Wait

from simpg.exc import SimpgError

__all__ = ["DEFAULT_BUSY_WAIT", "BusyWaitConnection", "check_busy_wait"]

RV = TypeVar("RV")

#: Seconds polled before sleeping: a single lookup at 10M rows answers within
#: 0.2-0.4 ms, so 1 ms covers nearly all of them and bounds the CPU burnt on others.
DEFAULT_BUSY_WAIT = 0.001

# psycopg's generators yield what they wait for (Wait) and take what is ready (Ready):
# flags with the values of selectors.EVENT_READ and EVENT_WRITE.
_READ, _WRITE = int(Ready.R), int(Ready.W)
# Windows has neither poll() nor sched_yield(): there the connection waits as psycopg does.
_CAN_POLL = hasattr(select, "poll")
_BROKEN = (select.POLLERR | select.POLLHUP | select.POLLNVAL) if _CAN_POLL else 0
_yield_cpu = getattr(os, "sched_yield", lambda: None)


def check_busy_wait(seconds: Any) -> float:
    """``seconds`` as a float if it is a usable busy-wait budget, else an error naming it."""
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not 0 <= seconds <= 1:
        raise SimpgError(f"busy_wait must be a number of seconds from 0 to 1, got {seconds!r}")
    return float(seconds)


class BusyWaitConnection(psycopg.Connection[Row]):
    """:class:`psycopg.Connection` that polls for up to :attr:`busy_wait` seconds before sleeping.

    Everything else is psycopg's: a statement that takes longer than the budget waits
    as on any connection, and errors, timeouts and Ctrl-C behave the same.
    """

    #: Seconds to poll before sleeping; 0 waits as psycopg does. Set it on an instance,
    #: or on a subclass for a pool's ``connection_class``.
    busy_wait: float = DEFAULT_BUSY_WAIT

    def wait(self, gen: PQGen[RV], *args: Any, **kwargs: Any) -> RV:
        """Drive ``gen`` (psycopg's protocol generator), polling first, then psycopg's wait."""
        budget = check_busy_wait(self.busy_wait)
        if not budget or not _CAN_POLL:
            return super().wait(gen, *args, **kwargs)
        fileno = self.pgconn.socket
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
                cancel = getattr(self, "cancel_safe", None) or self.cancel
                cancel()
                try:
                    super().wait(_resume(gen, waiting_for), *args, **kwargs)
                except psycopg.Error:
                    pass  # the cancellation itself ("canceling statement due to user request")
                raise
        except StopIteration as done:
            return done.value  # type: ignore[no-any-return]
        return super().wait(_resume(gen, waiting_for), *args, **kwargs)


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
