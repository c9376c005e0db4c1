r"""Add fingerprints and a simhash index to an existing, big table, online (``simpg backfill``).

Three steps; the first two are safe to run while the application reads and writes:

1. ``ALTER TABLE ... ADD COLUMN <fp> bigint`` (nullable, no default: a catalog change,
   not a rewrite), under ``lock_timeout`` so it never queues behind a long transaction.
2. Fill the column in batches: keyset pagination on the primary key, one short
   transaction per batch, only rows whose fingerprint is NULL (so a re-run resumes).
3. Optionally the index: the generated prefix columns in one ``ALTER TABLE`` (this one
   rewrites the table under an ACCESS EXCLUSIVE lock, see docs/sqlalchemy.md), then
   ``CREATE INDEX CONCURRENTLY`` per prefix, ``ANALYZE``, and ``simpg.register_index``.
   PostgreSQL's table rewrite is not MVCC-safe: a REPEATABLE READ or SERIALIZABLE
   transaction whose snapshot is older than the rewrite sees the table empty after it.
   simpg's own reads refuse such a snapshot (SQLSTATE 40001, docs/security.md); plain
   SQL on the table is not guarded, so run this step when no such report is open.

A run killed in step 3 resumes when it is run again with the same layout: prefix
columns of exactly that layout are kept (no second rewrite), indexes left INVALID by an
interrupted ``CREATE INDEX CONCURRENTLY`` are dropped concurrently, and the missing
B-trees are built. Prefix columns of another layout, or of a damaged index, are refused
before anything changes, naming ``simpg repair`` and ``simpg.drop_index``.

The index's statements are ``simpg.index_ddl``'s, which ``simpg.create_index`` runs
too; the others are composed with :mod:`psycopg.sql` (identifiers from the catalog,
values bound or as literals), so any table, schema or column name works as written.
:mod:`simpg.commands.backfill` is the command line over these functions.

Example:
    >>> import psycopg
    >>> from simpg.backfill import add_fingerprint_column, backfill_fingerprints, build_index
    >>> conn = psycopg.connect("dbname=app", autocommit=True)  # doctest: +SKIP
    >>> add_fingerprint_column(conn, "articles", "simhash")  # doctest: +SKIP
    True
    >>> backfill_fingerprints(conn, "articles", "body", "simhash").rows  # doctest: +SKIP
    120000
    >>> build_index(conn, "articles", "simhash", k=3, blocks=5).layout  # doctest: +SKIP
    'k3:5'
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

import psycopg
from psycopg import sql

from simpg import bits
from simpg.exc import SimpgError
from simpg.fingerprint import FingerprintConfig, fingerprint_many
from simpg.fingerprint.config import identity_of
from simpg.fingerprint.minhash import BANDS, sketch, sketch_and_bands, to_sql
from simpg.layout import Layout
from simpg.passages import PassageConfig, passage_hashes, passage_hashes_many
from simpg.passages.config import config_or_default
from simpg.sqlnames import with_parameters

logger = logging.getLogger(__name__)

__all__ = [
    "BackfillResult",
    "IndexResult",
    "PassageIndexResult",
    "add_fingerprint_column",
    "add_passage_column",
    "add_band_columns",
    "add_sketch_column",
    "backfill_fingerprints",
    "backfill_passages",
    "backfill_sketches",
    "build_index",
    "build_passage_index",
    "check_config_matches_index",
    "check_passages",
    "check_source",
    "column_type",
    "create_guard",
    "existing_layout",
    "guard_sketches",
    "layout_to_build",
    "passage_config",
    "record_config",
    "register_prefixes",
]

Connection = psycopg.Connection[Any]


@dataclass
class BackfillResult:
    """What the batched fill did."""

    rows: int = 0  # fingerprints written
    skipped: int = 0  # rows whose text could not be fingerprinted (left NULL)
    batches: int = 0
    seconds: float = 0.0
    skipped_keys: list[Any] = field(default_factory=list)  # the first few, to look at


@dataclass
class IndexResult:
    """How long each part of the index build took (the ALTER is the locking part).

    ``resumed``: the prefix columns were there already (a run killed in step 3, or a
    second run), so there was no ALTER; ``invalid_dropped`` names the INVALID indexes
    of an interrupted ``CREATE INDEX CONCURRENTLY`` that were dropped, and
    ``indexes_built`` counts the B-trees built (the others existed).
    """

    layout: str
    alter_seconds: float
    index_seconds: float
    analyze_seconds: float
    resumed: bool = False
    invalid_dropped: list[str] = field(default_factory=list)
    indexes_built: int = 0


@dataclass(frozen=True)
class _Table:
    """A table as the catalog names it."""

    oid: int
    qualified: str  # regclass text, for messages
    schema: str
    name: str
    primary_key: list[str]

    @property
    def ident(self) -> sql.Identifier:
        """The table, schema-qualified, for composing statements."""
        return sql.Identifier(self.schema, self.name)


def _table(conn: Connection, table: str) -> _Table:
    """``table`` (may be schema-qualified) as the catalog has it; raises if it does not exist."""
    row = conn.execute(
        "SELECT c.oid, c.oid::regclass::text, n.nspname, c.relname "
        "FROM pg_catalog.pg_class AS c JOIN pg_catalog.pg_namespace AS n ON n.oid = c.relnamespace "
        "WHERE c.oid = pg_catalog.to_regclass(%s)", (table,)
    ).fetchone()
    if row is None:
        raise SimpgError(f"table {table} does not exist")
    oid, qualified, schema, name = row
    pk = [
        r[0]
        for r in conn.execute(
            "SELECT a.attname FROM pg_catalog.pg_index AS i JOIN pg_catalog.pg_attribute AS a "
            "ON a.attrelid = i.indrelid AND a.attnum = ANY (i.indkey) "
            "WHERE i.indrelid = %s AND i.indisprimary ORDER BY array_position(i.indkey, a.attnum)",
            (oid,),
        )
    ]
    return _Table(oid, qualified, schema, name, pk)


def column_type(conn: Connection, table: str, column: str) -> str | None:
    """The type of ``table.column`` as ``format_type`` writes it (e.g. ``bit(256)``); None if it is missing.

    Raises:
        SimpgError: the table does not exist.
    """
    return _column_type(conn, _table(conn, table).oid, column)


def _column_type(conn: Connection, oid: int, column: str) -> str | None:
    """The column's type as ``format_type`` writes it (e.g. ``bigint``, ``bit(256)``); None if missing."""
    row = conn.execute(
        "SELECT pg_catalog.format_type(atttypid, atttypmod) FROM pg_catalog.pg_attribute "
        "WHERE attrelid = %s AND attname = %s AND attnum > 0 AND NOT attisdropped",
        (oid, column),
    ).fetchone()
    return row[0] if row else None


def _array_type(conn: Connection, oid: int, column: str) -> sql.Identifier:
    """The array type of the column's type, schema-qualified (to cast a parameter to)."""
    row = conn.execute(
        "SELECT n.nspname, a.typname FROM pg_catalog.pg_attribute AS x "
        "JOIN pg_catalog.pg_type AS t ON t.oid = x.atttypid "
        "JOIN pg_catalog.pg_type AS a ON a.oid = t.typarray "
        "JOIN pg_catalog.pg_namespace AS n ON n.oid = a.typnamespace "
        "WHERE x.attrelid = %s AND x.attname = %s",
        (oid, column),
    ).fetchone()
    if row is None:
        raise SimpgError(f"the type of column {column} has no array type to send keys as")
    return sql.Identifier(row[0], row[1])


def check_source(conn: Connection, table: str, text_column: str) -> tuple[int, str, str]:
    """(oid, qualified name, key column) of a table backfill can read; raises before any change."""
    found = _table(conn, table)
    if len(found.primary_key) != 1:
        raise SimpgError(
            f"table {found.qualified} needs a single-column primary key for batching, has {found.primary_key or 'none'}"
        )
    if _column_type(conn, found.oid, text_column) is None:
        raise SimpgError(f"column {text_column} of table {found.qualified} does not exist")
    return found.oid, found.qualified, found.primary_key[0]


#: The column types backfill adds: a constant each, never user input.
_TYPES = {"bigint": sql.SQL("bigint"), "bit(256)": sql.SQL("bit(256)"), "bigint[]": sql.SQL("bigint[]")}


def _add_column(conn: Connection, table: str, column: str, sql_type: str, lock_timeout: str) -> bool:
    """Add a nullable column of ``sql_type`` if missing (refused if it has another type)."""
    found = _table(conn, table)
    existing = _column_type(conn, found.oid, column)
    if existing is not None:
        if existing != sql_type:
            raise SimpgError(f"column {found.qualified}.{column} is {existing}, expected {sql_type}")
        return False
    with conn.transaction():
        conn.execute("SELECT pg_catalog.set_config('lock_timeout', %s, true)", (lock_timeout,))
        conn.execute(sql.SQL("ALTER TABLE {} ADD COLUMN {} {}").format(
            found.ident, sql.Identifier(column), _TYPES[sql_type]))
    return True


def add_fingerprint_column(conn: Connection, table: str, column: str, *, lock_timeout: str = "5s") -> bool:
    """Add a nullable bigint fingerprint column if missing; returns whether it was added."""
    return _add_column(conn, table, column, "bigint", lock_timeout)


def add_sketch_column(conn: Connection, table: str, column: str, *, lock_timeout: str = "5s") -> bool:
    """Add a nullable ``bit(256)`` sketch column if missing; returns whether it was added."""
    return _add_column(conn, table, column, "bit(256)", lock_timeout)


def _fill(conn: Connection, table: str, text_column: str, columns: Sequence[tuple[str, str]],
          compute: Callable[[list[Any]], list[Any]], batch_size: int,
          progress: Callable[[int, int], None] | None, every_row: bool = False,
          null_texts: bool = False) -> BackfillResult:
    """Write ``compute(texts)`` into ``columns`` (name, SQL type) for every row where one is NULL, in batches.

    Keyset pagination on the single-column primary key; one UPDATE (its own short
    transaction, ``conn`` in autocommit) per batch, so a re-run resumes. ``compute``
    returns, per text, a tuple of values in the SQL text form of the columns' types
    (None in it: that column NULL), or None to skip the row. A row is written only where
    a value changes. With ``every_row``, every row is computed again and a skipped row's
    columns become NULL: a re-run repeats the work but changes nothing more. With
    ``null_texts``, ``compute`` gets a NULL text as None (else as ``""``).
    """
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise SimpgError(f"batch size must be a positive integer, got {batch_size!r}")
    oid, _, key = check_source(conn, table, text_column)
    found = _table(conn, table)
    for column, sql_type in columns:
        kind = _column_type(conn, oid, column)
        if kind is None:
            raise SimpgError(f"column {column} of table {found.qualified} does not exist")
        if kind != sql_type:
            raise SimpgError(f"column {found.qualified}.{column} is {kind}, expected {sql_type}")
    row = conn.execute("SELECT reltuples FROM pg_catalog.pg_class WHERE oid = %s", (oid,)).fetchone()
    estimate = max(int(row[0]) if row else 0, 0)
    names = {"key": sql.Identifier(key), "text": sql.Identifier(text_column), "table": found.ident}
    cols = [sql.Identifier(c) for c, _ in columns]
    values = [sql.Identifier(f"v{i}") for i in range(len(columns))]
    casts = [sql.SQL("v.{}::{}").format(v, _TYPES[t]) for v, (_, t) in zip(values, columns, strict=True)]
    todo = sql.SQL("true") if every_row else sql.SQL(" OR ").join(sql.SQL("{} IS NULL").format(c) for c in cols)
    # with_parameters: run with parameters, so the % of a name must not read as a placeholder
    select_batch = with_parameters(sql.SQL(
        "SELECT {key}, {text} FROM {table} WHERE {key} > %s AND ({todo}) ORDER BY {key} LIMIT %s"
    ).format(todo=todo, **names))
    first_batch = with_parameters(sql.SQL(
        "SELECT {key}, {text} FROM {table} WHERE {todo} ORDER BY {key} LIMIT %s").format(todo=todo, **names))
    update = with_parameters(sql.SQL(
        "UPDATE {table} AS t SET {sets} "
        "FROM unnest(%s::{keys}, {arrays}) AS v(k, {values}) "
        "WHERE t.{key} = v.k AND ({changed})"
    ).format(
        sets=sql.SQL(", ").join(sql.SQL("{} = {}").format(c, cast) for c, cast in zip(cols, casts, strict=True)),
        keys=_array_type(conn, oid, key),
        arrays=sql.SQL(", ").join(sql.SQL("%s::text[]") for _ in columns),
        values=sql.SQL(", ").join(values),
        changed=sql.SQL(" OR ").join(sql.SQL("t.{} IS DISTINCT FROM {}").format(c, cast)
                                     for c, cast in zip(cols, casts, strict=True)),
        **names))

    result = BackfillResult()
    started = time.perf_counter()
    last = None
    while True:
        rows = (
            conn.execute(first_batch, (batch_size,))
            if last is None
            else conn.execute(select_batch, (last, batch_size))
        ).fetchall()
        if not rows:
            break
        last = rows[-1][0]
        computed = compute([text if isinstance(text, str) else (None if null_texts else "") for _, text in rows])
        keys: list[Any] = []
        written: list[list[Any]] = [[] for _ in columns]
        for (k, _), value in zip(rows, computed, strict=True):
            if value is None:
                result.skipped += 1
                if len(result.skipped_keys) < 10:
                    result.skipped_keys.append(k)
            if value is not None or every_row:
                keys.append(k)
                for i, column_values in enumerate(written):
                    column_values.append(None if value is None else value[i])
        if keys:
            cur = conn.execute(update, (keys, *written))
            result.rows += cur.rowcount
        result.batches += 1
        if progress is not None:
            progress(result.rows + result.skipped, max(estimate, result.rows + result.skipped))
    result.seconds = time.perf_counter() - started
    return result


def backfill_fingerprints(
    conn: Connection,
    table: str,
    text_column: str,
    fp_column: str,
    *,
    config: FingerprintConfig | None = None,
    batch_size: int = 2000,
    workers: int | None = 1,
    progress: Callable[[int, int], None] | None = None,
    refingerprint: bool = False,
) -> BackfillResult:
    """Fingerprint ``text_column`` into ``fp_column`` for every row where it is NULL.

    Keyset pagination on the single-column primary key; one UPDATE (its own short
    transaction, ``conn`` in autocommit) per batch. Rows whose text cannot be
    fingerprinted (NULL, empty, no usable features) stay NULL and are counted in ``skipped``.

    With ``refingerprint``, every row is fingerprinted again with ``config`` and written
    where its fingerprint changed (``rows`` counts those; a row whose text now has no
    features becomes NULL), and then the column's simpg index, if any, records
    ``config`` (:func:`record_config`): how a table moves to a new config in place. The
    generated prefix columns follow the fingerprints, so the index needs no rebuild. An
    interrupted move is finished by running it again; until then the index still records
    the old config.

    Args:
        conn: psycopg connection in autocommit mode.
        table: table name (may be schema-qualified).
        text_column: the text to fingerprint.
        fp_column: the bigint fingerprint column.
        config: FingerprintConfig (default ``FingerprintConfig()``).
        batch_size: rows per batch (and per transaction).
        workers: fingerprinting processes (None: one per CPU).
        progress: called with (rows done, estimated total) after each batch.
        refingerprint: every row again, then record ``config`` on the index.
    """

    def compute(texts: list[str]) -> list[Any]:
        fps = fingerprint_many(texts, config, workers=workers, on_error="none")
        return [None if fp is None else (str(bits.to_db(fp)),) for fp in fps]

    result = _fill(conn, table, text_column, [(fp_column, "bigint")], compute, batch_size, progress, refingerprint)
    if refingerprint:
        record_config(conn, table, fp_column, config or FingerprintConfig())
    return result


def record_config(conn: Connection, table: str, fp_column: str, config: FingerprintConfig) -> bool:
    """Record ``config`` as the fingerprint config of the simpg index on ``fp_column``.

    Kept in the form the index had (the config's JSON, or its identity alone). Returns
    False when the column has no simpg index. Only for fingerprints all made with ``config``.
    """
    found = _table(conn, table)
    row = conn.execute(
        "SELECT k, levels, prefix_columns, index_names, fingerprint_config FROM simpg.indexes "
        "WHERE indexed_table = %s::oid::regclass AND fingerprint_column = %s",
        (found.oid, fp_column),
    ).fetchone()
    if row is None:
        return False
    k, levels, columns, indexes, stored = row
    text = config.to_json() if stored and stored.startswith("{") else config.identity
    register_prefixes(conn, found.oid, fp_column, Layout(k, tuple(levels)), list(columns), list(indexes), text)
    logger.info("recorded fingerprint config %s on %s.%s", config.identity, found.qualified, fp_column)
    return True


def backfill_sketches(
    conn: Connection,
    table: str,
    text_column: str,
    sketch_column: str,
    *,
    band_columns: Sequence[str] | None = None,
    batch_size: int = 2000,
    progress: Callable[[int, int], None] | None = None,
    resketch: bool = False,
) -> BackfillResult:
    """Sketch ``text_column`` into ``sketch_column`` (``bit(256)``) for every row where it is NULL.

    As :func:`backfill_fingerprints`: batches, resumable; rows without words to sketch
    stay NULL and are counted in ``skipped``. With ``band_columns`` (bigint, one per band:
    :func:`add_band_columns`), each row's band keys are written too, from the same
    minima (:func:`simpg.fingerprint.sketch_and_bands`), in every row where the sketch or
    a key is NULL; a text too short for keys keeps them NULL (and is read again
    by a re-run, which changes nothing).

    With ``resketch``, every row is sketched again and written where its sketch or a key
    changed (``rows`` counts those; a row with nothing to sketch becomes NULL): how
    sketches and band keys move to this simpg's sketch format (``SKETCH_VERSION``), which
    ``simpg backfill --refingerprint --sketch-column`` does before it records the new
    config, so an interrupted move leaves the old config recorded.
    """
    bands = _checked_band_columns(band_columns)

    def compute(texts: list[str]) -> list[Any]:
        out: list[Any] = []
        for text in texts:
            try:
                if not bands:  # the keys' hashing only where they are wanted
                    out.append((to_sql(sketch(text)),))
                    continue
                made, keys = sketch_and_bands(text)
            except ValueError:
                out.append(None)
                continue
            out.append((to_sql(made), *((None,) * len(bands) if keys is None else map(str, keys))))
        return out

    # the rows to do: a NULL in any of them (keys of a text too short for them stay NULL)
    columns = [(sketch_column, "bit(256)"), *((c, "bigint") for c in bands)]
    return _fill(conn, table, text_column, columns, compute, batch_size, progress, resketch)


def guard_sketches(conn: Connection, table: str, fp_column: str) -> tuple[str | None, tuple[str, ...]]:
    """The sketch column and band key columns a simpg guard on ``fp_column`` confirms with (None, () if none)."""
    found = _table(conn, table)
    row = conn.execute(
        "SELECT g.sketch_column, g.band_columns FROM simpg.table_guards(%s::oid::regclass) AS g "
        "WHERE g.fingerprint_column = %s AND g.sketch_column IS NOT NULL", (found.oid, fp_column)).fetchone()
    return (None, ()) if row is None else (row[0], tuple(row[1] or ()))


def _checked_band_columns(band_columns: Sequence[str] | None) -> tuple[str, ...]:
    if band_columns is None:
        return ()
    if isinstance(band_columns, str) or len(band_columns) != BANDS or not all(
            isinstance(c, str) and c for c in band_columns):
        raise SimpgError(f"expected {BANDS} band key column names, got {band_columns!r}")
    return tuple(band_columns)


def add_band_columns(conn: Connection, table: str, band_columns: Sequence[str], *,
                     lock_timeout: str = "5s") -> list[str]:
    """Add the missing bigint band key columns and their B-trees (built concurrently); returns those added.

    ``conn`` must be in autocommit mode. A B-tree a killed run left INVALID is dropped
    and built again. The B-trees are named ``<table>_<column>_idx`` (shortened as
    ``simpg.object_name`` shortens).
    """
    columns = _checked_band_columns(band_columns)
    found = _table(conn, table)
    added = [c for c in columns if _add_column(conn, table, c, "bigint", lock_timeout)]
    for column in columns:
        name = conn.execute("SELECT simpg.object_name(%s, '_idx')", (f"{found.name}_{column}",)).fetchone()
        assert name is not None  # a function call: always one row
        index = sql.Identifier(found.schema, name[0])
        valid = conn.execute(
            "SELECT i.indisvalid FROM pg_catalog.pg_index AS i JOIN pg_catalog.pg_class AS c ON c.oid = i.indexrelid "
            "WHERE i.indrelid = %s AND c.relname = %s", (found.oid, name[0])).fetchone()
        if valid is not None and valid[0]:
            continue
        if valid is not None:  # left INVALID by a killed concurrent build
            conn.execute(sql.SQL("DROP INDEX CONCURRENTLY {}").format(index))
        conn.execute(sql.SQL("CREATE INDEX CONCURRENTLY {} ON {} ({})").format(
            sql.Identifier(name[0]), found.ident, sql.Identifier(column)))
    return added


def existing_layout(conn: Connection, table: str, fp_column: str, k: int,
                    layout: Layout | None = None) -> tuple[Layout, list[str], list[str | None]] | None:
    """The simpg index that an earlier (perhaps killed) run left on ``fp_column``, if any.

    Returns ``(layout, prefix columns, B-tree names)`` of a complete index (every prefix
    column there; ``None`` where a table has no valid B-tree) whose layout is ``layout``,
    or has radius ``k`` when ``layout`` is None; None when the column has no prefix
    columns. Raises, before anything changes, when they are of another layout, or of a
    damaged index, or of several: backfill must not build next to them.
    """
    found_table = _table(conn, table)
    oid, qualified = found_table.oid, found_table.qualified
    found = [
        (Layout(row[0], tuple(row[1])), list(row[2]), list(row[3]))
        for row in conn.execute(
            "SELECT i.k, i.levels, i.prefix_columns, i.index_names FROM simpg.indexes AS i "
            "WHERE i.indexed_table = %s::oid::regclass AND i.fingerprint_column = %s",
            (oid, fp_column),
        )
    ]
    damage = [
        f"{problem} ({detail})"
        for problem, detail in conn.execute(
            "SELECT c.problem, c.detail FROM simpg.check(%s::oid::regclass, %s, false) AS c "
            "WHERE c.problem IN ('missing prefix column', 'several layouts')",
            (oid, fp_column),
        )
    ]
    drop = sql.SQL("SELECT simpg.drop_index({}, {})").format(sql.Literal(qualified), sql.Literal(fp_column))
    way_out = (
        f"remove them with simpg repair --table {table} --column {fp_column} (a damaged index) or "
        f"{drop.as_string(None)}, then run backfill again"
    )
    if damage:
        raise SimpgError(
            f"column {qualified}.{fp_column} has leftover simpg prefix columns: {'; '.join(damage)}; {way_out}"
        )
    if not found:
        return None
    have, columns, indexes = found[0]
    if (layout is not None and have != layout) or have.k != k:
        raise SimpgError(
            f"column {qualified}.{fp_column} already has the prefix columns of simpg layout {have.name}, "
            f"not of {layout.name if layout else f'radius k={k}'}; ask for {have.name}, or {way_out}"
        )
    return have, columns, indexes


def _refuse_taken_columns(conn: Connection, table: str, fp_column: str, layout: Layout) -> None:
    """Raise if columns that are not prefix columns already have the names of ``layout``'s."""
    found = _table(conn, table)
    try:
        with conn.transaction():  # a savepoint when conn is in a transaction
            _index_ddl(conn, found.oid, fp_column, layout, None)
    except psycopg.errors.DuplicateColumn as err:
        raise SimpgError(f"{err.diag.message_primary}; see simpg check --table {table}, "
                         "then drop or rename them") from None


def _index_ddl(conn: Connection, oid: int, fp_column: str, layout: Layout,
               fingerprint_config: str | None) -> list[tuple[str, int | None, str | None, str]]:
    """``simpg.index_ddl(..., concurrently => true)``: (phase, t, index, statement) of what the index lacks."""
    return conn.execute(
        "SELECT s.phase, s.t, s.index_name, s.statement "
        "FROM simpg.index_ddl(%s::oid::regclass, %s, %s, %s::integer[], %s, concurrently => true) "
        "WITH ORDINALITY AS s(phase, t, index_name, statement, n) ORDER BY s.n",
        (oid, fp_column, layout.k, list(layout.levels), fingerprint_config),
    ).fetchall()


def build_index(
    conn: Connection,
    table: str,
    fp_column: str,
    *,
    k: int,
    blocks: int,
    inner_blocks: int | None = None,
    fingerprint_config: str | None = None,
    lock_timeout: str = "5s",
) -> IndexResult:
    """Add the prefix columns (one rewrite), build their B-trees concurrently, and register them.

    ``conn`` must be in autocommit mode (CREATE INDEX CONCURRENTLY cannot run in a
    transaction block). The ALTER waits at most ``lock_timeout`` for its lock. The
    statements are ``simpg.index_ddl``'s, the ones ``simpg.create_index`` runs.

    Resumes what an interrupted build of the same layout left (see
    :func:`existing_layout`): the prefix columns are kept, INVALID indexes on them are
    dropped concurrently, and only the missing B-trees are built.
    """
    layout = Layout(k, (blocks,) if inner_blocks is None else (blocks, inner_blocks))
    found = _table(conn, table)
    oid, qualified = found.oid, found.qualified
    if _column_type(conn, oid, fp_column) != "bigint":
        raise SimpgError(
            f"column {qualified}.{fp_column} is {_column_type(conn, oid, fp_column)}, "
            "expected bigint"
        )
    existing = existing_layout(conn, table, fp_column, k, layout)
    if existing is None:
        _refuse_taken_columns(conn, table, fp_column, layout)
    else:
        logger.info("resuming the simpg index on %s.%s (%s): its prefix columns exist",
                    qualified, fp_column, layout.name)
    steps = _index_ddl(conn, oid, fp_column, layout, fingerprint_config)
    seconds = {"columns": 0.0, "drop_invalid": 0.0, "btree": 0.0, "analyze": 0.0, "register": 0.0}
    for phase, _, _, statement in steps:
        started = time.perf_counter()
        if phase == "columns":  # the rewrite: wait at most lock_timeout for its lock
            with conn.transaction():
                conn.execute("SELECT pg_catalog.set_config('lock_timeout', %s, true)", (lock_timeout,))
                conn.execute(statement)
        else:
            conn.execute(statement)
        seconds[phase] += time.perf_counter() - started
    logger.info("indexed %s.%s (%s)", qualified, fp_column, layout.name)
    return IndexResult(layout.name, seconds["columns"], seconds["drop_invalid"] + seconds["btree"],
                       seconds["analyze"] + seconds["register"], resumed=existing is not None,
                       invalid_dropped=[str(name) for phase, _, name, _ in steps if phase == "drop_invalid"],
                       indexes_built=len({t for phase, t, _, _ in steps if phase == "btree"}))


def register_prefixes(
    conn: Connection,
    oid: int,
    column: str,
    layout: Layout,
    columns: list[str],
    indexes: list[str],
    fingerprint_config: str | None,
) -> None:
    """``simpg.register_index`` for objects made outside simpg.create_index."""
    conn.execute(
        "SELECT simpg.register_index(%s::oid::regclass, %s, %s, %s::integer[], %s::name[], "
        "%s::name[], %s)",
        (oid, column, layout.k, list(layout.levels), columns, indexes, fingerprint_config),
    )


def check_config_matches_index(conn: Connection, table: str, fp_column: str, identity: str) -> None:
    """Refuse to mix fingerprints of another config into an indexed column."""
    row = conn.execute(
        "SELECT fingerprint_config FROM simpg.indexes "
        "WHERE indexed_table = pg_catalog.to_regclass(%s) AND fingerprint_column = %s",
        (table, fp_column),
    ).fetchone()
    if row and row[0] and identity_of(row[0]) != identity:
        raise SimpgError(
            f"fingerprint config {identity} does not match the simpg index on {table}.{fp_column}, "
            f"made with {identity_of(row[0])}; to move the table to it, re-fingerprint every row "
            "(simpg backfill --refingerprint)"
        )


def layout_to_build(conn: Connection, table: str, text_column: str, fp_column: str, *,
                    config: FingerprintConfig, k: int | None = None, blocks: int | None = None,
                    inner_blocks: int | None = None, sketch_column: str | None = None,
                    refingerprint: bool = False) -> Layout | None:
    """Everything ``simpg backfill`` can refuse, refused before the first change; the layout to build.

    Checks the table, its key and text column, the sketch column's type, that the
    index's fingerprint config (if any) is ``config``'s (unless ``refingerprint``: the
    move to ``config``), and, with ``k``, that the
    layout asked for (or the table's default for ``k``) can be built or resumed: a run
    killed while it built the index left prefix columns, whose layout is then the one
    (refused if it is not the one asked for). None: no index to build.
    """
    oid, qualified, _ = check_source(conn, table, text_column)
    if sketch_column and _column_type(conn, oid, sketch_column) not in (None, "bit(256)"):
        raise SimpgError(f"column {qualified}.{sketch_column} is "
                         f"{_column_type(conn, oid, sketch_column)}, expected bit(256)")
    layout = None
    if k is not None and blocks is not None:
        layout = Layout(k, (blocks,) if inner_blocks is None else (blocks, inner_blocks))
    if not refingerprint:
        check_config_matches_index(conn, table, fp_column, config.identity)
    else:
        # the guard's sketches must move with the config: never compared across sketch formats
        guarded, _ = guard_sketches(conn, table, fp_column)
        if guarded is not None and guarded != sketch_column:
            raise SimpgError(
                f"the simpg guard on {qualified}.{fp_column} confirms with the sketches in column {guarded}; "
                f"pass --sketch-column {guarded} (and --bands if it has band keys) so that they move to the "
                "new config too")
    if k is None:
        return layout
    existing = existing_layout(conn, table, fp_column, k, layout)
    if existing is not None:
        return existing[0]
    if layout is None:
        (estimate,) = conn.execute(
            "SELECT greatest(reltuples, 0)::bigint FROM pg_catalog.pg_class WHERE oid = %s", (oid,)
        ).fetchone() or (0,)
        # one function call: always one row
        (levels,) = cast("tuple[list[int]]", conn.execute(
            "SELECT simpg.default_levels(%s, %s)", (k, estimate)
        ).fetchone())
        layout = Layout(k, tuple(levels))
    _refuse_taken_columns(conn, table, fp_column, layout)
    return layout


def create_guard(conn: Connection, table: str, fp_column: str) -> str | None:
    """``simpg.create_guard`` with the index's k (docs/guard.md); returns its name."""
    row = conn.execute("SELECT simpg.create_guard(%s::regclass, %s)", (table, fp_column)).fetchone()
    return row[0] if row else None


# -- passage hashes (partial duplicates, docs/partial.md) -----------------------------------


@dataclass
class PassageIndexResult:
    """What :func:`build_passage_index` did: the GIN index's name, the INVALID ones dropped, the time."""

    index_name: str | None
    window: int
    spaceless_window: int
    concurrently: bool
    seconds: float
    invalid_dropped: list[str] = field(default_factory=list)
    built: bool = False


def add_passage_column(conn: Connection, table: str, column: str = "passages", *, lock_timeout: str = "5s") -> bool:
    """Add a nullable ``bigint[]`` passage column if missing; returns whether it was added."""
    return _add_column(conn, table, column, "bigint[]", lock_timeout)


def passage_config(conn: Connection, table: str, column: str) -> PassageConfig | None:
    """The config (windows) ``simpg.passage_indexes`` records for ``table.column``, None if it has no passage index."""
    found = _table(conn, table)
    row = conn.execute("SELECT passage_window, spaceless_window FROM simpg.passage_indexes "
                       "WHERE indexed_table = %s::oid::regclass AND passage_column = %s",
                       (found.oid, column)).fetchone()
    return None if row is None else PassageConfig(int(row[0]), int(row[1]))


def _windows(config: PassageConfig) -> str:
    return f"windows {config.window} and {config.spaceless_window}"


#: Stored rows :func:`check_passages` recomputes at each end of the key order: an
#: interrupted fill or move goes from the lowest key, so the highest keys show an old window.
SAMPLE = 100


def check_passages(conn: Connection, table: str, text_column: str, column: str = "passages", *,
                   config: PassageConfig | None = None, refill: bool = False) -> None:
    """Everything ``simpg backfill --passages`` can refuse, refused before the first change.

    The table needs a single-column key and the text column; the passage column, if
    there, must be ``bigint[]``. Without ``refill``: its passage index, if any, must record
    ``config``'s windows, and the stored hashes of the :data:`SAMPLE` first and last rows
    (by key) must be their texts' hashes with those windows, else the column holds hashes of
    other windows (or of changed texts, or an interrupted move): refused, naming
    ``--refingerprint``, which makes every row's hashes again.
    """
    cfg = config_or_default(config)
    oid, qualified, key = check_source(conn, table, text_column)
    kind = _column_type(conn, oid, column)
    if kind is None:
        return
    if kind != "bigint[]":
        raise SimpgError(f"column {qualified}.{column} is {kind}, expected bigint[]")
    if refill:
        return
    recorded = passage_config(conn, table, column)
    if recorded is not None and recorded != cfg:
        raise SimpgError(f"column {qualified}.{column} has a simpg passage index with {_windows(recorded)}, not "
                         f"{_windows(cfg)}; to move it to {_windows(cfg)}, make every row's hashes again "
                         "(simpg backfill --passages --refingerprint)")
    found = _table(conn, table)
    names = {"key": sql.Identifier(key), "text": sql.Identifier(text_column), "col": sql.Identifier(column),
             "table": found.ident}
    sample = sql.SQL("(SELECT {key}, {text}, {col} FROM {table} WHERE {col} IS NOT NULL AND {text} IS NOT NULL "
                     "ORDER BY {key} {order} LIMIT {n})")
    query = sql.SQL(" UNION ALL ").join(sample.format(order=sql.SQL(order), n=sql.Literal(SAMPLE), **names)
                                         for order in ("ASC", "DESC"))
    for row_key, text, stored in conn.execute(query):
        if list(stored) != passage_hashes(text, cfg):
            raise SimpgError(f"column {qualified}.{column} holds hashes that are not those of {_windows(cfg)} "
                             f"(row {row_key}): other windows, changed texts or an interrupted move; make every "
                             "row's hashes again (simpg backfill --passages --refingerprint)")


def backfill_passages(
    conn: Connection,
    table: str,
    text_column: str,
    column: str = "passages",
    *,
    config: PassageConfig | None = None,
    batch_size: int = 2000,
    workers: int | None = 1,
    progress: Callable[[int, int], None] | None = None,
    refill: bool = False,
) -> BackfillResult:
    """Write the passage hashes of ``text_column`` into ``column`` for every row where it is NULL.

    As :func:`backfill_fingerprints`: batches on the single-column key, one short
    transaction each (``conn`` in autocommit), so a re-run resumes; a row whose text is
    NULL stays NULL (counted in ``skipped``); an empty text gets ``'{}'``.

    With ``refill``, every row is computed again with ``config`` and written where its
    hashes changed: how a column moves to other windows. The column's passage index of
    other windows is dropped first (its GIN index and the comment: lookups then refuse
    the table, naming the missing index, instead of answering with mixed windows), and
    :func:`build_passage_index` records the new one.

    Args:
        conn: psycopg connection in autocommit mode.
        table: table name (may be schema-qualified).
        text_column: the text.
        column: the ``bigint[]`` passage column.
        config: the windows (default ``PassageConfig()``).
        batch_size: rows per batch (and per transaction).
        workers: hashing processes (None: one per CPU).
        progress: called with (rows done, estimated total) after each batch.
        refill: every row again (see above).
    """
    cfg = config_or_default(config)
    if refill:
        recorded = passage_config(conn, table, column)
        if recorded is not None and recorded != cfg:
            conn.execute("SELECT simpg.drop_passage_index(%s::oid::regclass, %s)", (_table(conn, table).oid, column))
            logger.info("dropped the %s passage index of %s.%s to move it to %s", _windows(recorded), table,
                        column, _windows(cfg))

    def compute(texts: list[str | None]) -> list[Any]:
        present = [t for t in texts if t is not None]
        made = iter(passage_hashes_many(present, cfg, workers=workers))
        return [None if t is None else ("{" + ",".join(map(str, next(made))) + "}",) for t in texts]

    return _fill(conn, table, text_column, [(column, "bigint[]")], compute, batch_size, progress, refill,
                 null_texts=True)


def build_passage_index(conn: Connection, table: str, column: str = "passages", *,
                        config: PassageConfig | None = None) -> PassageIndexResult:
    """The passage index (``simpg.passage_index_ddl``'s statements): GIN, ANALYZE, the windows' comment.

    ``conn`` must be in autocommit mode: the GIN index is built with ``CREATE INDEX
    CONCURRENTLY`` (writes go on), except on a partitioned table, which PostgreSQL cannot
    index concurrently. What is there is left out: an INVALID index a stopped build left
    is dropped and built again, a complete index is left as it is.
    """
    cfg = config_or_default(config)
    found = _table(conn, table)
    row = conn.execute("SELECT relkind = 'p' FROM pg_catalog.pg_class WHERE oid = %s", (found.oid,)).fetchone()
    concurrently = not (row and row[0])
    started = time.perf_counter()
    # the key bits follow the table's rows by the statistics: a table filled just now and
    # never analyzed would count as empty (simpg.create_passage_index does the same)
    unanalyzed = conn.execute(
        "SELECT EXISTS (SELECT FROM simpg.relation_tree(%s::oid::regclass) AS x "
        "JOIN pg_catalog.pg_class AS c ON c.oid = x.relid WHERE c.relkind <> 'p' AND c.reltuples < 0)",
        (found.oid,)).fetchone()
    if unanalyzed and unanalyzed[0]:
        analyze = conn.execute("SELECT simpg.analyze_statement(%s::oid::regclass, ARRAY[%s]::name[])",
                               (found.oid, column)).fetchone()
        assert analyze is not None
        conn.execute(analyze[0])
    steps = conn.execute(
        "SELECT s.phase, s.index_name, s.statement FROM simpg.passage_index_ddl(%s::oid::regclass, %s, %s, %s, "
        "NULL, %s) WITH ORDINALITY AS s(phase, index_name, statement, n) ORDER BY s.n",
        (found.oid, column, cfg.window, cfg.spaceless_window, concurrently)).fetchall()
    for _, _, statement in steps:
        conn.execute(statement)
    name = conn.execute("SELECT index_name FROM simpg.passage_indexes WHERE indexed_table = %s::oid::regclass "
                        "AND passage_column = %s", (found.oid, column)).fetchone()
    logger.info("passage index of %s.%s (%s)", found.qualified, column, _windows(cfg))
    return PassageIndexResult(name[0] if name else None, cfg.window, cfg.spaceless_window, concurrently,
                              time.perf_counter() - started,
                              [str(n) for phase, n, _ in steps if phase == "drop_invalid"],
                              any(phase == "gin" for phase, _, _ in steps))
