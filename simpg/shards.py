"""Shards on several servers with PostgreSQL's own sharding (postgres_fdw), for psycopg 3.

A coordinator holds a hash-partitioned table whose partitions are postgres_fdw foreign
tables, each the table of a shard server with simpg and an index of the same layout.
PostgreSQL routes writes to the shards and sends each lookup's prefix ranges and
distance filter to every shard at once (asynchronous foreign scans); simpg supplies the
layout, the shards' tables and indexes, and the checks (sql/functions/75_shards.sql,
docs/shards.md).

postgres_fdw runs no DDL on a remote server, so :func:`create_shards` connects to each
shard itself to run the statements ``simpg.shard_ddl`` writes on the coordinator, then
attaches the shards there with ``simpg.attach_shard``, which first reads each shard's
``simpg.indexes`` through postgres_fdw to make sure its layout is the coordinator's.

The range distribution (``distribution="range"``, Google's design of seeds 001/003)
keeps the user's table on the coordinator and adds one table per permuted table of the
layout, range-partitioned by the permuted value over the shards, kept in step by
triggers: a lookup reads one shard per permuted table (sql/functions/76_range_shards.sql).

Example:
    >>> import psycopg
    >>> from simpg.shards import Shard, ShardedColumn, create_shards
    >>> coord = psycopg.connect("dbname=app", autocommit=True)  # doctest: +SKIP
    >>> coord.execute("CREATE TABLE docs (id bigint NOT NULL, simhash bigint) PARTITION BY HASH (id)")  # doctest: +SKIP
    >>> create_shards(coord, "docs", "simhash", [Shard("s1", "host=db1 dbname=app"),
    ...                                          Shard("s2", "host=db2 dbname=app")], k=3, rows=10**8)  # doctest: +SKIP
    >>> ShardedColumn(coord, "docs", "simhash", key_column="id").near(0x0123456789ABCDEF, 3)  # doctest: +SKIP
    [Neighbor(id=12, distance=1)]
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import psycopg
from psycopg import sql
from psycopg.types.numeric import Int8

from simpg import allpairs, bits, schema
from simpg.exc import SimpgError, translate, translated
from simpg.layout import Layout, check_radius
from simpg.psycopg import Neighbor, Pair, SimHashColumn

logger = logging.getLogger(__name__)

__all__ = [
    "DISTRIBUTIONS",
    "RangeLayout",
    "Shard",
    "ShardInfo",
    "ShardProblem",
    "ShardedColumn",
    "attach_range_shard",
    "attach_shard",
    "check_range_shards",
    "check_shards",
    "create_range_shards",
    "create_server",
    "create_shards",
    "distribution",
    "parse_shard",
    "prepare_range_shard",
    "prepare_shard",
    "range_layout",
    "range_shard_ddl",
    "range_shards",
    "shard_ddl",
    "shards",
]

#: The two ways to spread rows over shards (docs/shards.md, "Which to use when").
DISTRIBUTIONS = ("hash", "range")

#: libpq options that belong in a user mapping rather than in the foreign server.
USER_MAPPING_OPTIONS = frozenset({"user", "password", "sslcert", "sslkey", "sslpassword"})
#: libpq options postgres_fdw takes from neither (it sets them itself, or they are the client's).
IGNORED_OPTIONS = frozenset({"client_encoding", "fallback_application_name", "passfile"})


@dataclass(frozen=True)
class Shard:
    """A shard server: the coordinator's foreign server ``name`` and how to reach its database."""

    name: str
    dsn: str


@dataclass(frozen=True)
class ShardInfo:
    """One foreign partition of a sharded table (a row of ``simpg.shards``)."""

    shard: str
    server: str
    remote_schema: str
    remote_table: str
    bound: str
    async_capable: bool


@dataclass(frozen=True)
class ShardProblem:
    """One row of ``simpg.check_shards``: ``str()`` gives ``server: problem: detail``."""

    shard: str | None
    server: str | None
    problem: str
    detail: str

    def __str__(self) -> str:
        return f"{self.server or self.shard or '-'}: {self.problem}: {self.detail}"


def parse_shard(text: str) -> Shard:
    """``NAME=CONNINFO`` (as the CLI's ``--shard`` takes it) as a :class:`Shard`.

    The name is the coordinator's foreign server; the connection string (a URI or
    ``key=value`` pairs) reaches the shard's database.
    """
    name, sep, dsn = text.partition("=")
    name = name.strip()
    if not sep or not name or not dsn.strip() or not name.replace("_", "a").isalnum() or not name[0].isalpha():
        # the name only: the rest may hold a password
        raise SimpgError(f"shard must be NAME=CONNINFO with NAME a plain identifier, got name {name!r}")
    try:
        psycopg.conninfo.conninfo_to_dict(dsn)
    except psycopg.ProgrammingError as err:
        message = str(err).strip()
        for secret in re.findall(r"password\s*=\s*('(?:[^'\\]|\\.)*'|[^\s&]+)|://[^:/@]*:([^@]*)@", dsn):
            for value in filter(None, secret):
                message = message.replace(value, "********")
        raise SimpgError(f"shard {name}: invalid connection string ({message})") from None
    return Shard(name, dsn)


def _rows(conn: psycopg.Connection[Any], statement: Any, params: Sequence[Any] = ()) -> list[Any]:
    with translated():
        return conn.execute(statement, params).fetchall()


def _is_partitioned(conn: psycopg.Connection[Any], table: str) -> None:
    row = _rows(conn, "SELECT c.relkind FROM pg_catalog.pg_class AS c WHERE c.oid = pg_catalog.to_regclass(%s)",
                [table])
    if not row:
        raise SimpgError(f"table {table} does not exist on the coordinator")
    if row[0][0] != "p":
        raise SimpgError(f"table {table} is not partitioned; create it with PARTITION BY HASH (key) "
                         "on the coordinator first")


def shard_ddl(conn: psycopg.Connection[Any], table: str, *, column: str | None = None,
              remote_schema: str | None = None, remote_table: str | None = None) -> list[str]:
    """The statements ``simpg.shard_ddl`` writes for a shard of ``table`` (run them on the shard)."""
    return [row[0] for row in _rows(conn, "SELECT s FROM simpg.shard_ddl(%s::regclass, %s, %s, %s) AS s",
                                    [table, remote_schema, remote_table, column])]


def shards(conn: psycopg.Connection[Any], table: str) -> list[ShardInfo]:
    """The foreign partitions of ``table`` (``simpg.shards``), from the coordinator's catalogs."""
    return [ShardInfo(*row) for row in _rows(
        conn, "SELECT s.shard::text, s.server::text, s.remote_schema::text, s.remote_table::text, s.bound, "
              "s.async_capable FROM simpg.shards(%s::regclass) AS s", [table])]


def check_shards(conn: psycopg.Connection[Any], table: str, column: str | None = None) -> list[ShardProblem]:
    """``simpg.check_shards``: every problem of ``table``'s shards; ``[]`` when all is well.

    On a table of the range distribution, :func:`check_range_shards` (with its row counts).
    """
    if distribution(conn, table) == "range":
        return check_range_shards(conn, table, column)
    return [ShardProblem(*row) for row in _rows(
        conn, "SELECT c.shard::text, c.server::text, c.problem, c.detail "
              "FROM simpg.check_shards(%s::regclass, %s) AS c", [table, column])]


def _mask(statement: sql.Composed | sql.SQL, conn: psycopg.Connection[Any], secret: str | None) -> str:
    text = statement.as_string(conn)
    return text.replace(sql.Literal(secret).as_string(conn), "'********'") if secret else text


def create_server(conn: psycopg.Connection[Any], shard: Shard) -> list[str]:
    """Create the coordinator's postgres_fdw server ``shard.name`` and the current role's user mapping.

    The connection string's ``user``, ``password`` (and client-certificate options) go
    into the user mapping, everything else (``host``, ``port``, ``dbname``, ...) into the
    server, with ``parallel_commit`` on PostgreSQL 15 and later. A server that exists
    already is used only if the current role itself owns it and its options match the
    connection string (``simpg.check_shard_server``): its owner could read the password
    of a mapping on it and point it anywhere, so nothing is written on anyone else's.
    The current role's own mapping is made unless it has one (a ``PUBLIC`` mapping is
    not relied on). Returns the statements run, with any password masked; passwords
    are never logged.
    """
    options = {k: v for k, v in psycopg.conninfo.conninfo_to_dict(shard.dsn).items()
               if v is not None and k not in IGNORED_OPTIONS}
    server_options = {k: str(v) for k, v in options.items() if k not in USER_MAPPING_OPTIONS}
    wanted = [f"{k}={v}" for k, v in sorted(server_options.items())]  # what an existing server must have
    if conn.info.server_version >= 150000:
        # commit the shards' remote transactions at once, not one after the other
        # (postgres_fdw, PostgreSQL 15+): each lookup in autocommit ends one on every shard
        server_options.setdefault("parallel_commit", "true")
    mapping_options = {k: str(v) for k, v in options.items() if k in USER_MAPPING_OPTIONS}
    password = mapping_options.get("password")
    done: list[str] = []

    def run(statement: sql.Composed | sql.SQL) -> None:
        shown = _mask(statement, conn, password)
        logger.info("coordinator: %s", shown)
        with translated():
            conn.execute(statement)
        done.append(shown)

    def opts(values: dict[str, str]) -> sql.Composable:
        if not values:
            return sql.SQL("")
        return sql.SQL(" OPTIONS ({})").format(sql.SQL(", ").join(
            sql.SQL("{} {}").format(sql.Identifier(k), sql.Literal(v)) for k, v in sorted(values.items())))

    # one transaction: a server made here cannot be swapped for someone else's before
    # the mapping goes on it (CREATE SERVER fails if the name is taken meanwhile), and
    # only its owner can change a server once checked
    with conn.transaction():
        if not _rows(conn, "SELECT FROM pg_catalog.pg_extension WHERE extname = 'postgres_fdw'"):
            run(sql.SQL("CREATE EXTENSION IF NOT EXISTS postgres_fdw"))
        if _rows(conn, "SELECT FROM pg_catalog.pg_foreign_server WHERE srvname = %s", [shard.name]):
            _rows(conn, "SELECT simpg.check_shard_server(%s, %s::text[], false)", [shard.name, wanted])
        else:
            run(sql.SQL("CREATE SERVER {} FOREIGN DATA WRAPPER postgres_fdw{}").format(
                sql.Identifier(shard.name), opts(server_options)))
        if not _rows(conn, "SELECT FROM pg_catalog.pg_user_mappings AS u JOIN pg_catalog.pg_roles AS r "
                           "ON r.oid = u.umuser WHERE u.srvname = %s AND r.rolname = current_user", [shard.name]):
            run(sql.SQL("CREATE USER MAPPING FOR CURRENT_USER SERVER {}{}").format(
                sql.Identifier(shard.name), opts(mapping_options)))
    return done


def _remote_problems(conn: psycopg.Connection[Any], table: str, shard: str, remote_schema: str,
                     remote_table: str, column: str | None) -> list[tuple[str, str]]:
    return [(p, d) for p, d in _rows(
        conn, "SELECT r.problem, r.detail FROM simpg.remote_index_problems(%s::regclass, %s, %s, %s, %s) AS r",
        [table, shard, remote_schema, remote_table, column])]


def prepare_shard(conn: psycopg.Connection[Any], table: str, shard: Shard, *, column: str | None = None,
                  remote_schema: str | None = None, remote_table: str | None = None) -> list[str]:
    """Make the shard's table and simpg index, unless the shard has them already.

    Reads the shard's index through the coordinator (``simpg.remote_index_problems``):
    when it has ``table``'s layout nothing is done; when the table has no simpg index
    the statements of ``simpg.shard_ddl`` run on the shard, in one transaction, with the
    shard connection's own rights; any other problem (another layout, unreachable) is an
    error naming the shard. Returns the statements run there.
    """
    target = _rows(conn, "SELECT n.nspname::text, c.relname::text FROM pg_catalog.pg_class AS c "
                         "JOIN pg_catalog.pg_namespace AS n ON n.oid = c.relnamespace WHERE c.oid = %s::regclass",
                   [table])[0]
    schema_name, table_name = remote_schema or target[0], remote_table or target[1]
    problems = _remote_problems(conn, table, shard.name, schema_name, table_name, column)
    if not problems:
        return []
    if [p for p, _ in problems] != ["no simpg index"]:
        raise SimpgError(f"shard {shard.name}: " + "; ".join(f"{p}: {d}" for p, d in problems))
    statements = shard_ddl(conn, table, column=column, remote_schema=schema_name, remote_table=table_name)
    try:
        with psycopg.connect(shard.dsn, autocommit=True) as remote:
            schema.require_installed(remote)
            with remote.transaction():
                for statement in statements:
                    logger.info("shard %s: %s", shard.name, statement)
                    remote.execute(statement)
    except psycopg.OperationalError as err:
        raise SimpgError(f"shard {shard.name}: cannot connect ({str(err).strip().splitlines()[0]})") from None
    except psycopg.Error as err:
        raise SimpgError(f"shard {shard.name}: {translate(err)}") from err
    except SimpgError as err:
        raise SimpgError(f"shard {shard.name}: {err}") from err
    return statements


def attach_shard(conn: psycopg.Connection[Any], table: str, server: str, modulus: int, remainder: int, *,
                 remote_schema: str | None = None, remote_table: str | None = None) -> str:
    """``simpg.attach_shard``: the shard's table as a foreign hash partition of ``table``; its name."""
    row = _rows(conn, "SELECT simpg.attach_shard(%s::regclass, %s, %s, %s, %s, %s)::text",
                [table, server, modulus, remainder, remote_schema, remote_table])
    return str(row[0][0])


def create_shards(conn: psycopg.Connection[Any], table: str, column: str, shard_list: Sequence[Shard], *,
                  k: int = 3, blocks: int | None = None, inner_blocks: int | None = None,
                  rows: int | None = None, config: str | None = None, distribution: str = "hash",
                  key_column: str | None = None) -> list[ShardProblem]:
    """Set up ``table`` (hash-partitioned, on the coordinator ``conn``) over ``shard_list``.

    With ``distribution="range"`` the table is any table of the coordinator with a
    unique key (``key_column``, default its primary key): see :func:`create_range_shards`.

    1. The layout, once, on the coordinator: ``simpg.create_index`` on the partitioned
       table, sized by ``blocks`` (and ``inner_blocks``) or for ``rows`` rows in all;
       an existing index of the column is kept (and must have that layout, if given).
    2. Per shard: its foreign server and user mapping (:func:`create_server`), its
       table and simpg index (:func:`prepare_shard`), then ``simpg.attach_shard`` with
       modulus ``len(shard_list)`` and remainder its position.

    Steps already done (a shard attached, a server made) are skipped, so running it
    again after a failure resumes. Returns ``simpg.check_shards``: ``[]`` when all is well.
    """
    if distribution not in DISTRIBUTIONS:
        raise SimpgError(f"distribution must be one of {', '.join(DISTRIBUTIONS)}, got {distribution!r}")
    if distribution == "range":
        return create_range_shards(conn, table, column, shard_list, k=k, blocks=blocks, inner_blocks=inner_blocks,
                                   rows=rows, key_column=key_column)
    if key_column is not None:
        raise SimpgError("key_column is for the range distribution; hash shards are keyed by the partition key")
    _check_names(shard_list)
    _is_partitioned(conn, table)
    wanted = _wanted_layout(conn, k, blocks, inner_blocks, rows)
    found = _rows(conn, "SELECT i.k, i.levels FROM simpg.table_indexes(%s::regclass) AS i "
                        "WHERE i.fingerprint_column = %s", [table, column])
    if not found:
        if wanted is None:
            raise SimpgError("give blocks or rows: the coordinator's table holds no rows to size the layout from")
        logger.info("coordinator: simpg.create_index(%s, %s, %s)", table, column, wanted.name)
        _rows(conn, "SELECT simpg.create_index(%s::regclass, %s, %s, %s, %s, %s) IS NULL",
              [table, column, wanted.k, wanted.levels[0],
               wanted.levels[1] if len(wanted.levels) > 1 else None, config])
    elif wanted is not None and Layout(found[0][0], tuple(found[0][1])) != wanted:
        have = Layout(found[0][0], tuple(found[0][1]))
        raise SimpgError(f"{table}.{column} already has a simpg index of layout {have.name}, not {wanted.name}")
    attached = {info.server: info for info in shards(conn, table)}
    for remainder, shard in enumerate(shard_list):
        if shard.name in attached:
            continue
        create_server(conn, shard)
        prepare_shard(conn, table, shard, column=column)
        with conn.transaction():
            name = attach_shard(conn, table, shard.name, len(shard_list), remainder)
        logger.info("coordinator: attached %s (server %s, remainder %s of %s)", name, shard.name,
                    remainder, len(shard_list))
    return check_shards(conn, table, column)


def _shard_bounds(conn: psycopg.Connection[Any], layout: Layout, count: int) -> None:
    """Raise unless every prefix range of ``layout`` lies in one of ``count`` range shards."""
    _rows(conn, "SELECT count(*) FROM simpg.range_shard_bounds(%s, %s, %s)", [layout.k, list(layout.levels), count])


def _check_names(shard_list: Sequence[Shard]) -> None:
    if not shard_list:
        raise SimpgError("no shards given")
    names = [s.name for s in shard_list]
    if len(set(names)) != len(names):
        raise SimpgError(f"shard names must differ, got {names}")


def _wanted_layout(conn: psycopg.Connection[Any], k: int, blocks: int | None, inner_blocks: int | None,
                   rows: int | None) -> Layout | None:
    if blocks is not None:
        return Layout(k, (blocks,) if inner_blocks is None else (blocks, inner_blocks))
    if inner_blocks is not None:
        raise SimpgError("inner_blocks needs blocks")
    if rows is None:
        return None
    if rows < 0:
        raise SimpgError(f"rows must be a non-negative integer, got {rows}")
    levels = _rows(conn, "SELECT simpg.default_levels(%s, %s)", [k, rows])[0][0]
    return Layout(k, tuple(levels))


# -- the range distribution (sql/functions/76_range_shards.sql) ----------------------------


@dataclass(frozen=True)
class RangeLayout:
    """The range distribution registered on a table (a row of ``simpg.range_layout``)."""

    column: str
    key_column: str
    layout: Layout
    tables: tuple[str, ...]  # the coordinator's permuted tables, in table order


def distribution(conn: psycopg.Connection[Any], table: str) -> str:
    """``"range"`` if ``table`` has range shards (its triggers say so), else ``"hash"``."""
    row = _rows(conn, "SELECT EXISTS (SELECT FROM pg_catalog.pg_trigger AS g "
                      "WHERE g.tgrelid = pg_catalog.to_regclass(%s) "
                      "AND g.tgfoid = pg_catalog.to_regprocedure('simpg.range_shards_write()') "
                      # a partition of a range-sharded table carries the triggers too
                      "AND (simpg.trigger_args(g.tgargs))[7] IS DISTINCT FROM 'member')", [table])
    return "range" if row[0][0] else "hash"


def range_layout(conn: psycopg.Connection[Any], table: str, column: str | None = None) -> RangeLayout:
    """``simpg.complete_range_layout``: the range distribution of ``table`` (raises unless it has one, whole)."""
    col, key, k, levels, tables = _rows(  # raises if a permuted table is missing
        conn, "SELECT l.fingerprint_column::text, l.key_column::text, l.k, l.levels, l.tables::text[] "
              "FROM simpg.complete_range_layout(%s::regclass, %s) AS l", [table, column])[0]
    return RangeLayout(col, key, Layout(k, tuple(levels)), tuple(tables))


def range_shard_ddl(conn: psycopg.Connection[Any], table: str, *, column: str | None = None,
                    remote_schema: str | None = None) -> list[str]:
    """The statements ``simpg.range_shard_ddl`` writes for a shard of ``table`` (run them on the shard)."""
    return [row[0] for row in _rows(conn, "SELECT s FROM simpg.range_shard_ddl(%s::regclass, %s, %s) AS s",
                                    [table, column, remote_schema])]


def range_shards(conn: psycopg.Connection[Any], table: str, column: str | None = None, *,
                 table_number: int | None = None) -> list[ShardInfo]:
    """The foreign partitions of every permuted table of ``table`` (``simpg.range_shards``), in table order.

    ``table_number``: those of one permuted table only (one per shard).
    """
    return [ShardInfo(*row) for row in _rows(
        conn, "SELECT s.shard::text, s.server::text, s.remote_schema::text, s.remote_table::text, s.bound, "
              "s.async_capable FROM simpg.range_shards(%s::regclass, %s) AS s "
              "WHERE %s::integer IS NULL OR s.t = %s::integer",
        [table, column, table_number, table_number])]


def check_range_shards(conn: psycopg.Connection[Any], table: str, column: str | None = None,
                       verify_rows: bool = True) -> list[ShardProblem]:
    """``simpg.check_range_shards``: every problem of ``table``'s range shards; ``[]`` when all is well.

    ``verify_rows`` counts each shard's rows against the table's (one read of the table
    per permuted table) and checks a sample of the permuted values.
    """
    return [ShardProblem(*row) for row in _rows(
        conn, "SELECT c.shard::text, c.server::text, c.problem, c.detail "
              "FROM simpg.check_range_shards(%s::regclass, %s, %s) AS c", [table, column, verify_rows])]


def prepare_range_shard(conn: psycopg.Connection[Any], table: str, shard: Shard, *, column: str | None = None,
                        remote_schema: str | None = None, load: tuple[int, int] | None = None) -> list[str]:
    """Make the shard's permuted tables and B-trees (``simpg.range_shard_ddl``), over a connection to it.

    The coordinator first reaches the shard through postgres_fdw (a shard it cannot
    reach is an error naming it); the statements are ``IF NOT EXISTS``, so running this
    again resumes. With ``load=(shard_number, shard_count)`` (the caller has checked
    that the coordinator reaches the shard) the shard's tables are
    emptied and filled with the rows of ``table`` in its range, by ``COPY`` from the
    coordinator straight to the shard, before the B-trees are built: the fast path of a
    first load (postgres_fdw would send each row to the shards once per permuted table).
    The caller keeps ``table`` still (a ``SHARE`` lock) until the shard is attached.
    Returns the statements run on the shard.
    """
    info = range_layout(conn, table, column)
    if load is None:
        _reachable(conn, info, shard, remote_schema)
    statements = range_shard_ddl(conn, table, column=column, remote_schema=remote_schema)
    creates = [s for s in statements if s.startswith("CREATE TABLE")]
    indexes = [s for s in statements if not s.startswith("CREATE TABLE")]
    try:
        with psycopg.connect(shard.dsn, autocommit=True) as remote:
            with remote.transaction():
                for statement in creates:
                    logger.info("shard %s: %s", shard.name, statement)
                    remote.execute(statement)
                if load is not None:
                    _copy_to_shard(conn, remote, table, info, shard, load, remote_schema)
                for statement in indexes:
                    logger.info("shard %s: %s", shard.name, statement)
                    remote.execute(statement)
            if load is not None:
                for t in range(len(info.tables)):
                    # the visibility map too: lookups are index-only scans
                    remote.execute(sql.SQL("VACUUM (ANALYZE) {}").format(_shard_table(conn, info, t, remote_schema)))
    except psycopg.OperationalError as err:
        raise SimpgError(f"shard {shard.name}: cannot connect ({str(err).strip().splitlines()[0]})") from None
    except psycopg.Error as err:
        raise SimpgError(f"shard {shard.name}: {translate(err)}") from err
    return statements


def _reachable(conn: psycopg.Connection[Any], info: RangeLayout, shard: Shard, remote_schema: str | None) -> None:
    """Raise naming the shard unless the coordinator reaches it through postgres_fdw."""
    first = _split_name(conn, info.tables[0])
    problems = _rows(conn, "SELECT r.problem, r.detail FROM simpg.remote_range_problems(%s, %s, %s) AS r",
                     [shard.name, remote_schema or first[0], first[1]])
    bad = [(p, d) for p, d in problems if p not in ("table missing", "missing b-tree")]
    if bad:
        raise SimpgError(f"shard {shard.name}: " + "; ".join(f"{p}: {d}" for p, d in bad))


def _shard_table(conn: psycopg.Connection[Any], info: RangeLayout, t: int, remote_schema: str | None) -> sql.Identifier:
    schema_name, name = _split_name(conn, info.tables[t])
    return sql.Identifier(remote_schema or schema_name, name)


def _copy_to_shard(conn: psycopg.Connection[Any], remote: psycopg.Connection[Any], table: str, info: RangeLayout,
                   shard: Shard, load: tuple[int, int], remote_schema: str | None) -> None:
    """Empty the shard's permuted tables and COPY into them the rows of ``table`` in the shard's range."""
    number, count = load
    bounds = _rows(conn, "SELECT b.lo, b.hi FROM simpg.range_shard_bounds(%s, %s, %s) AS b WHERE b.shard_number = %s",
                   [info.layout.k, list(info.layout.levels), count, number])
    lo, hi = bounds[0]
    base = sql.Identifier(*_split_name(conn, table))
    fp, key = sql.Identifier(info.column), sql.Identifier(info.key_column)
    for t in range(len(info.tables)):
        target = _shard_table(conn, info, t, remote_schema)
        remote.execute(sql.SQL("TRUNCATE {}").format(target))
        # constants in the text: simpg.permute folds to shifts and masks
        permuted = sql.SQL("simpg.permute(b.{}, {}, {}::integer[], {})").format(
            fp, sql.Literal(info.layout.k), sql.Literal("{" + ",".join(map(str, info.layout.levels)) + "}"),
            sql.Literal(t))
        where = [sql.SQL("b.{} IS NOT NULL").format(fp)]
        if lo is not None:
            where.append(sql.SQL("{} >= {}").format(permuted, sql.Literal(lo)))
        if hi is not None:
            where.append(sql.SQL("{} < {}").format(permuted, sql.Literal(hi)))
        out = sql.SQL("COPY (SELECT {}, b.{}::bigint, b.{} FROM {} AS b WHERE {}) TO STDOUT").format(
            permuted, key, fp, base, sql.SQL(" AND ").join(where))
        with conn.cursor().copy(out) as source, \
                remote.cursor().copy(sql.SQL("COPY {} (p, key, fp) FROM STDIN").format(target)) as sink:
            for block in source:
                sink.write(block)
        logger.info("shard %s: %s loaded", shard.name, target.as_string(remote))


def attach_range_shard(conn: psycopg.Connection[Any], table: str, server: str, shard_number: int, shard_count: int,
                       *, remote_schema: str | None = None, column: str | None = None) -> list[str]:
    """``simpg.attach_range_shard``: the shard's permuted tables as foreign range partitions; their names."""
    row = _rows(conn, "SELECT simpg.attach_range_shard(%s::regclass, %s, %s, %s, %s, %s)::text[]",
                [table, server, shard_number, shard_count, remote_schema, column])
    return list(row[0][0])


def create_range_shards(conn: psycopg.Connection[Any], table: str, column: str, shard_list: Sequence[Shard], *,
                        k: int = 3, blocks: int | None = None, inner_blocks: int | None = None,
                        rows: int | None = None, key_column: str | None = None) -> list[ShardProblem]:
    """Set up the range distribution of ``table.column`` (a table of the coordinator) over ``shard_list``.

    1. The layout, once, on the coordinator (``simpg.create_range_index``): the permuted
       tables and their triggers, sized by ``blocks`` (and ``inner_blocks``), ``rows``,
       or the table's own rows; refused before anything is made if the layout's
       smallest prefix is too short for the number of shards.
    2. Per shard, in order: its foreign server and user mapping (:func:`create_server`),
       its permuted tables, loaded (:func:`prepare_range_shard`), ``simpg.attach_range_shard``
       with its position.
    Each shard gets its rows of every permuted table by ``COPY`` from the coordinator
    before its B-trees are built (:func:`prepare_range_shard` with ``load``); writers of
    ``table`` wait (a ``SHARE`` lock) until the last shard is attached.

    Running it again resumes. Returns ``simpg.check_range_shards`` without the row
    counts: ``[]`` when all is well.
    """
    _check_names(shard_list)
    if not _rows(conn, "SELECT pg_catalog.to_regclass(%s) IS NOT NULL", [table])[0][0]:
        raise SimpgError(f"table {table} does not exist on the coordinator")
    wanted = _wanted_layout(conn, k, blocks, inner_blocks, rows)
    if distribution(conn, table) == "range":
        have = range_layout(conn, table, column)
        if have.column != column:
            raise SimpgError(f"{table} has range shards on {have.column}, not {column}")
        if wanted is not None and have.layout != wanted:
            raise SimpgError(f"{table}.{column} already has range shards of layout {have.layout.name}, "
                             f"not {wanted.name}")
        _shard_bounds(conn, have.layout, len(shard_list))
    else:
        logger.info("coordinator: simpg.create_range_index(%s, %s, %s)", table, column,
                    wanted.name if wanted else "the layout for its rows")
        with conn.transaction():  # refused before anything is made if the shards are too many
            _rows(conn, "SELECT simpg.create_range_index(%s::regclass, %s, %s, %s, %s, %s) IS NULL",
                  [table, column, k, wanted.levels[0] if wanted else None,
                   wanted.levels[1] if wanted and len(wanted.levels) > 1 else None, key_column])
            _shard_bounds(conn, range_layout(conn, table, column).layout, len(shard_list))
    attached = {info.server for info in range_shards(conn, table, column)}
    todo = [(number, shard) for number, shard in enumerate(shard_list) if shard.name not in attached]
    info = range_layout(conn, table, column)
    for _, shard in todo:
        create_server(conn, shard)
        _reachable(conn, info, shard, None)
    if todo:
        # postgres_fdw reads a shard in one snapshot per coordinator transaction: the
        # transaction below reaches each shard first when attaching it, after its load
        with conn.transaction():
            # the table holds still from the first copy to the last attach: writers wait
            conn.execute(sql.SQL("LOCK TABLE {} IN SHARE MODE").format(sql.Identifier(*_split_name(conn, table))))
            for number, shard in todo:
                prepare_range_shard(conn, table, shard, column=column, load=(number, len(shard_list)))
                names = attach_range_shard(conn, table, shard.name, number, len(shard_list), column=column)
                logger.info("coordinator: attached %s (server %s, shard %s of %s)", ", ".join(names), shard.name,
                            number + 1, len(shard_list))
    return check_range_shards(conn, table, column, verify_rows=False)


class ShardedColumn:
    """A live handle on a sharded table's fingerprint column, as SimHashColumn is on a table's.

    Lookups, pairs and clusters through the coordinator, for either distribution.

    Hash distribution: ``near``, ``pairs`` and ``clusters`` are
    :class:`~simpg.psycopg.SimHashColumn`'s: a lookup's prefix ranges and distance
    filter go to every shard, whose scans run at once. ``near_many`` sends each shard
    one query for up to 100 fingerprints (the OR of their ranges and distance filters),
    since SimHashColumn's batch form (a join with the queries) is not sent to the shards:
    PostgreSQL would read every shard whole for it. The partitioned table has no primary
    key (PostgreSQL allows no unique index over foreign partitions), so name the id
    column; keys are unique when the partition key is (each shard has it as primary key).

    Range distribution (the table has range shards, :func:`create_range_shards`): ``near``
    runs one prepared statement that reads one partition (one shard) per permuted table;
    ``near_many`` is ``simpg.range_near_many``; ``pairs`` and ``clusters`` read every
    ``(key, fingerprint)`` once from the first permuted table and find the pairs in
    memory. The key is the one registered (``key_column``, if given, must name it).

    For the lowest latency give the handle a connection of its own set up by
    :func:`simpg.psycopg.configure_lookups` (generic plans).
    """

    def __init__(self, conn: psycopg.Connection[Any], table: str, column: str = "simhash", *,
                 key_column: str | None = None) -> None:
        self.conn = conn
        self.table = table
        self.distribution = distribution(conn, table)
        self.range: RangeLayout | None = None
        if self.distribution == "range":
            self.range = range_layout(conn, table, column)
            if key_column is not None and key_column != self.range.key_column:
                raise SimpgError(f"{table}'s range shards are keyed by {self.range.key_column}, not {key_column}")
            relations = [sql.Identifier(*_split_name(conn, name)) for name in self.range.tables]
            self._relations = relations
            self._base = sql.Identifier(*_split_name(conn, table)).as_string(conn)
            conditions = _rows(conn, _RANGE_CONDITIONS_SQL, [len(relations)])[0][0]
            self._near_statement = _range_near_sql(relations, conditions, self._base,
                                                   self.range.column).as_string(conn)
            return
        if key_column is None:
            raise SimpgError(f"name the key column of {table}: a hash-sharded table has no primary key")
        self.index = SimHashColumn(conn, table, column, key_column=key_column)
        self._many_conditions: dict[int, tuple[str, Any]] = {}  # batch size: (condition, the IndexInfo it is for)

    def _radius(self, k: int | None) -> int:
        assert self.range is not None
        limit = self.range.layout.k
        return check_radius(limit if k is None else k, limit,
                            what=f"the range shards of {self.table}.{self.range.column}")

    def near(self, fingerprint: int, k: int | None = None) -> list[Neighbor]:
        """Rows within ``k`` of ``fingerprint``, nearest first (then by id)."""
        if self.range is None:
            return self.index.near(fingerprint, k)
        radius = self._radius(k)
        params = [Int8(bits.to_db(fingerprint)), Int8(radius)]
        for lo, hi in self.range.layout.prefix_ranges(fingerprint):
            params += [Int8(lo), Int8(hi)]
        with translated(), psycopg.RawCursor(self.conn) as cur:  # $n placeholders
            rows = cur.execute(self._near_statement, params, prepare=True).fetchall()
        return [Neighbor(id_, distance) for id_, distance in rows]

    def near_many(self, fingerprints: Iterable[int] | np.ndarray, k: int | None = None) -> list[list[Neighbor]]:
        """``near`` of each fingerprint: one list per fingerprint, in order, one statement per 100."""
        fps = [bits.check(fp) for fp in (fingerprints.tolist() if isinstance(fingerprints, np.ndarray)
                                         else fingerprints)]
        if self.range is not None:
            radius = self._radius(k)
            out_range: list[list[Neighbor]] = [[] for _ in fps]
            for n, id_, distance in _rows(self.conn, "SELECT m.query, m.key, m.distance FROM "
                                          "simpg.range_near_many(%s::regclass, %s::bigint[], %s, %s) AS m",
                                          [self.table, [bits.to_db(fp) for fp in fps], radius, self.range.column]):
                out_range[n - 1].append(Neighbor(id_, distance))
            return out_range
        info = self.index.info
        radius = check_radius(info.layout.k if k is None else k, info.layout.k,
                              what=f"the simpg index on {info.label}")
        out: list[list[Neighbor]] = [[] for _ in fps]
        # at most 100 queries and about 20,000 parameters a statement
        step = max(1, min(100, 20_000 // (2 * info.layout.tables + 2)))
        for start in range(0, len(fps), step):
            statement, params = self._near_many_sql(fps[start:start + step], radius)
            with translated(), psycopg.RawCursor(self.conn) as cur:  # $n placeholders
                rows = cur.execute(statement, params, binary=True).fetchall()
            for n, id_, distance in rows:
                out[start + n - 1].append(Neighbor(id_, distance))
        return out

    def _near_many_sql(self, fps: Sequence[int], k: int) -> tuple[bytes, list[Any]]:
        """One statement for many lookups that postgres_fdw sends whole to every shard.

        Each shard gets one query: the OR of every lookup's condition (``simpg.lookup_where``,
        asked once per batch size: lookup ``i`` is ``$3i-2`` the fingerprint, ``$3i-1`` its
        range starts, ``$3i`` k), so it returns the rows within ``k`` of some lookup; the
        coordinator then gives each row to the lookups it is within ``k`` of (a join of
        those few rows with the fingerprints). Run it with a :class:`psycopg.RawCursor`.
        """
        info = self.index.info
        n = len(fps)
        if self._many_conditions.get(n, ("", None))[1] is not info:  # a new layout: ask again
            row = _rows(self.conn, _MANY_CONDITION_SQL,
                        [info.column, list(info.prefix_columns), info.layout.k, list(info.layout.levels), n])
            self._many_conditions[n] = (row[0][0], info)
        condition = self._many_conditions[n][0]
        statement = sql.SQL(
            "SELECT u.n, t.{id}, simpg.hamming(t.{fp}, u.q) AS distance "
            "FROM (SELECT t.{id}, t.{fp} FROM {rel} AS t WHERE {cond}) AS t "
            "JOIN unnest({ns}::integer[], {qs}::bigint[]) AS u(n, q) ON simpg.hamming(t.{fp}, u.q) <= {k} "
            "ORDER BY u.n, distance, t.{id}"
        ).format(id=sql.Identifier(self.index.key_column or ""), fp=sql.Identifier(info.column), rel=info.relation,
                 cond=sql.SQL(condition), ns=sql.SQL(f"${3 * n + 1}"), qs=sql.SQL(f"${3 * n + 2}"),
                 k=sql.SQL(f"${3 * n + 3}"))
        params: list[Any] = []
        signed = [bits.to_db(fp) for fp in fps]
        for fp in fps:
            params += [Int8(bits.to_db(fp)), info.ranges.lows_array(fp), Int8(k)]
        params += [list(range(1, n + 1)), signed, Int8(k)]
        return statement.as_bytes(self.conn), params

    def pairs(self, k: int | None = None) -> Iterator[Pair]:
        """Every pair within ``k`` across all shards (the rows are read once, the pairs found in memory)."""
        if self.range is None:
            return self.index.pairs(k)
        chunks = allpairs.pair_arrays(*self._fetch_range(k))
        return (pair for chunk in chunks for pair in allpairs.pairs_from_arrays(chunk))

    def clusters(self, k: int | None = None, method: str = "representative") -> list[list[Any]]:
        """Clusters across all shards (as SimHashColumn.clusters)."""
        if self.range is None:
            return self.index.clusters(k, method=method)
        method = allpairs.cluster_method(method)
        ids, fps, radius = self._fetch_range(k)
        return allpairs.clusters_of(ids, fps, radius, method)

    def fetch_all(self) -> tuple[np.ndarray, np.ndarray]:
        """``(ids, fingerprints)`` of every row with a fingerprint, as int64 and uint64 arrays.

        Range distribution: the first permuted table, which holds every row once, read
        from all shards in one binary ``COPY`` (10,000 rows per round trip to a shard).
        """
        if self.range is None:
            return self.index.fetch_all()
        _rows(self.conn, "SELECT simpg.range_in_step(%s::regclass, %s)",
              [self._base, self.range.column])
        statement = sql.SQL("COPY (SELECT r.key, r.fp FROM {} AS r) TO STDOUT (FORMAT BINARY)").format(
            self._relations[0])
        with translated():
            with self.conn.cursor().copy(statement) as copy:
                data = b"".join(bytes(block) for block in copy)
        return _copy_rows(data)

    def _fetch_range(self, k: int | None) -> tuple[np.ndarray, np.ndarray, int]:
        radius = self._radius(k)
        ids, fps = self.fetch_all()
        return ids, fps, radius

    def check(self) -> list[ShardProblem]:
        """``simpg.check_shards`` (``check_range_shards``) of the table and column: ``[]`` when all is well."""
        if self.range is not None:
            return check_range_shards(self.conn, self.table, self.range.column)
        return check_shards(self.conn, self.index.table, self.index.column)


# a row of binary COPY of two NOT NULL bigint columns: field count, then length and value of each
_COPY_ROW = np.dtype([("fields", ">i2"), ("key_length", ">i4"), ("key", ">i8"), ("fp_length", ">i4"), ("fp", ">i8")])
_COPY_HEADER = b"PGCOPY\n\xff\r\n\x00" + bytes(8)  # signature, flags 0, no header extension


def _copy_rows(data: bytes) -> tuple[np.ndarray, np.ndarray]:
    """``(keys as int64, fingerprints as uint64)`` from binary COPY of ``(key, fp)``: 26 bytes a row."""
    if not data.startswith(_COPY_HEADER) or not data.endswith(b"\xff\xff"):
        raise SimpgError("unexpected binary COPY data from the coordinator")
    rows = np.frombuffer(data, dtype=_COPY_ROW, offset=len(_COPY_HEADER),
                         count=(len(data) - len(_COPY_HEADER) - 2) // _COPY_ROW.itemsize)
    return rows["key"].astype(np.int64), rows["fp"].astype(np.int64).view(np.uint64)


def _split_name(conn: psycopg.Connection[Any], table: str) -> tuple[str, str]:
    row = _rows(conn, "SELECT n.nspname::text, c.relname::text FROM pg_catalog.pg_class AS c "
                      "JOIN pg_catalog.pg_namespace AS n ON n.oid = c.relnamespace WHERE c.oid = %s::regclass", [table])
    return row[0][0], row[0][1]


#: The condition of a batch of %s lookups (``ShardedColumn._near_many_sql``): each lookup's
#: ``simpg.lookup_where``, ORed; lookup ``i`` has parameters ``$3i-2`` (fingerprint),
#: ``$3i-1`` (range starts) and ``$3i`` (k). Parameters: column, prefix columns, k, levels, count.
_MANY_CONDITION_SQL = (
    "SELECT pg_catalog.string_agg('(' || simpg.lookup_where(%s, %s::name[], '$' || (3 * i - 2), '$' || (3 * i), "
    "%s, %s::integer[], lows => '$' || (3 * i - 1)) || ')', ' OR ' ORDER BY i) "
    "FROM pg_catalog.generate_series(1, %s) AS i")


#: The condition of each arm of the range distribution's lookup (:func:`_range_near_sql`):
#: ``simpg.lookup_where`` on permuted table t's column ``p`` through alias ``r``; ``$1``
#: the fingerprint, ``$2`` k, then each table's range start and end (table t's
#: ``$(2t + 3)`` and ``$(2t + 4)``). Parameter: the number of tables.
_RANGE_CONDITIONS_SQL = (
    "SELECT pg_catalog.array_agg(simpg.lookup_where('fp', '{p}', '$1', '$2', "
    "starts => ARRAY['$' || (2 * t + 1)], ends => ARRAY['$' || (2 * t + 2)], alias => 'r') "
    "ORDER BY t) "
    "FROM pg_catalog.generate_series(1, %s) AS t")


def _range_near_sql(relations: Sequence[sql.Identifier], conditions: Sequence[str], base: str,
                    column: str) -> sql.Composed:
    """The range distribution's lookup: one arm per permuted table, its condition from :data:`_RANGE_CONDITIONS_SQL`.

    Prepared, its generic plan prunes each arm to the one shard that holds the
    query's prefix range when it starts (PostgreSQL's run-time partition pruning);
    postgres_fdw sends that shard the range and the distance filter. A row found
    through several tables is counted once. It first runs ``simpg.range_in_step``
    once (an InitPlan), which raises when writes may have gone around the triggers
    (a partition attached, detached or created, a trigger missing): never a stale answer.
    Run it with a :class:`psycopg.RawCursor` (``$n`` placeholders).
    """
    arms = sql.SQL(" UNION ALL ").join(
        sql.SQL("SELECT r.key, r.fp FROM {} AS r WHERE {}").format(rel, sql.SQL(condition))
        for rel, condition in zip(relations, conditions, strict=True))
    return sql.SQL("SELECT s.key, simpg.hamming(s.fp, $1) AS distance FROM ({}) AS s "
                   "WHERE (SELECT simpg.range_in_step({}::regclass, {})) "
                   "GROUP BY s.key, s.fp ORDER BY distance, s.key").format(
        arms, sql.Literal(base), sql.Literal(column))
