"""simpg for psycopg 3: handles on a table's fingerprint or passage column (sync and async), Fingerprint.

``SimHashColumn`` is a live handle on one indexed fingerprint column, ``PassageColumn`` on
one passage column (partial duplicates, docs/partial.md), as against the
SQLAlchemy column type ``SimHash`` and index declaration ``SimHashIndex``. The result
types (:mod:`simpg.results`) and ``near_duplicate`` (:mod:`simpg.exc`) are re-exported here.

Example:
    >>> from simpg.psycopg import SimHashColumn
    >>> docs = SimHashColumn(conn, "docs", "simhash")  # doctest: +SKIP
    >>> docs.near_many([0x0123456789ABCDEF, 42], k=3)  # doctest: +SKIP
    [[Neighbor(id=1, distance=0)], []]
"""

from __future__ import annotations

from simpg.exc import near_duplicate
from simpg.psycopg.aio import AsyncSimHashColumn, configure_lookups_async
from simpg.psycopg.busywait import BusyWaitConnection
from simpg.psycopg.index import SimHashColumn, configure_lookups
from simpg.psycopg.passage_aio import AsyncPassageColumn
from simpg.psycopg.passage_index import PassageColumn
from simpg.psycopg.register import Fingerprint, register_simpg, register_simpg_async
from simpg.psycopg.settings import LOOKUP_SETTINGS
from simpg.results import (
    Duplicate,
    Guard,
    IndexProblem,
    IndexStats,
    Inserted,
    Neighbor,
    Pair,
    PassageIndex,
    PassageMatch,
    PassageMatches,
    SharedPassage,
)

__all__ = [
    "LOOKUP_SETTINGS",
    "AsyncPassageColumn",
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
    "PassageColumn",
    "PassageIndex",
    "PassageMatch",
    "PassageMatches",
    "SharedPassage",
    "SimHashColumn",
    "configure_lookups",
    "configure_lookups_async",
    "near_duplicate",
    "register_simpg",
    "register_simpg_async",
]
