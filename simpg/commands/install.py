"""``simpg sql``, ``simpg install``, ``simpg install-extension``, ``simpg upgrade``."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from simpg import schema
from simpg.commands._common import add_dsn_argument
from simpg.exc import SimpgError


def register(subparsers: Any) -> None:
    """Add the install commands."""
    sql = subparsers.add_parser("sql", help="print the install script (plain SQL)")
    sql.set_defaults(func=run_sql)

    install = subparsers.add_parser(
        "install", help="install simpg into a database (CREATE EXTENSION, else a plain SQL script)")
    add_dsn_argument(install)
    mode = install.add_mutually_exclusive_group()
    mode.add_argument("--plain", action="store_true",
                      help="run the install script as plain SQL (managed PostgreSQL)")
    mode.add_argument("--extension", action="store_true", help="require CREATE EXTENSION")
    install.set_defaults(func=run_install)

    files = subparsers.add_parser(
        "install-extension", help="copy simpg.control and the scripts into the server's extension directory")
    files.add_argument("--pg-config", help="pg_config of the target server (default: on PATH)")
    files.set_defaults(func=run_install_extension)

    upgrade = subparsers.add_parser(
        "upgrade", help="ALTER EXTENSION simpg UPDATE (a plain install: the same upgrade scripts)")
    add_dsn_argument(upgrade)
    upgrade.add_argument("--to", help="target version (default: the newest the server has, "
                                      "or this package's for a plain install)")
    upgrade.set_defaults(func=run_upgrade)


def _connect(args: argparse.Namespace) -> Any:
    import psycopg

    if not args.dsn:
        raise SimpgError("no database given; pass --dsn or set SIMPG_DSN")
    return psycopg.connect(args.dsn, autocommit=True)


def run_sql(args: argparse.Namespace) -> int:
    """Print the plain install script."""
    sys.stdout.write(schema.psql_script())
    return 0


def run_install(args: argparse.Namespace) -> int:
    """Install into --dsn."""
    with _connect(args) as conn:
        before = schema.installed_version(conn)
        as_extension = conn.execute(
            "SELECT 1 FROM pg_catalog.pg_extension WHERE extname = 'simpg'").fetchone() is not None
        if before is not None and args.extension and not as_extension:
            raise SimpgError(
                # sql-text: a message, never run
                f"simpg {before} is installed here as a plain script, not with CREATE EXTENSION; "
                "use it as it is (run without --extension), or remove the plain install "
                "before installing the extension")
        plain = True if args.plain else (False if args.extension else None)
        version = schema.install(conn, plain=plain)
    if before:
        how = "as an extension" if as_extension else "as a plain script"
        print(f"simpg {version} was already installed ({how})")
    else:
        print(f"simpg {version} is now installed")
    return 0


def run_install_extension(args: argparse.Namespace) -> int:
    """Copy the extension files next to the server."""
    target = schema.install_extension_files(pg_config=args.pg_config)
    print(f"installed simpg {schema.default_version()} extension files into {target}")
    print("now run: CREATE EXTENSION simpg;")
    return 0


def run_upgrade(args: argparse.Namespace) -> int:
    """ALTER EXTENSION simpg UPDATE [TO version], or the upgrade scripts on a plain install."""
    from psycopg import sql

    with _connect(args) as conn:
        row = conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'simpg'").fetchone()
        if row is None:
            if schema.installed_version(conn) is None:
                raise SimpgError("simpg is not installed here; nothing to upgrade")
            before, after = schema.upgrade_plain(conn, args.to)
            print(f"simpg {before} -> {after} (plain script)")
            return 0
        if args.to:
            conn.execute(sql.SQL("ALTER EXTENSION simpg UPDATE TO {}").format(sql.Literal(args.to)))
        else:
            conn.execute("ALTER EXTENSION simpg UPDATE")
        after = conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'simpg'").fetchone()
    print(f"simpg {row[0]} -> {after[0] if after else '?'}")
    return 0
