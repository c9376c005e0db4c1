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

Example:
    >>> import psycopg
    >>> from simpg.shards import Shard, ShardedIndex, create_shards
    >>> coord = psycopg.connect("dbname=app", autocommit=True)  # doctest: +SKIP
    >>> coord.execute("CREATE TABLE docs (id bigint NOT NULL, simhash bigint) PARTITION BY HASH (id)")  # doctest: +SKIP
    >>> create_shards(coord, "docs", "simhash", [Shard("s1", "host=db1 dbname=app"),
    ...                                          Shard("s2", "host=db2 dbname=app")], k=3, rows=10**8)  # doctest: +SKIP
    >>> ShardedIndex(coord, "docs", "simhash", id_column="id").near(0x0123456789ABCDEF, 3)  # doctest: +SKIP
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

from simpg import bits, schema
from simpg.exc import SimpgError
from simpg.layout import Layout
from simpg.psycopg import Neighbor, Pair, SimHashColumn
from simpg.psycopg._common import translate, translated

logger = logging.getLogger(__name__)

__all__ = [
    "Shard",
    "ShardInfo",
    "ShardProblem",
    "ShardedIndex",
    "attach_shard",
    "check_shards",
    "create_server",
    "create_shards",
    "parse_shard",
    "prepare_shard",
    "shard_ddl",
    "shards",
]

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
    """``simpg.check_shards``: every problem of ``table``'s shards; ``[]`` when all is well."""
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
    server, with ``parallel_commit`` on PostgreSQL 15 and later. Either is left alone
    when it exists already. Returns the statements run,
    with any password masked; passwords are never logged.
    """
    options = {k: v for k, v in psycopg.conninfo.conninfo_to_dict(shard.dsn).items()
               if v is not None and k not in IGNORED_OPTIONS}
    server_options = {k: str(v) for k, v in options.items() if k not in USER_MAPPING_OPTIONS}
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

    with conn.transaction():
        if not _rows(conn, "SELECT FROM pg_catalog.pg_extension WHERE extname = 'postgres_fdw'"):
            run(sql.SQL("CREATE EXTENSION IF NOT EXISTS postgres_fdw"))
        if not _rows(conn, "SELECT FROM pg_catalog.pg_foreign_server WHERE srvname = %s", [shard.name]):
            run(sql.SQL("CREATE SERVER {} FOREIGN DATA WRAPPER postgres_fdw{}").format(
                sql.Identifier(shard.name), opts(server_options)))
        if not _rows(conn, "SELECT FROM pg_catalog.pg_user_mappings AS u "
                           "WHERE u.srvname = %s AND u.usename IN (current_user, 'public')", [shard.name]):
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
                  rows: int | None = None, config: str | None = None) -> list[ShardProblem]:
    """Set up ``table`` (hash-partitioned, on the coordinator ``conn``) over ``shard_list``.

    1. The layout, once, on the coordinator: ``simpg.create_index`` on the partitioned
       table, sized by ``blocks`` (and ``inner_blocks``) or for ``rows`` rows in all;
       an existing index of the column is kept (and must have that layout, if given).
    2. Per shard: its foreign server and user mapping (:func:`create_server`), its
       table and simpg index (:func:`prepare_shard`), then ``simpg.attach_shard`` with
       modulus ``len(shard_list)`` and remainder its position.

    Steps already done (a shard attached, a server made) are skipped, so running it
    again after a failure resumes. Returns ``simpg.check_shards``: ``[]`` when all is well.
    """
    if not shard_list:
        raise SimpgError("no shards given")
    names = [s.name for s in shard_list]
    if len(set(names)) != len(names):
        raise SimpgError(f"shard names must differ, got {names}")
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


class ShardedIndex:
    """Lookups, pairs and clusters on a sharded table, through the coordinator.

    ``near``, ``pairs`` and ``clusters`` are :class:`~simpg.psycopg.SimHashColumn`'s: a
    lookup's prefix ranges and distance filter go to every shard, whose scans run at
    once. ``near_many`` sends each shard one query for up to 100 fingerprints (the OR of
    their ranges and distance filters), since SimHashColumn's batch form (a join with the
    queries) is not sent to the shards: PostgreSQL would read every shard whole for it.
    For the lowest latency give the handle a connection of its own set up by
    :func:`simpg.psycopg.configure_lookups` (generic plans). The partitioned table has no primary
    key (PostgreSQL allows no unique index over foreign partitions), so name the id
    column; keys are unique when the partition key is (each shard has it as primary key).
    """

    def __init__(self, conn: psycopg.Connection[Any], table: str, column: str = "simhash", *,
                 id_column: str) -> None:
        self.conn = conn
        self.index = SimHashColumn(conn, table, column, id_column=id_column)

    def near(self, fingerprint: int, k: int | None = None) -> list[Neighbor]:
        """Rows within ``k`` of ``fingerprint``, nearest first, from every shard."""
        return self.index.near(fingerprint, k)

    def near_many(self, fingerprints: Iterable[int] | np.ndarray, k: int | None = None) -> list[list[Neighbor]]:
        """``near`` of each fingerprint: one list per fingerprint, in order, one statement per 100."""
        fps = [bits.check(fp) for fp in (fingerprints.tolist() if isinstance(fingerprints, np.ndarray)
                                         else fingerprints)]
        info = self.index.info
        radius = info.layout.k if k is None else k
        if not isinstance(radius, int) or isinstance(radius, bool) or not 0 <= radius <= info.layout.k:
            raise SimpgError(f"k must be an integer from 0 to the index's radius {info.layout.k}, got {k!r}")
        out: list[list[Neighbor]] = [[] for _ in fps]
        # at most 100 queries and about 20,000 parameters a statement
        step = max(1, min(100, 20_000 // (2 * info.layout.tables + 2)))
        for start in range(0, len(fps), step):
            statement, params = self._near_many_sql(fps[start:start + step], radius)
            for n, id_, distance in _rows(self.conn, statement, params):
                out[start + n - 1].append(Neighbor(id_, distance))
        return out

    def _near_many_sql(self, fps: Sequence[int], k: int) -> tuple[sql.Composed, list[Any]]:
        """One statement for many lookups that postgres_fdw sends whole to every shard.

        Each shard gets one query: the OR of every lookup's prefix ranges and the OR of
        their distance filters, so it returns the rows within ``k`` of some lookup; the
        coordinator then gives each row to the lookups it is within ``k`` of (a join of
        those few rows with the fingerprints). Measured on 200,000 rows over two shards:
        0.95 ms per lookup in batches of 100, against 2.0 ms for a UNION ALL of one
        lookup per fingerprint (each a cursor on every shard, one after the other).
        """
        info = self.index.info
        fp_col = sql.Identifier(info.column)
        ranges = sql.SQL("({})").format(sql.SQL(" OR ").join(
            sql.SQL("t.{} BETWEEN %s AND %s").format(sql.Identifier(c)) for c in info.prefix_columns))
        near = sql.SQL("simpg.hamming(t.{}, %s) <= %s").format(fp_col)
        statement = sql.SQL(
            "SELECT u.n, t.{id}, simpg.hamming(t.{fp}, u.q) AS distance "
            "FROM (SELECT t.{id}, t.{fp} FROM {rel} AS t WHERE ({ranges}) AND ({near})) AS t "
            "JOIN unnest(%s::integer[], %s::bigint[]) AS u(n, q) ON simpg.hamming(t.{fp}, u.q) <= %s "
            "ORDER BY u.n, distance, t.{id}"
        ).format(id=sql.Identifier(self.index.id_column or ""), fp=fp_col, rel=info.relation,
                 ranges=sql.SQL(" OR ").join([ranges] * len(fps)), near=sql.SQL(" OR ").join([near] * len(fps)))
        params: list[Any] = []
        for fp in fps:
            params += [Int8(v) for v in info.ranges.flat(fp)]
        signed = [bits.to_db(fp) for fp in fps]
        for q in signed:
            params += [Int8(q), Int8(k)]
        params += [list(range(1, len(fps) + 1)), signed, Int8(k)]
        return statement, params

    def pairs(self, k: int | None = None) -> Iterator[Pair]:
        """Every pair within ``k`` across all shards (SimHashColumn.pairs: the rows are read once)."""
        return self.index.pairs(k)

    def clusters(self, k: int | None = None, method: str = "representative") -> list[list[Any]]:
        """Clusters across all shards (SimHashColumn.clusters)."""
        return self.index.clusters(k, method=method)

    def check(self) -> list[ShardProblem]:
        """``simpg.check_shards`` of the table and column: ``[]`` when every shard is right."""
        return check_shards(self.conn, self.index.table, self.index.column)
