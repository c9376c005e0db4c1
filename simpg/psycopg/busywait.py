"""A psycopg connection that polls for the server's answer before it sleeps.

A single ``near`` is a round trip of a few hundred microseconds. psycopg waits for
the answer in ``poll()``, so the client thread sleeps and the kernel wakes it when the
bytes arrive; on small virtual machines that wake-up is a large part of a round trip.
:class:`BusyWaitConnection` polls the socket without sleeping for up to
:attr:`~BusyWaitConnection.busy_wait` seconds, then falls back to psycopg's own wait.

Use it where the server does not run on the client's CPUs (another host, or processes
pinned apart). Where client and server share their CPUs it gains only with lookups back
to back, and loses with lookups apart (docs/python.md, docs/benchmarks.md). The client's CPU is busy
meanwhile. There is no async twin: spinning would block the event loop.

psycopg has no public hook for how a connection waits: the polling itself
(:func:`simpg.psycopg._internals.poll_wait`) drives psycopg's private protocol
generators, and runs only on the psycopg versions that module was tested with; on
others a :class:`BusyWaitConnection` waits as any psycopg connection does.

Example:
    >>> from psycopg_pool import ConnectionPool  # doctest: +SKIP
    >>> from simpg.psycopg import BusyWaitConnection, configure_lookups
    >>> pool = ConnectionPool("dbname=app", connection_class=BusyWaitConnection,
    ...                       configure=configure_lookups)  # doctest: +SKIP
"""

from __future__ import annotations

from typing import Any

import psycopg
from psycopg.rows import Row

from simpg.exc import SimpgError
from simpg.psycopg import _internals

__all__ = ["DEFAULT_BUSY_WAIT", "BusyWaitConnection", "check_busy_wait"]

#: Seconds polled before sleeping: a single lookup answers well within it, and it bounds
#: the CPU burnt on slower answers.
DEFAULT_BUSY_WAIT = 0.001


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

    def wait(self, gen: Any, *args: Any, **kwargs: Any) -> Any:
        """Drive ``gen`` (psycopg's protocol generator), polling first, then psycopg's wait."""
        budget = check_busy_wait(self.busy_wait)
        if not budget or not _internals.CAN_POLL or not _internals.ENABLED:
            return super().wait(gen, *args, **kwargs)
        return _internals.poll_wait(self, gen, budget, super().wait, args, kwargs)
