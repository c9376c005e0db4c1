"""simpg for psycopg 3: handles on a table's fingerprint column (sync and async), Fingerprint.

``SimHashColumn`` is a live handle on one indexed fingerprint column, as against the
SQLAlchemy column type ``SimHash`` and index declaration ``SimHashIndex``. Its name
until 0.2 was ``SimIndex`` (``AsyncSimIndex``): both still work, with a
DeprecationWarning, until 0.3.

Example:
    >>> from simpg.psycopg import SimHashColumn
    >>> docs = SimHashColumn(conn, "docs", "simhash")  # doctest: +SKIP
    >>> docs.near_many([0x0123456789ABCDEF, 42], k=3)  # doctest: +SKIP
    [[Neighbor(id=1, distance=0)], []]
"""

from __future__ import annotations

import warnings
from typing import Any

from simpg.psycopg._common import Duplicate, Guard, IndexProblem, IndexStats, Inserted, Neighbor, Pair, near_duplicate
from simpg.psycopg.aio import AsyncSimHashColumn, configure_lookups_async
from simpg.psycopg.busywait import BusyWaitConnection
from simpg.psycopg.index import SimHashColumn, configure_lookups
from simpg.psycopg.queries import LOOKUP_SETTINGS
from simpg.psycopg.register import Fingerprint, register_simpg, register_simpg_async

__all__ = [
    "LOOKUP_SETTINGS",
    "AsyncSimHashColumn",
    "BusyWaitConnection",
    "Duplicate",
    "Fingerprint",
    "Guard",
    "IndexProblem",
    "IndexStats",
    "Inserted",
    "Neighbor",
    "Pair",
    "SimHashColumn",
    "configure_lookups",
    "configure_lookups_async",
    "near_duplicate",
    "register_simpg",
    "register_simpg_async",
]

_RENAMED = {"SimIndex": "SimHashColumn", "AsyncSimIndex": "AsyncSimHashColumn"}


def __getattr__(name: str) -> Any:
    # the names of 0.1 and 0.2, kept for one release
    if name in _RENAMED:
        warnings.warn(f"simpg.psycopg.{name} is now {_RENAMED[name]}; the old name goes in simpg 0.3",
                      DeprecationWarning, stacklevel=2)
        return globals()[_RENAMED[name]]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
