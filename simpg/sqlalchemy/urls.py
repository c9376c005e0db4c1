"""SQLAlchemy URLs from libpq connection strings (what ``--dsn`` and $SIMPG_DSN hold).

Example:
    >>> url_from_dsn("host=/tmp/sock port=5433 user=app dbname=news").render_as_string()
    'postgresql+psycopg://app@/news?host=%2Ftmp%2Fsock&port=5433'
"""

from __future__ import annotations

import psycopg
from sqlalchemy.engine import URL

__all__ = ["url_from_dsn"]


def url_from_dsn(dsn: str, *, async_: bool = False) -> URL:
    """A ``postgresql+psycopg`` (or ``+psycopg_async``) URL for a libpq DSN.

    Host and port travel as query parameters, which psycopg passes to libpq as they
    are: that keeps Unix socket folders (``host=/tmp/x``) and multi-host lists intact.
    """
    info = {k: str(v) for k, v in psycopg.conninfo.conninfo_to_dict(dsn).items()}
    user = info.pop("user", None)
    password = info.pop("password", None)
    dbname = info.pop("dbname", None)
    return URL.create(
        "postgresql+psycopg_async" if async_ else "postgresql+psycopg",
        username=user,
        password=password,
        database=dbname,
        query=info,
    )
