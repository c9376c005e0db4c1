# Generated from passage_aio.py by simpg/psycopg/_async_to_sync.py: do not edit.
# Change passage_aio.py, then run python -m simpg.psycopg._async_to_sync
"""A handle on one passage column (partial duplicates, docs/partial.md), for psycopg 3.

``passage_aio.py`` is the one source of both handles, the async one and the sync one:
``passage_index.py`` is written from it by
``python -m simpg.psycopg._async_to_sync``, as ``index.py`` is from ``aio.py`` (see there).

A passage column is a ``bigint[]`` of each row's winnowed k-gram hashes
(:func:`simpg.passages.passage_hashes`) with a GIN index and its windows recorded in the
column's comment (``simpg.create_passage_index``). :meth:`PassageColumn.near` finds the
rows that copied passages of a text: it winnows the text as the rows are (the index's windows), runs the
one lookup statement (``simpg.passage_lookup_statement``: the rows sharing a hash), and
verifies every candidate on the two texts (:func:`simpg.passages.compare`). Rows sharing a
run of at least ``max(window, spaceless_window) + 4`` tokens with the text are all found, unless only hashes
skipped as common (``max_common``) lead to them; the lookup reports those it skipped.

Example:
    >>> import psycopg
    >>> from simpg.psycopg import PassageColumn
    >>> conn = psycopg.Connection.connect("dbname=app", autocommit=True)  # doctest: +SKIP
    >>> docs = PassageColumn(conn, "docs", text_column="body")  # doctest: +SKIP
    >>> docs.create()  # doctest: +SKIP
    >>> docs.add(["a long text ...", "another one ..."])  # doctest: +SKIP
    2
    >>> docs.near("a text that quotes a long text ...")  # doctest: +SKIP
    PassageMatches([PassageMatch(key=1, ...)], skipped=())
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, TypeVar

import numpy as np
import psycopg
from psycopg import sql

from simpg.exc import LAYOUT_CHANGED, SimpgError, translate, translated
from simpg.passages import (
    DEFAULT_SPACELESS_WINDOW,
    DEFAULT_WINDOW,
    PassageConfig,
    lookup,
    passage_hashes,
    passage_hashes_many,
)
from simpg.passages.checks import checked_key_bits
from simpg.psycopg import _common, wire
from simpg.psycopg.index import OwnedConnection
from simpg.results import PassageIndex, PassageMatch, PassageMatches

logger = logging.getLogger(__name__)

__all__ = ["COMMON_TTL", "PassageColumn"]


_T = TypeVar("_T")

#: Seconds a handle keeps the common hashes it read (``simpg.common_passage_hashes``) before
#: reading them again: they change only when ANALYZE runs (autovacuum's, minutes apart), and
#: reading them costs a catalog query per lookup.
COMMON_TTL = 60.0

_LAYOUT_SQL = ("SELECT p.indexed_table::text, p.passage_column, p.passage_window, p.spaceless_window, p.index_name, "
               "k.column_name, p.key_bits "
               "FROM simpg.passage_layout(%s::pg_catalog.regclass, %s) AS p, "
               "simpg.report_key(%s::pg_catalog.regclass, %s) AS k")
_STATEMENT_SQL = ("SELECT simpg.passage_probe_statement(%s::pg_catalog.regclass, %s, %s), "
                  "simpg.passage_texts_statement(%s::pg_catalog.regclass, %s, %s)")
_COMMON_SQL = "SELECT simpg.common_passage_hashes(%s::pg_catalog.regclass, %s, %s::float8)"


def _hash_all(docs: list[str], config: PassageConfig, workers: int | None) -> list[list[int]]:
    return list(passage_hashes_many(docs, config, workers=workers))


class PassageColumn(OwnedConnection):
    """Partial-duplicate search on ``table.column``, a passage column, through its GIN index.

    Args:
        conn: a psycopg 3 connection. Statements run in its current transaction
            (add() opens a savepoint or transaction of its own).
        table: the table, optionally schema-qualified (``"public.docs"``).
        column: the ``bigint[]`` column of passage hashes.
        text_column: the column of the texts (lookups verify candidates on it).
        key_column: the column returned as the row's key; default: the table's
            single-column primary key.
        prepare: prepare the lookup statement on the server (turn off behind a pooler
            that cannot keep prepared statements).
    """

    def __init__(self, conn: psycopg.Connection[Any], table: str, column: str = "passages", *,
                 text_column: str = "body", key_column: str | None = None, prepare: bool = True) -> None:
        for name, value in (("table", table), ("column", column), ("text_column", text_column)):
            if not isinstance(value, str) or not value:
                raise SimpgError(f"expected a name for {name}, got {value!r}")
        if key_column is not None and (not isinstance(key_column, str) or not key_column):
            raise SimpgError(f"expected a name for key_column, got {key_column!r}")
        self.conn = conn
        wire.register_dumpers(conn)
        self.table = table
        self.column = column
        self.text_column = text_column
        self.key_column = key_column
        self.prepare = prepare
        self._info: PassageIndex | None = None
        self._statement: bytes | None = None  # simpg.passage_probe_statement: key, hashes, shared
        self._texts: bytes | None = None  # simpg.passage_texts_statement: key, body of the keys $1
        self._common: dict[float, tuple[float, frozenset[int]]] = {}  # max_common -> (read at, hashes)

    def __repr__(self) -> str:
        return f"PassageColumn({self.table!r}, {self.column!r}, text_column={self.text_column!r})"

    @classmethod
    def connect(cls, conninfo: str, table: str, column: str = "passages", *, text_column: str = "body",
                key_column: str | None = None, prepare: bool = True, **kwargs: Any) -> PassageColumn:
        """A handle on a connection of its own, in autocommit mode; :meth:`close` closes it.

        ``kwargs`` go to :meth:`psycopg.Connection.connect`.
        """
        with translated():
            conn = psycopg.Connection.connect(conninfo, autocommit=True, **kwargs)
        return cls._owning(conn, lambda: cls(conn, table, column, text_column=text_column,
                                             key_column=key_column, prepare=prepare))

    # -- catalog ------------------------------------------------------------------

    @property
    def info(self) -> PassageIndex:
        """The passage index as this handle read it (on first use; see :meth:`refresh`)."""
        return self._current()

    def _current(self) -> PassageIndex:
        return self._info or self.refresh()

    def refresh(self) -> PassageIndex:
        """Read the passage index (``simpg.passage_indexes``), the key column and the lookup statement again.

        Raises:
            SimpgError: the column has no passage index, the key or text column does not
                exist, or the text column is not of a text type.
        """
        with translated():
            with self.conn.cursor() as cur:
                cur.execute(_LAYOUT_SQL, [self.table, self.column, self.table, self.key_column])
                row = cur.fetchone()
                assert row is not None  # the functions raise rather than return nothing
                # the texts statement's function checks the text column (it exists, of a text type)
                cur.execute(_STATEMENT_SQL, [self.table, self.column, row[5], self.table, self.text_column,
                                             row[5]])
                statement = cur.fetchone()
        assert statement is not None
        table, column, window, spaceless_window, index_name, key_column, key_bits = row
        self._info = PassageIndex(table, column, window, spaceless_window, index_name, key_column, self.text_column,
                                  key_bits)
        self._statement = statement[0].encode()  # bytes: psycopg sends them as they are
        self._texts = statement[1].encode()
        self._common = {}
        return self._info

    def create(self, window: int = DEFAULT_WINDOW,
               spaceless_window: int = DEFAULT_SPACELESS_WINDOW, key_bits: int | None = None) -> PassageIndex:
        """Index the column (``simpg.create_passage_index``: a GIN index on its keys and the windows in its comment).

        Idempotent for the same windows and bits; other windows than the column's are refused.
        ``spaceless_window`` winnows the rows mostly of a spaceless script (docs/partial.md).
        ``key_bits`` (1 to 32) are the bits of each hash the index keeps; None keeps the bits
        of the index there is, else takes ``simpg.passage_key_bits`` of the table's rows. An
        index of other bits is built again (the new one first, then the old one dropped).
        """
        for name, value in (("window", window), ("spaceless_window", spaceless_window)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise SimpgError(f"{name} must be an integer of at least 1, got {value!r}")
        checked_key_bits(key_bits)
        self._call("SELECT simpg.create_passage_index(%s::pg_catalog.regclass, %s, %s, %s, %s)",
                   [self.table, self.column, window, spaceless_window, key_bits])
        return self.refresh()

    def drop(self) -> None:
        """Remove the keys index and the comment (``simpg.drop_passage_index``); the column and its hashes stay."""
        self._call("SELECT simpg.drop_passage_index(%s::pg_catalog.regclass, %s)", [self.table, self.column])
        self._info, self._statement, self._texts, self._common = None, None, None, {}

    def _call(self, statement: str, params: Sequence[Any]) -> Any:
        # one statement, its first row
        with translated():
            with self.conn.cursor() as cur:
                cur.execute(statement, params)
                return cur.fetchone()

    # -- loading --------------------------------------------------------------------

    def hashes(self, text: str) -> list[int]:
        """The passage hashes of ``text`` with the index's windows: what :meth:`add` stores for it."""
        config = (self._current()).config
        return passage_hashes(lookup.query_text(text), config)

    def add(self, texts: Iterable[str], keys: Sequence[Any] | None = None, *,
            columns: Mapping[str, Sequence[Any]] | None = None, workers: int | None = None) -> int:
        """Insert one row per text with its passage hashes, through COPY, all or nothing; returns the rows.

        Args:
            texts: the texts (``str``), stored in the text column.
            keys: the key column's value of each row; None lets the column's default
                make them (a serial or identity key).
            columns: other columns of the new rows, name -> one value per row.
            workers: processes hashing the texts (default: 1 for fewer than 2000
                texts, else one per CPU; see :func:`simpg.passages.passage_hashes_many`).
        """
        docs = [lookup.query_text(t) for t in texts]
        info = self._current()
        if keys is not None:
            keys = list(keys)
            if len(keys) != len(docs):
                raise SimpgError(f"expected one key per text ({len(docs)}), got {len(keys)}")
        names, values = _common.extra_columns(columns, len(docs))
        if workers is None:
            workers = 1 if len(docs) < 2000 else None
        hashed = _hash_all(docs, info.config, workers)
        targets = ([info.key_column] if keys is not None else []) + [info.text_column, info.column, *names]
        # info.table is indexed_table::text, quoted by the server where it needs to be
        statement = sql.SQL("COPY {} ({}) FROM STDIN").format(
            sql.SQL(info.table), sql.SQL(", ").join(map(sql.Identifier, targets)))
        with translated():
            with self.conn.transaction(), self.conn.cursor() as cur:
                with cur.copy(statement) as copy:
                    for i, (doc, stored) in enumerate(zip(docs, hashed, strict=True)):
                        head = [keys[i]] if keys is not None else []
                        copy.write_row([*head, doc, stored, *(v[i] for v in values)])
        return len(docs)

    # -- lookups --------------------------------------------------------------------

    def common_hashes(self, max_common: int | float | None = lookup.DEFAULT_MAX_COMMON) -> frozenset[int]:
        """The column's hashes that the statistics put in more than ``max_common`` rows (none for None).

        ``max_common``: a count of rows, or a share of the table's rows (above 0, below 1;
        never fewer than 1,000 rows), as :meth:`near`'s.

        ``simpg.common_passage_hashes``, kept by the handle for :data:`COMMON_TTL` seconds
        (the statistics change only when ANALYZE runs) and read again by :meth:`refresh`.
        """
        max_common = lookup.checked_max_common(max_common)
        if max_common is None:
            return frozenset()
        kept = self._common.get(max_common)
        now = time.monotonic()
        if kept is not None and now - kept[0] < COMMON_TTL:
            return kept[1]
        row = self._call(_COMMON_SQL, [self.table, self.column, max_common])
        found = frozenset(row[0])
        self._common[max_common] = (now, found)
        return found

    def near(self, text: str, *, min_tokens: int | None = None, min_containment: float | None = None,
             max_common: int | float | None = lookup.DEFAULT_MAX_COMMON,
             limit: int | None = None) -> PassageMatches[PassageMatch]:
        """The rows that share passages with ``text``, verified on both texts, most shared hashes first.

        A row is returned when it shares a run of at least ``min_tokens`` equal tokens with
        the text (and, with ``min_containment``, when at least that fraction of the row is
        in the text or of the text in the row). Every such row is found, except those that
        share with the text only hashes skipped as common: the result's ``skipped``.

        Args:
            text: the text to look up.
            min_tokens: the shortest shared run that counts; default and least: the
                index's guarantee, ``max(window, spaceless_window) + 4`` (50 by default).
            min_containment: the least containment, one way or the other, from 0 to 1.
            max_common: skip the text's hashes that the statistics put in more than this
                many rows (boilerplate): a count of rows, or a share of the table's rows
                (above 0, below 1), then never fewer than 1,000 rows; the default, 0.001,
                is 0.1% of the rows and at least 1,000. None skips nothing (exact for every hash).
            limit: at most this many rows: the first ``limit`` of the answer's order, the
                most shared hashes first (the text's hashes, less the skipped ones, that the
                row holds), then by key. Candidates are verified in that order, their texts
                read a batch at a time, up to the ``limit``-th match
                (:class:`simpg.passages.lookup.Verification`).

        Raises:
            SimpgError: a bad argument (naming it), or no passage index on the column.
        """
        query = lookup.query_text(text)
        lookup.checked_max_common(max_common)
        lookup.checked_limit(limit)

        def run(info: PassageIndex) -> PassageMatches[PassageMatch]:
            lookup.checked_thresholds(info.config, min_tokens, min_containment)  # before the lookup
            prepared = lookup.prepared_query(query, info.config)
            skipped = lookup.to_skip(prepared.hashes, self.common_hashes(max_common))
            params = [wire.Int8Array(prepared.hashes),
                      wire.Int8Array(np.array(skipped, dtype=np.int64)) if skipped else None]
            assert self._statement is not None
            assert self._texts is not None
            # the probe and the texts read after it in one snapshot: a row changed in between
            # is seen as it was (inside the caller's transaction, as its isolation level gives)
            outer = self.conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE
            with (contextlib.nullcontext() if outer else self.conn.transaction()), \
              psycopg.RawCursor(self.conn) as cur:  # $1, $2
                if not outer:
                    cur.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
                cur.execute(self._statement, params, prepare=self.prepare, binary=True)
                rows = cur.fetchall()
                check = lookup.Verification(prepared, info.config, rows,
                                          min_tokens=min_tokens, min_containment=min_containment, limit=limit)
                keys = check.pending()
                while keys:  # the texts of the candidates to verify, best bound first, a batch at a time
                    cur.execute(self._texts, [keys], prepare=self.prepare, binary=True)
                    texts = dict(cur.fetchall())
                    check.check(texts)
                    keys = check.pending()
            return PassageMatches(check.matches(), skipped)

        return self._lookup(run)

    def _lookup(self, run: Callable[[PassageIndex], _T]) -> _T:
        # The statement carries simpg.passage_layout_is: if the index was re-created with
        # other windows since this handle read it (SQLSTATE SPG01), read it again and run
        # the lookup once more. When the error aborted the caller's transaction, say so.
        try:
            return run(self._current())
        except psycopg.Error as err:
            if err.sqlstate != LAYOUT_CHANGED:
                raise translate(err) from err
            stale, self._info = self._info, None
            if _common.aborted(self.conn):
                raise SimpgError(
                    f"the passage index on {self.table}.{self.column} changed since this handle read it "
                    f"(windows {f'{stale.window} and {stale.spaceless_window}' if stale else '?'}); roll back and "
                    f"call again") from err
            logger.info("simpg passage index on %s.%s changed; reading it again", self.table, self.column)
        info = self.refresh()
        with translated():
            return run(info)
