# Generated from aio.py by simpg/psycopg/_async_to_sync.py: do not edit.
# Change aio.py, then run python -m simpg.psycopg._async_to_sync
"""A handle on one indexed fingerprint column, for psycopg 3.

``aio.py`` is the one source of the async handle and the sync one: ``index.py`` is
written from it by ``python -m simpg.psycopg._async_to_sync`` (``await`` and
``async`` dropped, ``Async`` names made sync; tests/unit/test_async_to_sync.py fails
when it is stale). That is psycopg's own way (``tools/async_to_sync.py``). An I/O-free
core driven by two thin shells was the other way: every method would become a
generator of requests (execute, fetch, COPY, transaction, thread) with two
interpreters of them, results typed ``Any``, and each public method still written
twice; here each method is written once, as plain code, and the sync one reads as
plain code too. Where the two really differ (``info`` is a property of the sync
handle, ``connect`` polls on request, pairs stream eagerly checked), an
``if True:  # ASYNC`` block holds the async code and its ``else:`` the sync code.
SQL comes from :mod:`simpg.psycopg.statements` and :mod:`simpg.psycopg.catalog`, checks
from :mod:`simpg.psycopg._common`, result types from :mod:`simpg.results`; the in-memory
work of fingerprinting, pairs and clusters runs in a worker thread in the async handle,
off the event loop.

Example:
    >>> import psycopg
    >>> from simpg.psycopg import SimHashColumn
    >>> conn = psycopg.Connection.connect("dbname=app", autocommit=True)  # doctest: +SKIP
    >>> docs = SimHashColumn(conn, "docs", "simhash")  # doctest: +SKIP
    >>> docs.create(k=3)  # doctest: +SKIP
    Layout(k=3, levels=(4,))
    >>> docs.add([0x0123456789ABCDEF, 0x0123456789ABCDEE])  # doctest: +SKIP
    2
    >>> docs.near(0x0123456789ABCDEF, 1)  # doctest: +SKIP
    [Neighbor(id=1, distance=0), Neighbor(id=2, distance=1)]
    >>> [pair for pair in docs.pairs(3)]  # doctest: +SKIP
    [Pair(a=1, b=2, distance=1)]

Fingerprints are unsigned Python ints in ``[0, 2**64)`` (or ``uint64`` numpy arrays);
the handle converts them to the signed bigint PostgreSQL stores. ``k`` defaults to the
index's radius and may not exceed it. The handle reads the index layout once from
``simpg.indexes``; every lookup statement checks it (``simpg.layout_is``), so after the
index was re-created elsewhere with another layout the handle reads it again by itself.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np
import psycopg
from psycopg import sql

from simpg import allpairs, bits
from simpg.exc import SimpgError, translate, translated
from simpg.fingerprint import minhash
from simpg.layout import Layout
from simpg.psycopg import _common, catalog, lookup, settings, statements, wire
from simpg.psycopg.busywait import BusyWaitConnection, check_busy_wait
from simpg.psycopg.catalog import IndexInfo
from simpg.results import Duplicate, Guard, IndexProblem, IndexStats, Inserted, Neighbor, Pair

if TYPE_CHECKING:
    from simpg.review.explain import Explanation

logger = logging.getLogger(__name__)

__all__ = ["OwnedConnection", "SimHashColumn", "configure_lookups"]

_T = TypeVar("_T")


#: The checks of the SQL reports' sketch arguments (a sketch column to go with them, its
#: type and its band columns', the distance's range), and the distance that confirms.
_SKETCH_DISTANCE_SQL = ("SELECT simpg.report_sketch_distance(%s::pg_catalog.regclass, %s::name, %s::integer, "
                        "%s::boolean)")


def configure_lookups(conn: psycopg.Connection[Any]) -> None:
    """Give ``conn``'s session the settings of a lookup connection (``LOOKUP_SETTINGS``).

    A prepared :meth:`SimHashColumn.near` then runs one generic plan instead of being
    planned at every call (0.08 ms less per lookup at 10M rows, docs/benchmarks.md).
    The settings are session-wide: use them on connections that serve simpg lookups,
    e.g. as a psycopg_pool ``configure`` callback, not on one that runs your other
    queries (they would all get generic plans and no sequential scans). Call it on an
    idle connection; without autocommit it commits the transaction it opens.
    """
    idle = conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
    with translated():
        conn.execute(settings.LOOKUP.statement, settings.LOOKUP.params)
        if idle and not conn.autocommit:
            conn.commit()


_Handle = TypeVar("_Handle", bound="OwnedConnection")


class OwnedConnection:
    """What every handle does with its connection: one that :meth:`connect` opened closes with the handle."""

    conn: psycopg.Connection[Any]
    _owns_conn = False

    @classmethod
    def _owning(cls, conn: psycopg.Connection[Any], make: Callable[[], _Handle]) -> _Handle:
        # connect()'s handle, which closes the connection with itself (or now, if making it fails)
        try:
            handle = make()
            handle._set_up()
        except BaseException:
            conn.close()
            raise
        handle._owns_conn = True
        return handle

    def _set_up(self) -> None:
        """What a connection of the handle's own needs before its first statement (nothing here)."""

    def close(self) -> None:
        """Close the connection if :meth:`connect` opened it (a connection passed in stays open)."""
        if self._owns_conn:
            self.conn.close()

    def __enter__(self: _Handle) -> _Handle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class SimHashColumn(OwnedConnection):
    """Near-duplicate search on ``table.column`` through its simpg index.

    Args:
        conn: a psycopg 3 connection. Statements run in its current transaction
            (add() and create() open a savepoint or transaction of their own).
        table: the table, optionally schema-qualified (``"public.docs"``).
        column: the bigint fingerprint column.
        key_column: the column returned as the row's id; default: the table's
            single-column primary key.
        prepare: prepare the lookup statements on the server (turn off behind a
            pooler that cannot keep prepared statements, e.g. PgBouncer in
            transaction mode before 1.21).
    """

    def __init__(self, conn: psycopg.Connection[Any], table: str, column: str = "simhash", *,
                 key_column: str | None = None, prepare: bool = True) -> None:
        if not isinstance(table, str) or not table:
            raise SimpgError(f"expected a table name, got {table!r}")
        if not isinstance(column, str) or not column:
            raise SimpgError(f"expected a column name, got {column!r}")
        self.conn = conn
        wire.register_dumpers(conn)  # the bigint[] parameters of lookups
        self.table = table
        self.column = column
        self.key_column = key_column
        self.prepare = prepare
        self._info: IndexInfo | None = None
        self._statements: dict[str, bytes] = {}
        self._near = lookup.NearLookup(conn)

    def __repr__(self) -> str:
        return f"SimHashColumn({self.table!r}, {self.column!r})"

    @classmethod
    def connect(cls, conninfo: str, table: str, column: str = "simhash", *, key_column: str | None = None,
                prepare: bool = True, busy_wait: float = 0.0, **kwargs: Any) -> SimHashColumn:
        """A handle on a connection of its own, set up for lookups (:func:`configure_lookups`).

        The connection is in autocommit mode; :meth:`close` (or leaving a ``with``
        block) closes it. ``kwargs`` go to :func:`psycopg.connect`. ``busy_wait``:
        seconds to poll for each answer before sleeping (a
        :class:`~simpg.psycopg.busywait.BusyWaitConnection`); 0, the default, waits as
        psycopg does. Only for a server on other CPUs than this client (see there).

        Example:
            >>> with SimHashColumn.connect("dbname=app", "docs") as docs:  # doctest: +SKIP
            ...     docs.near(0x0123456789ABCDEF, 3)
        """
        busy_wait = check_busy_wait(busy_wait)
        with translated():
            if busy_wait:
                polling = BusyWaitConnection.connect(conninfo, autocommit=True, **kwargs)
                polling.busy_wait = busy_wait
                conn: psycopg.Connection[Any] = polling
            else:
                conn = psycopg.connect(conninfo, autocommit=True, **kwargs)
        return cls._owning(conn, lambda: cls(conn, table, column, key_column=key_column, prepare=prepare))

    def _set_up(self) -> None:
        configure_lookups(self.conn)

    # -- catalog ------------------------------------------------------------------

    @property
    def info(self) -> IndexInfo:
        """The index's catalog entry (read on first use; see :meth:`refresh`)."""
        return self._current()

    @property
    def layout(self) -> Layout:
        """The index layout."""
        return self._current().layout

    def _current(self) -> IndexInfo:
        return self._info or self.refresh()

    def refresh(self) -> IndexInfo:
        """Read the index layout and the id column again from the database."""
        with translated():
            with self.conn.cursor() as cur:
                cur.execute(catalog.CATALOG_SQL, [self.table, self.column])
                layout_row = cur.fetchone()
                assert layout_row is not None
                pk_sql, type_sql = catalog.key_column_sql()
                if self.key_column is None:
                    cur.execute(pk_sql, [self.table])
                    name, type_ = _common.key_column(cur.fetchall())
                else:
                    cur.execute(type_sql, [self.table, self.key_column])
                    row = cur.fetchone()
                    if row is None:
                        raise SimpgError(f"column {self.key_column} of table {self.table} does not exist")
                    name, type_ = self.key_column, row[0]
        self._info = IndexInfo.from_rows(layout_row, name, type_)
        self._statements = {}
        return self._info

    def _statement(self, info: IndexInfo, name: str) -> bytes:
        # Composing the SQL of a 10-table OR costs more than the lookup's planning:
        # do it once per layout, as bytes.
        if name not in self._statements:
            build = statements.near_sql if name == "near" else statements.near_many_sql
            self._statements[name] = build(info).as_bytes(self.conn)
        return self._statements[name]

    def create(self, k: int = 3, blocks: int | None = None, inner_blocks: int | None = None, *,
               config: Any = None) -> Layout:
        """Index the column (``simpg.create_index``); returns the layout chosen.

        Args:
            k: the largest distance lookups may ask for.
            blocks: blocks of the first level; None lets simpg size it from the rows.
            inner_blocks: blocks of a second level (Google's two-level layouts).
            config: the :class:`~simpg.fingerprint.FingerprintConfig` of the stored
                fingerprints, stored with the index so that add(texts=...) uses the same one.
        """
        stored = _common.config_text(config)
        self._call("SELECT simpg.create_index(%s::regclass, %s, %s, %s, %s, %s)",
                   [self.table, self.column, k, blocks, inner_blocks, stored])
        info = self.refresh()
        return info.layout

    def drop(self) -> None:
        """Remove the index (``simpg.drop_index``): its prefix columns and their B-trees."""
        self._call("SELECT simpg.drop_index(%s::regclass, %s)", [self.table, self.column])
        self._info = None

    def check(self, verify_rows: bool = True) -> list[IndexProblem]:
        """Problems of the column's simpg index (``simpg.check``); an empty list: all is well.

        Reports missing prefix columns (queries refuse the index), missing B-trees (exact
        but slow), invalid indexes (an interrupted ``CREATE INDEX CONCURRENTLY``), several
        layouts on the column, and, with ``verify_rows``, stored prefixes that
        ``simpg.permute`` no longer computes (this reads the whole table).
        :meth:`repair` puts right the first three.

        Raises:
            SimpgError: the column has no simpg index at all (nothing to check).
        """
        verify = _common.verify_rows(verify_rows)
        with translated():
            with self.conn.cursor() as cur:
                cur.execute(catalog.CHECK_SQL, [self.table, self.column, verify])
                rows = cur.fetchall()
                indexed = bool(rows)
                if not indexed:
                    cur.execute(catalog.INDEXED_SQL, [self.table, self.column])
                    indexed = (cur.fetchone() or (False,))[0]
        if not indexed:
            raise _common.no_index_error(self.table, self.column)
        return [IndexProblem(*row) for row in rows]

    def repair(self) -> list[str]:
        """Make the column's simpg index usable again (``simpg.repair``); returns the statements run.

        Drops invalid indexes and builds missing B-trees (not concurrently: writers to
        the table wait). An index that lost a prefix column cannot answer exactly and
        has its other prefix columns dropped: :meth:`create` it again afterwards. Stale
        prefix values are left alone (:meth:`drop`, then :meth:`create`). An empty
        list: there was nothing to do.
        """
        with translated():
            with self.conn.cursor() as cur:
                cur.execute(catalog.REPAIR_SQL, [self.table, self.column])
                done = [row[0] for row in cur.fetchall()]
        self._info = None  # the layout is read again at the next call
        return done

    # -- loading --------------------------------------------------------------------

    def add(self, fingerprints: Iterable[int] | np.ndarray | None = None, *,
            texts: Iterable[Any] | None = None, config: Any = None,
            columns: Mapping[str, Sequence[Any]] | None = None, workers: int | None = None) -> int:
        """Bulk-load rows through COPY, all or nothing; returns the number of rows.

        Args:
            fingerprints: unsigned fingerprints (ints or a ``uint64`` array).
            texts: documents to fingerprint instead (str, UTF-8 bytes or field mappings).
            config: fingerprint config for ``texts``; default: the index's, else
                ``FingerprintConfig()``. A config other than the index's is an error.
            columns: other columns of the new rows, name -> one value per row.
            workers: processes for fingerprinting ``texts`` (default: 1 for fewer than
                2000 texts, else one per CPU).
        """
        if (fingerprints is None) == (texts is None):
            raise SimpgError("pass either fingerprints or texts")
        if fingerprints is not None:
            fps = _common.fingerprint_array(fingerprints)
        else:
            docs = list(texts or ())
            cfg = _common.text_config(config, self._current())
            fps = _common.fingerprint_texts(docs, cfg, workers)
        names, values = _common.extra_columns(columns, len(fps))
        info = self._current()
        with translated():
            with self.conn.transaction(), self.conn.cursor() as cur:
                if not names:
                    with cur.copy(statements.copy_in_sql(info, names)) as copy:
                        copy.write(wire.binary_copy_payload([fps.view(np.int64)]))
                else:
                    # Text COPY: psycopg adapts each extra value from its Python type.
                    with cur.copy(statements.copy_in_sql(info, names, binary=False)) as copy:
                        for row in zip(fps.view(np.int64).tolist(), *values, strict=True):
                            copy.write_row(row)
        return len(fps)

    # -- lookups --------------------------------------------------------------------

    def near(self, fingerprint: int, k: int | None = None) -> list[Neighbor]:
        """Rows within distance ``k`` of ``fingerprint``, nearest first (then by id)."""
        fp = _common.fingerprint(fingerprint)

        def run(info: IndexInfo) -> list[Neighbor]:
            # a kept RawCursor, or the tested fast path where it means the same (simpg.psycopg.lookup)
            return self._near.near(info, fp, _common.radius(k, info), prepare=self.prepare)

        return self._lookup(run)

    # -- near-unique guard (docs/guard.md) ---------------------------------------------

    def create_guard(self, k: int | None = None, key_column: str | None = None, *,
                     sketch_column: str | None = None, max_sketch_distance: int | None = None,
                     bands: bool | None = None) -> str:
        """``simpg.create_guard``: from now on no two committed rows within ``k`` bits; returns its name.

        ``k`` defaults to the index's. Writes that would break it raise
        :class:`~simpg.exc.NearDuplicate` through this handle (``ExclusionViolation`` elsewhere:
        :func:`~simpg.psycopg.near_duplicate` reads it). With ``sketch_column`` (a
        ``bit(256)`` column), only rows whose sketches also lie within
        ``max_sketch_distance`` bits (default
        :data:`~simpg.fingerprint.minhash.MAX_SKETCH_DISTANCE`) count, the rows
        :meth:`duplicates` returns; with ``bands`` (the default with a sketch column,
        as ``simpg dedup`` decides), rows sharing a band key (``<sketch_column>_b0`` ..
        ``_b3``) so confirmed count too (docs/guard.md).
        """
        row = self._call("SELECT simpg.create_guard(%s::regclass, %s, %s, %s, %s, %s, %s)",
                         [self.table, self.column, k, key_column, sketch_column, max_sketch_distance, bands])
        return str(row[0])

    def drop_guard(self) -> None:
        """``simpg.drop_guard``: remove the column's guard."""
        self._call("SELECT simpg.drop_guard(%s::regclass, %s)", [self.table, self.column])

    def guards(self) -> list[Guard]:
        """The table's guards (``simpg.table_guards``)."""
        with translated():
            with self.conn.cursor() as cur:
                cur.execute("SELECT * FROM simpg.table_guards(%s::regclass)", [self.table])
                return [Guard.from_row(row) for row in cur.fetchall()]

    def insert_or_get(self, row: Mapping[str, Any]) -> Inserted:
        """``simpg.insert_or_get``: insert ``row``, or return the stored row it would duplicate.

        ``row`` maps columns to values, the fingerprint as an unsigned int.
        """
        values = dict(row)
        if self.column in values and values[self.column] is not None:
            values[self.column] = bits.to_db(_common.fingerprint(values[self.column]))
        found = self._call("SELECT * FROM simpg.insert_or_get(%s::regclass, %s::jsonb, %s)",
                           [self.table, json.dumps(values, default=str), self.column])
        return Inserted(*found)

    def _call(self, statement: str | sql.Composed, params: Sequence[Any]) -> Any:
        # one statement, its first row
        with translated():
            with self.conn.cursor() as cur:
                cur.execute(statement, params)
                return cur.fetchone()

    def duplicates(self, fingerprint: int, sketch: bytes, k: int | None = None, *,
                   band_keys: Sequence[int] | None = None, band_columns: Sequence[str] | None = None,
                   sketch_column: str = "sketch", max_sketch_distance: int | None = None) -> list[Duplicate]:
        """Near-duplicates of one document: rows within ``k`` bits, or sharing a band key, whose sketches confirm them.

        The lookup of :meth:`near`, with each row found kept only when its sketch (a
        ``bit(256)`` column, :mod:`simpg.fingerprint.minhash`) differs from ``sketch`` in at
        most ``max_sketch_distance`` bits (default
        :data:`~simpg.fingerprint.minhash.MAX_SKETCH_DISTANCE`). Nearest sketch first.
        With ``band_keys`` (from :func:`~simpg.fingerprint.sketch_and_bands`), rows sharing a
        band key are candidates too, in the same statement (held-out F1 0.989 / 0.970 /
        0.960 against 0.881 / 0.809 / 0.716 at k = 4 alone, docs/fingerprinting.md);
        their ``distance`` may exceed ``k``. Rows whose band columns are NULL are found
        through their fingerprint only.

        Args:
            fingerprint: the document's fingerprint.
            sketch: the document's sketch (32 bytes).
            k: fingerprint radius (default: the index's).
            band_keys: the document's band keys (signed, as stored), or None (too short to
                have any, or a table without band columns): fingerprint candidates only.
            band_columns: the table's bigint columns of band keys, in band order
                (default: ``<sketch_column>_b0`` .. ``_b3``), each with a B-tree.
            sketch_column: the table's column of sketches.
            max_sketch_distance: the largest sketch distance that confirms a row.
        """
        fp = _common.fingerprint(fingerprint)
        columns = minhash.band_columns(sketch_column, band_columns) if band_keys is not None else ()

        def run(info: IndexInfo) -> list[Duplicate]:
            params = _common.duplicates_params(info, fp, _common.radius(k, info), sketch, max_sketch_distance,
                                               band_keys, columns)
            key = f"duplicates {sketch_column} {columns}"  # composed once per layout and columns, as near's
            if key not in self._statements:  # the condition is simpg.lookup_where's, asked once
                asked = statements.duplicates_condition_params(info, sketch_column, columns)
                with self.conn.cursor() as cur:
                    cur.execute(statements.DUPLICATES_CONDITION_SQL, asked)
                    row = cur.fetchone()
                assert row is not None
                self._statements[key] = statements.duplicates_sql(info, sketch_column, row[0]).as_bytes(self.conn)
            statement = self._statements[key]
            with psycopg.RawCursor(self.conn) as cur:  # $n placeholders
                try:
                    cur.execute(statement, params, prepare=self.prepare, binary=True)
                except (psycopg.errors.UndefinedColumn, psycopg.errors.UndefinedFunction) as err:
                    raise _common.sketch_column_error(err, self.table, sketch_column, columns) from err
                return [Duplicate(*row) for row in cur.fetchall()]

        return self._lookup(run)

    def near_many(self, fingerprints: Iterable[int] | np.ndarray,
                  k: int | None = None) -> list[list[Neighbor]]:
        """:meth:`near` for many fingerprints in one statement (one round trip).

        Returns:
            One list per query, in query order, each nearest first.
        """
        fps = _common.fingerprint_array(fingerprints)

        def run(info: IndexInfo) -> list[list[Neighbor]]:
            radius = _common.radius(k, info)
            if not len(fps):
                return []
            params = statements.near_many_params(info, fps, radius)
            # Planner settings local to a transaction (see simpg.psycopg.settings): inside
            # the caller's transaction that is a savepoint, and the old values are put back.
            local = settings.NEAR_MANY_SETTINGS
            outer = self.conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE
            with self.conn.transaction(), self.conn.cursor(binary=True) as cur:
                cur.execute(local.statement, local.params)
                saved = cur.fetchone()
                with psycopg.RawCursor(self.conn) as raw:  # $n placeholders
                    raw.execute(self._statement(info, "near_many"), params, prepare=self.prepare, binary=True)
                    rows = raw.fetchall()
                if outer and saved:  # the local settings would outlive the savepoint
                    cur.execute(local.restore_statement, local.restore_params(saved))
            return _common.group_near_many(rows, len(fps))

        return self._lookup(run)

    def _lookup(self, run: Callable[[IndexInfo], _T]) -> _T:
        # The statements carry simpg.layout_is: if the index was re-created with another
        # layout since this handle read it, read it again and run the lookup once more.
        # When the error aborted the caller's transaction, the next call reads it.
        try:
            return run(_common.with_ids(self._current()))
        except psycopg.Error as err:
            if not _common.layout_changed(err):
                raise translate(err) from err
            stale, self._info = self._info, None
            if _common.aborted(self.conn):
                raise (_common.layout_changed_error(stale) if stale else translate(err)) from err
            logger.info("simpg index on %s.%s changed its layout; reading it again", self.table, self.column)
        info = _common.with_ids(self.refresh())
        with translated():
            return run(info)

    # -- whole table ----------------------------------------------------------------

    def explain(self, a_key: Any, b_key: Any, *, sketch_column: str = "sketch",
                text_column: str | None = None, max_sketch_distance: int | None = None) -> Explanation:
        """Why the rows ``a_key`` and ``b_key`` (values of the id column) are, or are not, near-duplicates.

        :func:`simpg.review.explain.explain_values` on the rows' stored values: the
        fingerprint distance and the tables of this index's layout whose prefix the two
        share (where a lookup of one finds the other); with a ``sketch_column``
        (``bit(256)``) in the table, the sketch distance, estimated Jaccard and, with band
        key columns (``<sketch_column>_b0`` .. ``_b3``), the shared band keys; with a
        ``text_column``, the shared and differing passages. The decision explained is
        the index's: within its ``k``, confirmed by sketches when the table has them.
        """
        from simpg.dedup import Decision
        from simpg.fingerprint.minhash import from_sql
        from simpg.review.explain import Side, explain_values

        info = _common.with_ids(self._current())
        bands = minhash.band_columns(sketch_column, None)
        with self.conn.cursor() as cur:
            cur.execute("SELECT attname FROM pg_catalog.pg_attribute WHERE attrelid = %s::regclass "
                              "AND attnum > 0 AND NOT attisdropped", [catalog.regclass_text(info)])
            has = {r[0] for r in cur.fetchall()}
        if text_column is not None and text_column not in has:
            raise SimpgError(f"column {text_column} of table {info.table} does not exist")
        sketched = sketch_column in has
        banded = sketched and all(c in has for c in bands)
        fields = [sql.Identifier(self.column),
                  sql.SQL("{}::text").format(sql.Identifier(sketch_column)) if sketched else sql.SQL("NULL"),
                  sql.Identifier(text_column) if text_column else sql.SQL("NULL"),
                  *(sql.Identifier(c) if banded else sql.SQL("NULL") for c in bands)]
        query = sql.SQL("SELECT {} FROM {} WHERE {} = %s").format(
            sql.SQL(", ").join(fields), info.relation, sql.Identifier(info.key_column or ""))
        sides = []
        texts = []
        for key in (a_key, b_key):
            with self.conn.cursor() as cur:
                cur.execute(query, [key])
                row = cur.fetchone()
            if row is None:
                raise SimpgError(f"no row with {info.key_column} = {key!r} in {info.table}")
            simhash, sketch_text, text, *keys = row
            made = from_sql(sketch_text)
            sides.append(Side(str(key), key if isinstance(key, int) else None, None, bits.from_db(simhash),
                              made.hex() if made else None, None if None in keys else list(keys)))
            texts.append("" if text is None else str(text))
        decision = Decision(k=info.layout.k, confirm=sketched, bands=banded,
                            max_sketch_distance=minhash.checked_max_sketch_distance(max_sketch_distance))
        return explain_values(sides[0], sides[1], texts[0], texts[1], layout=info.layout, decision=decision)

    def fetch_all(self, where: sql.Composable | None = None) -> tuple[np.ndarray, np.ndarray]:
        """``(ids, fingerprints)`` of every row with a fingerprint, as numpy arrays.

        Integer ids come as int64, others as an object array; fingerprints as
        unsigned ``uint64``. One statement per 2 GiB of table, or of each partition
        (see :func:`~simpg.psycopg.statements.fetch_sql`), all in one snapshot.
        """
        info = _common.with_ids(self._current())
        integer = _common.integer_ids(info)
        rows = self._fetch(info, lambda first, end, part: statements.fetch_sql(info, first, end, where, part))
        return _common.join_parts([wire.parse_fetch(ids, fps, integer) for ids, fps in rows], integer)

    def _fetch(self, info: IndexInfo,
               statement: Callable[[int, int | None, sql.Composable], sql.Composed],
               columns_error: Callable[[psycopg.Error], Exception] | None = None) -> list[tuple[Any, ...]]:
        # The row of each statement(first block, end block, partition), all in one snapshot;
        # columns_error says what a missing or mistyped column means.
        outer = self.conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE
        rows = []
        with translated():
            with self.conn.transaction(), self.conn.cursor(binary=True) as cur:
                cur.adapters.register_loader("bytea", wire.RawByteaLoader)
                if not outer:  # one snapshot across the statements
                    cur.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
                local = settings.FETCH_SETTINGS
                cur.execute(local.statement, local.params)
                saved = cur.fetchone()
                cur.execute(statements.FETCH_PARTS_SQL, [catalog.regclass_text(info)])
                for schema, name, blocks in cur.fetchall():
                    part = sql.Identifier(schema, name)
                    for first, end in statements.fetch_ranges(int(blocks)):
                        try:
                            cur.execute(statement(first, end, part))
                        except (psycopg.errors.UndefinedColumn, psycopg.errors.UndefinedFunction) as err:
                            if columns_error is None:
                                raise
                            raise columns_error(err) from err
                        row = cur.fetchone()  # aggregates: always one row
                        assert row is not None
                        rows.append(row)
                if outer and saved:
                    cur.execute(local.restore_statement, local.restore_params(saved))
        return rows

    def _sketched_rows(self, k: int | None, where: sql.Composable | None, sketch_column: str | None,
                       max_sketch_distance: int | None, bands: bool | None) -> _common.SketchedRows:
        # What the confirmed pairs and clusters decide on, read once: the rows with a
        # fingerprint and a sketch (meeting where), their sketches and band keys. The
        # arguments are checked as the SQL reports check them, with the same errors.
        info = _common.with_ids(self._current())
        k = _common.radius(k, info)
        limit = (self._call(_SKETCH_DISTANCE_SQL, [catalog.regclass_text(info), sketch_column,
                                                   max_sketch_distance, bands]))[0]
        assert sketch_column is not None  # else simpg.report_sketch_distance raised
        columns = minhash.band_columns(sketch_column, None) if bands is not False else ()
        integer = _common.integer_ids(info)
        rows = self._fetch(
            info, lambda first, end, part: statements.fetch_sketched_sql(info, first, end, where, part,
                                                                   sketch_column, columns),
            lambda err: _common.sketch_column_error(err, self.table, sketch_column, columns))
        return _common.sketched_rows(rows, integer, len(columns), k, limit, self.table, sketch_column)

    def _rows_within(self, k: int | None, where: sql.Composable | None) -> tuple[np.ndarray, np.ndarray, int]:
        # what pairs and clusters start from: k checked first, then every row read
        k = _common.radius(k, self._current())
        ids, fps = self.fetch_all(where)
        return ids, fps, k

    def pair_arrays(self, k: int | None = None, where: sql.Composable | None = None,
                    ) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """:meth:`pairs` as numpy chunks ``(ids a, ids b, distances)``.

        Checks ``k`` and reads the rows at once; the pairs are computed as you iterate.
        """
        return allpairs.pair_arrays(*self._rows_within(k, where))

    def pairs(self, k: int | None = None, where: sql.Composable | None = None, *,
              sketch_column: str | None = None, max_sketch_distance: int | None = None,
              bands: bool | None = None) -> Iterator[Pair]:
        """Every pair of rows within distance ``k``, each once, streamed.

        Reads ``(id, fingerprint)`` once, then runs seed 001's single pass over
        permuted tables in memory (:mod:`simpg.allpairs`). Rows with equal
        fingerprints are pairs at distance 0. Integer ids come as ``a < b``.

        With ``sketch_column`` only the pairs its sketches confirm, as
        :meth:`duplicates` confirms a lookup: both rows have a sketch and the two
        differ in at most ``max_sketch_distance`` bits (default
        :data:`~simpg.fingerprint.minhash.MAX_SKETCH_DISTANCE`); with ``bands`` (the
        default with a sketch column, as ``simpg dedup`` decides) also the pairs so
        confirmed that share a band key (``<sketch_column>_b0`` .. ``_b3``), whose
        ``distance`` may exceed ``k``. Rows without a sketch are nobody's pair; a NULL
        band key shares no band. The handle reads ``(id, fingerprint, sketch, band
        keys)`` of the rows with a sketch once, as above, and decides in memory with
        numpy (:func:`simpg.allpairs.decide`, the decision of ``simpg dedup``): the
        pairs ``simpg.pairs`` reports in SQL with these arguments, sorted, ``a < b``
        (ids without a numeric order in Python's order, as PostgreSQL's for uuid).

        Args:
            k: largest distance (default: the index's radius).
            where: only rows meeting this condition on the table alias ``t``, e.g.
                ``sql.SQL("t.collection = {}").format("news")``.
            sketch_column: the table's ``bit(256)`` column of sketches to confirm by.
            max_sketch_distance: the largest sketch distance that confirms a pair.
            bands: also pairs that share a band key, confirmed by their sketches
                (default: with ``sketch_column``; False confirms fingerprint pairs only).
        """
        if sketch_column is not None or max_sketch_distance is not None or bands:
            return iter(self._sketched_rows(k, where, sketch_column, max_sketch_distance, bands).pairs())
        chunks = self.pair_arrays(k, where)
        return (pair for chunk in chunks for pair in allpairs.pairs_from_arrays(chunk))

    def clusters(self, k: int | None = None, where: sql.Composable | None = None,
                 method: str = "representative", *, sketch_column: str | None = None,
                 max_sketch_distance: int | None = None, bands: bool | None = None) -> list[list[Any]]:
        """Clusters of near-duplicate rows, two or more rows each, largest first.

        Each cluster is a sorted list of ids. ``method="representative"`` (the default)
        takes rows in id order: a row joins the earliest representative within ``k``,
        else it is one, so every member is within ``k`` of its cluster's smallest id and
        a chain of neighbours never joins unrelated rows. ``method="components"``:
        connected components (seed 004), where a row joins when it is within ``k`` of
        any member, so two members may be far apart.

        With ``sketch_column`` (and ``max_sketch_distance``, ``bands``: on by default with
        a sketch column) the clusters are made of the pairs :meth:`pairs` confirms with
        them, in memory from the rows read once (:meth:`simpg.allpairs.Decided.clusters`),
        as ``simpg.clusters`` makes them in SQL: every member is a confirmed
        near-duplicate of its representative. ``where`` keeps only the rows meeting it.
        """
        method = allpairs.cluster_method(method)
        if sketch_column is not None or max_sketch_distance is not None or bands:
            rows = self._sketched_rows(k, where, sketch_column, max_sketch_distance, bands)
            return rows.clusters(method)
        ids, fps, k = self._rows_within(k, where)
        return allpairs.clusters_of(ids, fps, k, method)

    def stats(self, exact: bool = True) -> IndexStats:
        """Rows, layout, sizes and fingerprint config of the index.

        Args:
            exact: count the rows (a full scan) rather than use the planner's estimate.
        """
        info = self._current()
        statement, params = statements.stats_query(info, exact)
        row = self._call(statement, params)
        assert row is not None
        return _common.make_stats(info, row, exact)
