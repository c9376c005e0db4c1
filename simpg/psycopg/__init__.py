"""simpg for psycopg 3: index handles (sync and async), the all-pairs engine, Fingerprint.

Example:
    >>> from simpg.psycopg import SimIndex
    >>> docs = SimIndex(conn, "docs", "simhash")  # doctest: +SKIP
    >>> docs.near_many([0x0123456789ABCDEF, 42], k=3)  # doctest: +SKIP
    [[Neighbor(id=1, distance=0)], []]
"""

from __future__ import annotations

from simpg.psycopg._common import Duplicate, Guard, IndexProblem, IndexStats, Inserted, Neighbor, Pair, near_duplicate
from simpg.psycopg.aio import AsyncSimIndex, configure_lookups_async
from simpg.psycopg.busywait import BusyWaitConnection
from simpg.psycopg.index import SimIndex, configure_lookups
from simpg.psycopg.queries import LOOKUP_SETTINGS
from simpg.psycopg.register import Fingerprint, register_simpg, register_simpg_async

__all__ = [
    "LOOKUP_SETTINGS",
    "AsyncSimIndex",
    "BusyWaitConnection",
    "Duplicate",
    "Fingerprint",
    "Guard",
    "IndexProblem",
    "IndexStats",
    "Inserted",
    "Neighbor",
    "Pair",
    "SimIndex",
    "configure_lookups",
    "configure_lookups_async",
    "near_duplicate",
    "register_simpg",
    "register_simpg_async",
]
