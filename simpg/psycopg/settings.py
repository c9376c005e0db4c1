"""Planner settings that simpg's statements run under: a lookup connection's, and local ones.

Names and values are bound as parameters of ``pg_catalog.set_config`` and
``pg_catalog.current_setting`` (``%s``): the statement text is constant and nothing is
quoted client-side. The ``*_SQL`` / ``sql`` / ``restore_sql`` forms with the names and
values as quoted literals are kept for code written against 0.1.1.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from psycopg import sql

__all__ = [
    "FETCH_SETTINGS",
    "LOOKUP",
    "LOOKUP_SETTINGS",
    "LOOKUP_SETTINGS_SQL",
    "NEAR_MANY_SETTINGS",
    "LocalSettings",
    "SessionSettings",
]


def _set_config(count: int, local: bool) -> sql.Composed:
    """``set_config(%s, %s, local)`` ``count`` times, comma-separated."""
    one = sql.SQL("pg_catalog.set_config(%s, %s, {})").format(sql.SQL("true" if local else "false"))
    return sql.SQL(", ").join([one] * count)


class SessionSettings:
    """Settings for the rest of the session (``set_config(..., false)``), one statement.

    Run ``cursor.execute(settings.statement, settings.params)``.
    """

    def __init__(self, **settings: str) -> None:
        self.settings = dict(settings)
        self.statement: sql.Composed = sql.SQL("SELECT {}").format(_set_config(len(settings), local=False))
        self.params: list[str] = [x for item in settings.items() for x in item]


class LocalSettings:
    """Planner settings changed for one statement, in the transaction around it.

    ``statement`` (with ``params``) reads the current values and sets the new ones
    locally (``set_config(..., true)``); inside the caller's transaction (a savepoint)
    a local setting would outlive the savepoint, so ``restore_statement`` with
    ``restore_params(saved)`` (the values read) puts them back.
    """

    def __init__(self, **settings: str) -> None:
        names = list(settings)
        self.names = names
        self.count = len(names)
        self.statement: sql.Composed = sql.SQL("SELECT {}").format(sql.SQL(", ").join(
            [sql.SQL("pg_catalog.current_setting(%s)")] * len(names) + [_set_config(len(names), local=True)]))
        self.params: list[str] = names + [x for item in settings.items() for x in item]
        self.restore_statement: sql.Composed = sql.SQL("SELECT {}").format(_set_config(len(names), local=True))
        # 0.1.1's forms: the names (and new values) as quoted literals
        self.sql: sql.Composed = sql.SQL("SELECT {}").format(sql.SQL(", ").join(
            [sql.SQL("pg_catalog.current_setting({})").format(sql.Literal(n)) for n in names]
            + [sql.SQL("pg_catalog.set_config({}, {}, true)").format(sql.Literal(n), sql.Literal(v))
               for n, v in settings.items()]))
        self.restore_sql: sql.Composed = sql.SQL("SELECT {}").format(sql.SQL(", ").join(
            sql.SQL("pg_catalog.set_config({}, %s, true)").format(sql.Literal(n)) for n in names))

    def restore_params(self, saved: Sequence[Any]) -> list[Any]:
        """Parameters of ``restore_statement`` from the first row ``statement`` returned."""
        return [x for pair in zip(self.names, saved[: self.count], strict=True) for x in pair]


#: Session settings of a connection that serves simpg lookups (SimHashColumn.connect,
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
#: :data:`LOOKUP_SETTINGS` as one statement with bound parameters.
LOOKUP = SessionSettings(**LOOKUP_SETTINGS)
#: Apply :data:`LOOKUP_SETTINGS` to the session (0.1.1's form: the values as literals).
LOOKUP_SETTINGS_SQL: sql.Composed = sql.SQL("SELECT {}").format(sql.SQL(", ").join(
    sql.SQL("pg_catalog.set_config({}, {}, false)").format(sql.Literal(name), sql.Literal(value))
    for name, value in LOOKUP_SETTINGS.items()))

#: near_many's statement: index probes only (see :mod:`simpg.psycopg.statements`).
NEAR_MANY_SETTINGS = LocalSettings(enable_seqscan="off", jit="off")
#: fetch_all's statements read whole tables: a sequential scan, even on a connection
#: with :data:`LOOKUP_SETTINGS`.
FETCH_SETTINGS = LocalSettings(enable_seqscan="on")
