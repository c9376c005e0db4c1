"""A handle on one indexed fingerprint column, for psycopg 3's async connections.

The same API as :class:`simpg.psycopg.SimIndex`, with ``await``; the SQL comes from
:mod:`simpg.psycopg.queries` and the checks from :mod:`simpg.psycopg._common`, so the
two handles cannot drift apart. The in-memory work of :meth:`AsyncSimIndex.pairs` and
:meth:`AsyncSimIndex.clusters` runs in a worker thread, off the event loop.

Example:
    >>> import psycopg
    >>> from simpg.psycopg import AsyncSimIndex
    >>> conn = await psycopg.AsyncConnection.connect("dbname=app", autocommit=True)  # doctest: +SKIP
    >>> docs = AsyncSimIndex(conn, "docs", "simhash")  # doctest: +SKIP
    >>> await docs.near(0x0123456789ABCDEF, 3)  # doctest: +SKIP
    [Neighbor(id=1, distance=0)]
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any, TypeVar

import numpy as np
import psycopg
from psycopg import sql

from simpg import bits
from simpg.exc import SimpgError
from simpg.fingerprint import fingerprint_many
from simpg.layout import Layout
from simpg.psycopg import _common, lookup, queries, settings
from simpg.psycopg._common import Duplicate, Guard, IndexProblem, IndexStats, Inserted, Neighbor, Pair
from simpg.psycopg.catalog import IndexInfo

__all__ = ["AsyncSimIndex", "configure_lookups_async"]

_T = TypeVar("_T")


async def configure_lookups_async(conn: psycopg.AsyncConnection[Any]) -> None:
    """:func:`~simpg.psycopg.configure_lookups` for an async connection."""
    idle = conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
    try:
        await conn.execute(settings.LOOKUP.statement, settings.LOOKUP.params)
        if idle and not conn.autocommit:
            await conn.commit()
    except psycopg.Error as err:
        raise _common.translate(err) from err


class AsyncSimIndex:
    """Near-duplicate search on ``table.column`` through its simpg index (asyncio).

    Args:
        conn: a psycopg 3 AsyncConnection.
        table: the table, optionally schema-qualified.
        column: the bigint fingerprint column.
        id_column: the column returned as the row's id; default: the primary key.
        prepare: prepare the lookup statements on the server.
    """

    def __init__(self, conn: psycopg.AsyncConnection[Any], table: str, column: str = "simhash", *,
                 id_column: str | None = None, prepare: bool = True) -> None:
        if not isinstance(table, str) or not table:
            raise SimpgError(f"expected a table name, got {table!r}")
        if not isinstance(column, str) or not column:
            raise SimpgError(f"expected a column name, got {column!r}")
        self.conn = conn
        queries.register_dumpers(conn)  # the bigint[] parameters of lookups
        self.table = table
        self.column = column
        self.id_column = id_column
        self.prepare = prepare
        self._info: IndexInfo | None = None
        self._statements: dict[str, bytes] = {}
        self._near = lookup.AsyncNearLookup(conn)
        self._owns_conn = False

    def __repr__(self) -> str:
        return f"AsyncSimIndex({self.table!r}, {self.column!r})"

    @classmethod
    async def connect(cls, conninfo: str, table: str, column: str = "simhash", *,
                      id_column: str | None = None, prepare: bool = True, **kwargs: Any) -> AsyncSimIndex:
        """A handle on a connection of its own, set up for lookups (see :meth:`SimIndex.connect`)."""
        try:
            conn = await psycopg.AsyncConnection.connect(conninfo, autocommit=True, **kwargs)
        except psycopg.Error as err:
            raise _common.translate(err) from err
        try:
            await configure_lookups_async(conn)
            handle = cls(conn, table, column, id_column=id_column, prepare=prepare)
        except BaseException:
            await conn.close()
            raise
        handle._owns_conn = True
        return handle

    async def close(self) -> None:
        """Close the connection if :meth:`connect` opened it."""
        if self._owns_conn:
            await self.conn.close()

    async def __aenter__(self) -> AsyncSimIndex:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def info(self) -> IndexInfo:
        """The index's catalog entry (read on first use; see :meth:`refresh`)."""
        return self._info or await self.refresh()

    async def layout(self) -> Layout:
        """The index layout."""
        return (await self.info()).layout

    async def refresh(self) -> IndexInfo:
        """Read the index layout and the id column again from the database."""
        try:
            async with self.conn.cursor() as cur:
                await cur.execute(queries.CATALOG_SQL, [self.table, self.column])
                catalog = await cur.fetchone()
                assert catalog is not None
                pk_sql, type_sql = queries.id_column_sql()
                if self.id_column is None:
                    await cur.execute(pk_sql, [self.table])
                    name, type_ = _common.id_column(await cur.fetchall())
                else:
                    await cur.execute(type_sql, [self.table, self.id_column])
                    row = await cur.fetchone()
                    if row is None:
                        raise SimpgError(f"column {self.id_column} of table {self.table} does not exist")
                    name, type_ = self.id_column, row[0]
        except psycopg.Error as err:
            raise _common.translate(err) from err
        self._info = IndexInfo.from_rows(catalog, name, type_)
        self._statements = {}
        return self._info

    def _statement(self, info: IndexInfo, name: str) -> bytes:
        # Composing the SQL of a 10-table OR costs more than the lookup's planning:
        # do it once per layout, as bytes.
        if name not in self._statements:
            build = queries.near_sql if name == "near" else queries.near_many_sql
            self._statements[name] = build(info).as_bytes(self.conn)
        return self._statements[name]

    async def create(self, k: int = 3, blocks: int | None = None, inner_blocks: int | None = None, *,
                     config: Any = None) -> Layout:
        """Index the column (``simpg.create_index``); returns the layout chosen."""
        stored = _common.config_text(config)
        try:
            async with self.conn.cursor() as cur:
                await cur.execute("SELECT simpg.create_index(%s::regclass, %s, %s, %s, %s, %s)",
                                  [self.table, self.column, k, blocks, inner_blocks, stored])
        except psycopg.Error as err:
            raise _common.translate(err) from err
        return (await self.refresh()).layout

    async def drop(self) -> None:
        """Remove the index (``simpg.drop_index``)."""
        try:
            async with self.conn.cursor() as cur:
                await cur.execute("SELECT simpg.drop_index(%s::regclass, %s)", [self.table, self.column])
        except psycopg.Error as err:
            raise _common.translate(err) from err
        self._info = None

    async def check(self, verify_rows: bool = True) -> list[IndexProblem]:
        """Problems of the column's simpg index (``simpg.check``; see :meth:`SimIndex.check`)."""
        verify = _common.verify_rows(verify_rows)
        try:
            async with self.conn.cursor() as cur:
                await cur.execute(queries.CHECK_SQL, [self.table, self.column, verify])
                rows = await cur.fetchall()
                indexed = bool(rows)
                if not indexed:
                    await cur.execute(queries.INDEXED_SQL, [self.table, self.column])
                    indexed = (await cur.fetchone() or (False,))[0]
        except psycopg.Error as err:
            raise _common.translate(err) from err
        if not indexed:
            raise _common.no_index_error(self.table, self.column)
        return [IndexProblem(*row) for row in rows]

    async def repair(self) -> list[str]:
        """``simpg.repair`` of the column's index; the statements run (see :meth:`SimIndex.repair`)."""
        try:
            async with self.conn.cursor() as cur:
                await cur.execute(queries.REPAIR_SQL, [self.table, self.column])
                done = [row[0] for row in await cur.fetchall()]
        except psycopg.Error as err:
            raise _common.translate(err) from err
        self._info = None
        return done

    async def add(self, fingerprints: Iterable[int] | np.ndarray | None = None, *,
                  texts: Iterable[Any] | None = None, config: Any = None,
                  columns: Mapping[str, Sequence[Any]] | None = None, workers: int | None = None) -> int:
        """Bulk-load rows through COPY, all or nothing (see :meth:`SimIndex.add`)."""
        info = await self.info()
        if (fingerprints is None) == (texts is None):
            raise SimpgError("pass either fingerprints or texts")
        if fingerprints is not None:
            fps = _common.fingerprint_array(fingerprints)
        else:
            docs = list(texts)  # type: ignore[arg-type]
            cfg = _common.text_config(config, info)
            n_workers = workers if workers is not None else (1 if len(docs) < 2000 else None)
            fps = await asyncio.to_thread(
                lambda: np.array(list(fingerprint_many(docs, cfg, workers=n_workers)), dtype=np.uint64))
        names, values = _common.extra_columns(columns, len(fps))
        try:
            async with self.conn.transaction(), self.conn.cursor() as cur:
                if not names:
                    async with cur.copy(queries.copy_in_sql(info, names)) as copy:
                        await copy.write(queries.binary_copy_payload([fps.view(np.int64)]))
                else:
                    async with cur.copy(queries.copy_in_sql(info, names, binary=False)) as copy:
                        for row in zip(fps.view(np.int64).tolist(), *values, strict=True):
                            await copy.write_row(row)
        except psycopg.Error as err:
            raise _common.translate(err) from err
        return len(fps)

    async def near(self, fingerprint: int, k: int | None = None) -> list[Neighbor]:
        """Rows within distance ``k`` of ``fingerprint``, nearest first (then by id)."""
        fp = _common.fingerprint(fingerprint)

        async def run(info: IndexInfo) -> list[Neighbor]:
            # a kept AsyncRawCursor, or the tested fast path where it means the same (simpg.psycopg.lookup)
            return await self._near.near(info, fp, _common.radius(k, info), prepare=self.prepare)

        return await self._lookup(run)

    # -- near-unique guard (docs/guard.md) ---------------------------------------------

    async def create_guard(self, k: int | None = None, key_column: str | None = None) -> str:
        """``simpg.create_guard``: from now on no two committed rows within ``k`` bits; returns its name.

        ``k`` defaults to the index's. Writes that would break it raise
        :class:`~simpg.exc.NearDuplicate` through this handle (``ExclusionViolation`` elsewhere:
        :func:`~simpg.psycopg.near_duplicate` reads it).
        """
        row = await self._call("SELECT simpg.create_guard(%s::regclass, %s, %s, %s)",
                                [self.table, self.column, k, key_column])
        return str(row[0])

    async def drop_guard(self) -> None:
        """``simpg.drop_guard``: remove the column's guard."""
        await self._call("SELECT simpg.drop_guard(%s::regclass, %s)", [self.table, self.column])

    async def guards(self) -> list[Guard]:
        """The table's guards (``simpg.table_guards``)."""
        try:
            async with self.conn.cursor() as cur:
                await cur.execute("SELECT * FROM simpg.table_guards(%s::regclass)", [self.table])
                return [Guard(*row) for row in await cur.fetchall()]
        except psycopg.Error as err:
            raise _common.translate(err) from err

    async def insert_or_get(self, row: Mapping[str, Any]) -> Inserted:
        """``simpg.insert_or_get``: insert ``row``, or return the stored row it would duplicate.

        ``row`` maps columns to values, the fingerprint as an unsigned int.
        """
        values = dict(row)
        if self.column in values and values[self.column] is not None:
            values[self.column] = bits.to_db(_common.fingerprint(values[self.column]))
        found = await self._call("SELECT * FROM simpg.insert_or_get(%s::regclass, %s::jsonb, %s)",
                                  [self.table, json.dumps(values, default=str), self.column])
        return Inserted(*found)

    async def _call(self, statement: str, params: list[Any]) -> Any:
        try:
            async with self.conn.cursor() as cur:
                await cur.execute(statement, params)
                return await cur.fetchone()
        except psycopg.Error as err:
            raise _common.translate(err) from err

    async def duplicates(self, fingerprint: int, sketch: bytes, k: int | None = None, *,
                    sketch_column: str = "sketch", max_sketch_distance: int | None = None) -> list[Duplicate]:
        """Near-duplicates of one document: rows within ``k`` bits whose sketches confirm them.

        The lookup of :meth:`near`, with each row found kept only when its sketch (a
        ``bit(256)`` column, :mod:`simpg.fingerprint.minhash`) differs from ``sketch`` in at
        most ``max_sketch_distance`` bits (default
        :data:`~simpg.fingerprint.minhash.MAX_SKETCH_DISTANCE`). Nearest sketch first.

        Args:
            fingerprint: the document's fingerprint.
            sketch: the document's sketch (32 bytes).
            k: fingerprint radius (default: the index's).
            sketch_column: the table's column of sketches.
            max_sketch_distance: the largest sketch distance that confirms a row.
        """
        fp = _common.fingerprint(fingerprint)

        async def run(info: IndexInfo) -> list[Duplicate]:
            params = _common.duplicates_params(info, fp, _common.radius(k, info), sketch, max_sketch_distance)
            key = f"duplicates {sketch_column}"  # composed once per layout and column, as near's
            if key not in self._statements:
                self._statements[key] = queries.duplicates_sql(info, sketch_column).as_bytes(self.conn)
            statement = self._statements[key]
            async with self.conn.cursor(binary=True) as cur:
                try:
                    await cur.execute(statement, params, prepare=self.prepare)
                except (psycopg.errors.UndefinedColumn, psycopg.errors.UndefinedFunction) as err:
                    raise _common.sketch_column_error(err, self.table, sketch_column) from err
                return [Duplicate(*row) for row in await cur.fetchall()]

        return await self._lookup(run)

    async def near_many(self, fingerprints: Iterable[int] | np.ndarray,
                        k: int | None = None) -> list[list[Neighbor]]:
        """:meth:`near` for many fingerprints in one statement (one round trip)."""
        fps = _common.fingerprint_array(fingerprints)

        async def run(info: IndexInfo) -> list[list[Neighbor]]:
            radius = _common.radius(k, info)
            if not len(fps):
                return []
            params = queries.near_many_params(info, fps, radius)
            local = settings.NEAR_MANY_SETTINGS
            outer = self.conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE
            async with self.conn.transaction(), self.conn.cursor(binary=True) as cur:
                await cur.execute(local.statement, local.params)
                saved = await cur.fetchone()
                await cur.execute(self._statement(info, "near_many"), params, prepare=self.prepare)
                rows = await cur.fetchall()
                if outer and saved:  # the local settings would outlive the savepoint
                    await cur.execute(local.restore_statement, local.restore_params(saved))
            return _common.group_near_many(rows, len(fps))

        return await self._lookup(run)

    async def _lookup(self, run: Callable[[IndexInfo], Awaitable[_T]]) -> _T:
        # See SimIndex._lookup: a layout changed since it was read is read again, once.
        try:
            return await run(_common.with_ids(await self.info()))
        except psycopg.Error as err:
            if not _common.layout_changed(err):
                raise _common.translate(err) from err
            stale, self._info = self._info, None
            if _common.aborted(self.conn):
                raise (_common.layout_changed_error(stale) if stale else _common.translate(err)) from err
        return await run(_common.with_ids(await self.refresh()))

    async def fetch_all(self, where: sql.Composable | None = None) -> tuple[np.ndarray, np.ndarray]:
        """``(ids, fingerprints)`` of every row with a fingerprint (see :meth:`SimIndex.fetch_all`)."""
        info = _common.with_ids(await self.info())
        integer = _common.integer_ids(info)
        outer = self.conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE
        parts = []
        try:
            async with self.conn.transaction(), self.conn.cursor(binary=True) as cur:
                cur.adapters.register_loader("bytea", queries.RawByteaLoader)
                if not outer:
                    await cur.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
                local = settings.FETCH_SETTINGS
                await cur.execute(local.statement, local.params)
                saved = await cur.fetchone()
                await cur.execute(queries.BLOCKS_SQL, [queries.regclass_text(info)])
                row = await cur.fetchone()
                for first, end in queries.fetch_ranges(int(row[0]) if row else 0):
                    await cur.execute(queries.fetch_sql(info, first, end, where))
                    ids, fps = await cur.fetchone() or (None, None)
                    parts.append(queries.parse_fetch(ids, fps, integer))
                if outer and saved:
                    await cur.execute(local.restore_statement, local.restore_params(saved))
        except psycopg.Error as err:
            raise _common.translate(err) from err
        return _common.join_parts(parts, integer)

    async def pair_arrays(self, k: int | None = None, where: sql.Composable | None = None,
                          ) -> AsyncIterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """:meth:`pairs` as numpy chunks ``(ids a, ids b, distances)``."""
        k = _common.radius(k, await self.info())
        ids, fps = await self.fetch_all(where)
        chunks = _common.pair_arrays(ids, fps, k)
        while (chunk := await asyncio.to_thread(next, chunks, None)) is not None:
            yield chunk

    async def pairs(self, k: int | None = None, where: sql.Composable | None = None) -> AsyncIterator[Pair]:
        """Every pair of rows within distance ``k``, each once, streamed (see :meth:`SimIndex.pairs`)."""
        async for chunk in self.pair_arrays(k, where):
            for pair in _common.pairs_from_arrays(chunk):
                yield pair

    async def clusters(self, k: int | None = None, where: sql.Composable | None = None,
                       method: str = "representative") -> list[list[Any]]:
        """Clusters of near-duplicate rows, largest first (see :meth:`SimIndex.clusters`)."""
        method = _common.cluster_method(method)
        k = _common.radius(k, await self.info())
        ids, fps = await self.fetch_all(where)
        return await asyncio.to_thread(_common.clusters_of, ids, fps, k, method)

    async def stats(self, exact: bool = True) -> IndexStats:
        """Rows, layout, sizes and fingerprint config of the index."""
        info = await self.info()
        statement, params = queries.stats_query(info, exact)
        try:
            async with self.conn.cursor() as cur:
                await cur.execute(statement, params)
                row = await cur.fetchone()
        except psycopg.Error as err:
            raise _common.translate(err) from err
        assert row is not None
        return _common.make_stats(info, row, exact)
