"""The extension's SQL files, and the two ways to put them into a database.

* ``CREATE EXTENSION simpg`` after :func:`install_extension_files` copied the control
  file and scripts into the server's extension directory (``pg_config --sharedir``).
* :func:`install_plain` runs the same install script as a plain SQL script, for
  managed servers whose extension directory nobody can write.

The files ship inside the wheel as ``simpg/sql/`` (see pyproject.toml); in a source
checkout they are read from the top-level ``sql/`` folder.

Example:
    >>> import psycopg, simpg.schema
    >>> with psycopg.connect("dbname=app") as conn:  # doctest: +SKIP
    ...     simpg.schema.install(conn)
"""

from __future__ import annotations

import logging
import re
import shutil
import subprocess
import sys
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

from simpg.exc import ExtensionNotInstalled, SimpgError

if TYPE_CHECKING:
    import psycopg

    # only an annotation: importlib.resources.abc is new in 3.11, and simpg supports 3.10
    if sys.version_info >= (3, 11):
        from importlib.resources.abc import Traversable
    else:
        from importlib.abc import Traversable

logger = logging.getLogger(__name__)

__all__ = [
    "default_version",
    "extension_files",
    "extension_script",
    "install",
    "install_extension_files",
    "install_plain",
    "psql_script",
    "version_comment_sql",
    "installed_version",
    "upgrade_path",
    "upgrade_script",
    "upgrade_plain",
    "require_installed",
    "script",
    "sql_dir",
]

EXTENSION = "simpg"


def sql_dir() -> Traversable:
    """Folder holding simpg.control and the SQL scripts (wheel or source checkout)."""
    packaged = resources.files("simpg") / "sql"
    if packaged.is_dir():
        return packaged
    checkout = Path(__file__).resolve().parent.parent / "sql"
    if checkout.is_dir():
        return checkout
    raise SimpgError("simpg's SQL files are missing from the installation")


def default_version() -> str:
    """The extension version in simpg.control (the only place it is written)."""
    control = (sql_dir() / f"{EXTENSION}.control").read_text(encoding="utf-8")
    match = re.search(r"default_version\s*=\s*'([^']+)'", control)
    if not match:
        raise SimpgError("simpg.control has no default_version")
    return match.group(1)


def _strip_psql_commands(text: str) -> str:
    # The scripts start with pgvector's `\echo ... \quit` guard against sourcing them in
    # psql; the server itself would reject backslash lines, so drop them here.
    return "".join(line for line in text.splitlines(keepends=True) if not line.startswith("\\"))


def extension_script() -> str:
    """The install script as the extension runs it: ``sql/functions/*.sql`` in name order.

    The script is kept in parts (pg_partman's layout) and joined here and by the
    Makefile, so the wheel, ``make install`` and the plain install all run the same text.
    """
    parts = sorted((e for e in (sql_dir() / "functions").iterdir() if e.name.endswith(".sql")),
                   key=lambda e: e.name)
    # Byte for byte what the Makefile's `cat` makes (each part ends with a newline).
    return "".join(part.read_text(encoding="utf-8") for part in parts)


def script(version: str | None = None) -> str:
    """The full install script of ``version`` (default: the current one), runnable as SQL."""
    version = version or default_version()
    if version == default_version():
        return _strip_psql_commands(extension_script())
    released = sql_dir() / f"{EXTENSION}--{version}.sql"
    if not re.fullmatch(r"[\d.]+", version) or not released.is_file():
        raise SimpgError(f"no install script for simpg {version}; this package has {default_version()}")
    return _strip_psql_commands(released.read_text(encoding="utf-8"))


def _upgrade_steps() -> dict[str, str]:
    """Every update step this package has, file name -> where its text comes from.

    A step to the current version is built (:func:`upgrade_script`) from its hand-written
    part, ``sql/upgrade/<from>--<to>.sql``; a step between earlier versions is kept in
    ``sql/`` as it was released.
    """
    steps = {}
    for entry in sql_dir().iterdir():
        if re.fullmatch(rf"{EXTENSION}--[\d.]+--[\d.]+\.sql", entry.name):
            steps[entry.name] = "released"
    for entry in (sql_dir() / "upgrade").iterdir():
        match = re.fullmatch(r"([\d.]+)--([\d.]+)\.sql", entry.name)
        if match and match.group(2) == default_version():
            steps[f"{EXTENSION}--{entry.name}"] = "built"
    return steps


def upgrade_script(name: str) -> str:
    """The text of update step ``name`` (``simpg--<from>--<to>.sql``), as the extension runs it.

    A step to the current version is its hand-written part (which takes over what the
    earlier version left) followed by the current install script without its header,
    every function as ``CREATE OR REPLACE`` (the earlier version's functions keep their
    identity, on which prefix columns and your views may depend; new ones are created):
    so an updated install equals a fresh one. The Makefile builds the same text.
    """
    kind = _upgrade_steps().get(name)
    if kind is None:
        raise SimpgError(f"no update script {name} in this package")
    if kind == "released":
        return (sql_dir() / name).read_text(encoding="utf-8")
    target = name.rsplit("--", 1)[1].removesuffix(".sql")
    hand = (sql_dir() / "upgrade" / name.removeprefix(f"{EXTENSION}--")).read_text(encoding="utf-8")
    parts = sorted((e for e in (sql_dir() / "functions").iterdir()
                    if e.name.endswith(".sql") and e.name != "00_header.sql"), key=lambda e: e.name)
    body = "".join(part.read_text(encoding="utf-8") for part in parts)
    body = re.sub(r"^CREATE FUNCTION simpg\.", "CREATE OR REPLACE FUNCTION simpg.", body, flags=re.M)
    # sql-text: psql's guard line of a script file, the version from simpg.control
    guard = f"\\echo Use \"ALTER EXTENSION simpg UPDATE TO '{target}'\" to load this file. \\quit\n"
    head = "-- complain if script is sourced in psql, rather than via ALTER EXTENSION\n" + guard
    return head + "\n" + hand + "\n" + body


def upgrade_path(start: str, target: str) -> list[str]:
    """The update steps (file names) that lead from ``start`` to ``target``, shortest first found."""
    steps: dict[str, list[str]] = {}
    for name in sorted(_upgrade_steps()):
        match = re.fullmatch(rf"{EXTENSION}--([\d.]+)--([\d.]+)\.sql", name)
        if match:
            steps.setdefault(match.group(1), []).append(match.group(2))
    paths: dict[str, list[str]] = {start: []}
    frontier = [start]
    while frontier and target not in paths:
        nxt = []
        for version in frontier:
            for after in steps.get(version, []):
                if after not in paths:
                    paths[after] = [*paths[version], f"{EXTENSION}--{version}--{after}.sql"]
                    nxt.append(after)
        frontier = nxt
    if target not in paths:
        raise SimpgError(f"no upgrade path from simpg {start} to {target} in this package")
    return paths[target]


def extension_files() -> dict[str, str]:
    """File name -> contents of everything the server's extension directory needs."""
    folder = sql_dir()
    version = default_version()
    files = {f"{EXTENSION}.control": (folder / f"{EXTENSION}.control").read_text(encoding="utf-8")}
    files[f"{EXTENSION}--{version}.sql"] = extension_script()
    for name in _upgrade_steps():
        files[name] = upgrade_script(name)
    for entry in folder.iterdir():
        # the install scripts of earlier versions, kept as released so that CREATE
        # EXTENSION simpg VERSION '0.1.0' and its updates stay possible (and their
        # secondary control files: simpg--0.1.0.control names its schema)
        if re.fullmatch(rf"{EXTENSION}--[\d.]+(\.sql|\.control)", entry.name) and entry.name not in files:
            files[entry.name] = entry.read_text(encoding="utf-8")
    return files


def find_pg_config(pg_config: str | None = None) -> str:
    """Path of pg_config: the given one, else the one on PATH."""
    found = pg_config or shutil.which("pg_config")
    if not found:
        raise SimpgError("pg_config not found; pass --pg-config /path/to/pg_config")
    return found


def install_extension_files(pg_config: str | None = None, sharedir: str | Path | None = None) -> Path:
    """Copy the control file and scripts into the server's extension directory.

    Args:
        pg_config: pg_config of the target server (default: the one on PATH).
        sharedir: the server's share directory, instead of asking pg_config.

    Returns:
        The extension directory written to.
    """
    if sharedir is None:
        exe = find_pg_config(pg_config)
        try:
            sharedir = subprocess.run(
                [exe, "--sharedir"], check=True, capture_output=True, text=True
            ).stdout.strip()
        except (OSError, subprocess.CalledProcessError) as err:
            raise SimpgError(f"could not run {exe} --sharedir: {err}") from err
    target = Path(sharedir) / "extension"
    try:
        target.mkdir(parents=True, exist_ok=True)
        for name, text in extension_files().items():
            (target / name).write_text(text, encoding="utf-8")
    except PermissionError as err:
        raise SimpgError(
            f"cannot write {target}: {(err.strerror or str(err)).lower()}; run as a user who can, "
            "or install without files: simpg install --plain --dsn ..."
        ) from err
    logger.info("installed simpg extension files into %s", target)
    return target


def installed_version(conn: psycopg.Connection) -> str | None:
    """The simpg version installed in the connected database, or None.

    Recognises both install paths: the extension (pg_extension) and the plain
    script (a simpg schema holding simpg.hamming).
    """
    row = conn.execute("SELECT extversion FROM pg_catalog.pg_extension WHERE extname = 'simpg'").fetchone()
    if row:
        return str(row[0])
    row = conn.execute(
        "SELECT obj_description(p.oid, 'pg_proc') FROM pg_catalog.pg_proc AS p "
        "JOIN pg_catalog.pg_namespace AS n ON n.oid = p.pronamespace "
        "WHERE n.nspname = 'simpg' AND p.proname = 'hamming'"
    ).fetchone()
    if row is None:
        return None
    row = conn.execute("SELECT obj_description('simpg'::regnamespace, 'pg_namespace')").fetchone()
    comment = row[0] if row else None
    match = re.search(r"version (\S+)", comment or "")
    return match.group(1) if match else "unknown"


def require_installed(conn: psycopg.Connection) -> str:
    """The installed version, or ExtensionNotInstalled saying how to install simpg."""
    version = installed_version(conn)
    if version is None:
        raise ExtensionNotInstalled(
            "simpg is not installed in this database; run 'CREATE EXTENSION simpg' "
            "(files: 'simpg install-extension'), or 'simpg install --dsn ...', or op.install_simpg()"
        )
    return version


def install_plain(conn: psycopg.Connection, version: str | None = None) -> str:
    """Run the install script as plain SQL, in one transaction; returns the version.

    For servers where CREATE EXTENSION simpg is impossible. The objects are the same
    as the extension's, owned by the connected role; the schema's comment records the
    version, since there is no pg_extension row. ``version`` installs an earlier
    release this package keeps (default: the current one).
    """
    existing = installed_version(conn)
    if existing is not None:
        raise SimpgError(f"simpg {existing} is already installed in this database")
    version = version or default_version()
    text = script(version)
    with conn.transaction():
        # Resolve every name of the script against pg_catalog and simpg only.
        conn.execute("SET LOCAL search_path = pg_catalog, pg_temp")
        if version == "0.1.0":  # its script expects the schema (the extension made it then)
            conn.execute("CREATE SCHEMA simpg")
        conn.execute(text.encode())  # bytes: a whole script, sent without placeholders
        conn.execute(version_comment_sql(version))
    return version


def version_comment_sql(version: str) -> str:
    """The statement that records a plain install's version (no pg_extension row there)."""
    from psycopg import sql

    comment = sql.Literal(f"simpg version {version} (installed as a plain script)")
    return sql.SQL("COMMENT ON SCHEMA simpg IS {};\n").format(comment).as_string(None)


def psql_script() -> str:
    """The install script as ``simpg sql`` prints it for psql: one transaction, version recorded.

    The script itself makes schema simpg and pins ``search_path`` for the transaction, so
    ``simpg sql | psql`` installs exactly what ``simpg install --plain`` does.
    """
    return "BEGIN;\n" + script() + version_comment_sql(default_version()) + "COMMIT;\n"


def upgrade_plain(conn: psycopg.Connection, to: str | None = None) -> tuple[str, str]:
    """Update a plain-script install with the upgrade scripts, in one transaction.

    What ``ALTER EXTENSION simpg UPDATE`` does for the extension: each script of the
    path from the installed version to ``to`` (default: the current one) runs in
    order, and the schema's comment records the new version. Returns (from, to).
    """
    current = require_installed(conn)
    target = to or default_version()
    if current == target:
        return current, target
    path = upgrade_path(current, target)
    with conn.transaction():
        conn.execute("SET LOCAL search_path = pg_catalog, pg_temp")
        for name in path:
            conn.execute(_strip_psql_commands(upgrade_script(name)).encode())
        conn.execute(version_comment_sql(target))
    return current, target


def install(conn: psycopg.Connection, *, plain: bool | None = None) -> str:
    """Install simpg in the connected database; returns the installed version.

    Args:
        conn: a connection whose role may create objects in the database.
        plain: True runs the plain script, False requires CREATE EXTENSION; None
            (default) tries CREATE EXTENSION and falls back to the plain script when
            the server has no simpg extension files.
    """
    existing = installed_version(conn)
    if existing is not None:
        return existing
    if plain:
        return install_plain(conn)
    available = conn.execute(
        "SELECT 1 FROM pg_catalog.pg_available_extensions WHERE name = 'simpg'"
    ).fetchone()
    if available is None:
        if plain is False:
            raise SimpgError(
                "the server has no simpg extension files; run 'simpg install-extension' "
                "on the database host, or install as a plain script"
            )
        logger.info("no simpg extension files on the server; installing as a plain script")
        return install_plain(conn)
    with conn.transaction():
        conn.execute("CREATE EXTENSION simpg")
    return require_installed(conn)
