"""Engines kept for lookups: an ORM lookup that runs a prepared plan instead of planning anew.

A web app's ``Session`` ends each request with a ROLLBACK, and psycopg deallocates its
prepared statements at every rollback: each request's ``within()`` is parsed and planned
again (5.9 times the raw prepared statement at 1M rows, bench/lookup_overheads.py). An
engine kept for lookups runs in autocommit, so no BEGIN and no ROLLBACK reach the
server and psycopg keeps the statements it prepares (after ``prepare_threshold``
executions, 5 by default), and its connections carry
:data:`simpg.psycopg.LOOKUP_SETTINGS`, so PostgreSQL runs one generic plan of each
(2.6 times the raw statement on the same run). Keep writes on another engine: in
autocommit every statement commits at once.

Example:
    >>> from simpg.sqlalchemy import lookup_engine
    >>> engine = lookup_engine("postgresql+psycopg://app@/news")  # doctest: +SKIP
    >>> with Session(engine) as session:  # doctest: +SKIP
    ...     session.scalars(select(Article).where(Article.simhash.within(fp, 3))).all()
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import URL
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from simpg.psycopg.settings import LOOKUP_SETTINGS_SQL

__all__ = ["async_lookup_engine", "lookup_engine"]


def _checked(kwargs: dict[str, Any]) -> dict[str, Any]:
    level = kwargs.pop("isolation_level", "AUTOCOMMIT")
    if level != "AUTOCOMMIT":
        raise ValueError(f"a lookup engine runs in autocommit, got isolation_level={level!r}; "
                         "use create_engine for transactions")
    return {**kwargs, "isolation_level": "AUTOCOMMIT"}


def _apply_lookup_settings(dbapi_connection: Any, _record: Any) -> None:
    """Give a new connection LOOKUP_SETTINGS, for its whole session."""
    cursor = dbapi_connection.cursor()
    try:
        cursor.execute(LOOKUP_SETTINGS_SQL)
    finally:
        cursor.close()
    # SQLAlchemy turns autocommit on after this event: commit, or the settings would
    # go with the transaction psycopg opened for them
    dbapi_connection.commit()


def lookup_engine(url: str | URL, **kwargs: Any) -> Engine:
    """``create_engine(url, **kwargs)`` for simpg lookups: autocommit, :data:`~simpg.psycopg.LOOKUP_SETTINGS`.

    ``url`` is a ``postgresql+psycopg`` URL (:func:`simpg.sqlalchemy.url_from_dsn` makes
    one from a libpq DSN); ``isolation_level`` other than ``"AUTOCOMMIT"`` is refused.
    """
    engine = create_engine(url, **_checked(kwargs))
    event.listen(engine, "connect", _apply_lookup_settings)
    return engine


def async_lookup_engine(url: str | URL, **kwargs: Any) -> AsyncEngine:
    """:func:`lookup_engine` for ``AsyncSession``: ``create_async_engine`` with a ``postgresql+psycopg_async`` URL."""
    engine = create_async_engine(url, **_checked(kwargs))
    event.listen(engine.sync_engine, "connect", _apply_lookup_settings)
    return engine
