r"""``simpg backfill``: add fingerprints and a simhash index to an existing, big table.

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

Example:
    simpg backfill --dsn "dbname=app" --table articles --text-column body \\
        --fp-column simhash --k 3 --blocks 5 --progress
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any, cast

from simpg import bits
from simpg.commands.install import add_dsn_argument
from simpg.exc import SimpgError
from simpg.layout import Layout

logger = logging.getLogger(__name__)

__all__ = [
    "BackfillResult",
    "IndexResult",
    "add_fingerprint_column",
    "add_sketch_column",
    "backfill_fingerprints",
    "backfill_sketches",
    "build_index",
    "existing_layout",
    "register",
    "register_prefixes",
    "run",
]


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


def _ident(*parts: str) -> Any:
    from psycopg import sql

    return sql.Identifier(*parts)


def _table_info(conn: Any, table: str) -> tuple[int, str, list[str]]:
    """(oid, quoted qualified name, primary key columns) of ``table``."""
    row = conn.execute(
        "SELECT to_regclass(%s)::oid, to_regclass(%s)::text", (table, table)
    ).fetchone()
    if row is None or row[0] is None:
        raise SimpgError(f"table {table} does not exist")
    pk = [
        r[0]
        for r in conn.execute(
            "SELECT a.attname FROM pg_index AS i JOIN pg_attribute AS a "
            "ON a.attrelid = i.indrelid AND a.attnum = ANY (i.indkey) "
            "WHERE i.indrelid = %s AND i.indisprimary ORDER BY array_position(i.indkey, a.attnum)",
            (row[0],),
        )
    ]
    return row[0], row[1], pk


def _column_type(conn: Any, oid: int, column: str) -> str | None:
    row = conn.execute(
        "SELECT format_type(atttypid, atttypmod) FROM pg_attribute "
        "WHERE attrelid = %s AND attname = %s AND attnum > 0 AND NOT attisdropped",
        (oid, column),
    ).fetchone()
    return row[0] if row else None


def _check_source(conn: Any, table: str, text_column: str) -> tuple[int, str, str]:
    """(oid, qualified name, key column) of a table backfill can read; raises before any change."""
    oid, qualified, pk = _table_info(conn, table)
    if len(pk) != 1:
        raise SimpgError(
            f"table {qualified} needs a single-column primary key for batching, has {pk or 'none'}"
        )
    if _column_type(conn, oid, text_column) is None:
        raise SimpgError(f"column {text_column} of table {qualified} does not exist")
    return oid, qualified, pk[0]


def _add_column(conn: Any, table: str, column: str, sql_type: str, lock_timeout: str) -> bool:
    """Add a nullable column of ``sql_type`` if missing (refused if it has another type)."""
    from psycopg import sql

    oid, qualified, _ = _table_info(conn, table)
    existing = _column_type(conn, oid, column)
    if existing is not None:
        if existing != sql_type:
            raise SimpgError(f"column {qualified}.{column} is {existing}, expected {sql_type}")
        return False
    with conn.transaction():
        conn.execute("SELECT set_config('lock_timeout', %s, true)", (lock_timeout,))
        conn.execute(sql.SQL("ALTER TABLE {} ADD COLUMN {} {}").format(
            sql.SQL(qualified), _ident(column), sql.SQL(sql_type)))
    return True


def add_fingerprint_column(conn: Any, table: str, column: str, *, lock_timeout: str = "5s") -> bool:
    """Add a nullable bigint fingerprint column if missing; returns whether it was added."""
    return _add_column(conn, table, column, "bigint", lock_timeout)


def add_sketch_column(conn: Any, table: str, column: str, *, lock_timeout: str = "5s") -> bool:
    """Add a nullable ``bit(256)`` sketch column if missing; returns whether it was added."""
    return _add_column(conn, table, column, "bit(256)", lock_timeout)


def _fill(conn: Any, table: str, text_column: str, column: str, sql_type: str,
          compute: Callable[[list[str]], list[Any]], batch_size: int,
          progress: Callable[[int, int], None] | None) -> BackfillResult:
    """Write ``compute(texts)`` into ``column`` for every row where it is NULL, in batches.

    Keyset pagination on the single-column primary key; one UPDATE (its own short
    transaction, ``conn`` in autocommit) per batch, so a re-run resumes. ``compute``
    returns one value per text in the SQL text form of ``sql_type``, None to skip it.
    """
    from psycopg import sql

    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise SimpgError(f"batch size must be a positive integer, got {batch_size!r}")
    oid, qualified, key = _check_source(conn, table, text_column)
    found = _column_type(conn, oid, column)
    if found is None:
        raise SimpgError(f"column {column} of table {qualified} does not exist")
    if found != sql_type:
        raise SimpgError(f"column {qualified}.{column} is {found}, expected {sql_type}")
    estimate = max(
        int(conn.execute("SELECT reltuples FROM pg_class WHERE oid = %s", (oid,)).fetchone()[0]), 0
    )
    names = {"key": _ident(key), "text": _ident(text_column), "table": sql.SQL(qualified), "col": _ident(column)}
    select_batch = sql.SQL(
        "SELECT {key}, {text} FROM {table} WHERE {key} > %s AND {col} IS NULL ORDER BY {key} LIMIT %s"
    ).format(**names)
    first_batch = sql.SQL("SELECT {key}, {text} FROM {table} WHERE {col} IS NULL ORDER BY {key} LIMIT %s").format(
        **names)
    update = sql.SQL(
        "UPDATE {table} AS t SET {col} = v.value::{type} "
        "FROM unnest(%s::{keytype}[], %s::text[]) AS v(k, value) "
        "WHERE t.{key} = v.k AND t.{col} IS NULL"
    ).format(type=sql.SQL(sql_type), keytype=sql.SQL(_column_type(conn, oid, key) or "bigint"), **names)

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
        values = compute([text if isinstance(text, str) else "" for _, text in rows])
        keys, written = [], []
        for (k, _), value in zip(rows, values, strict=True):
            if value is None:
                result.skipped += 1
                if len(result.skipped_keys) < 10:
                    result.skipped_keys.append(k)
            else:
                keys.append(k)
                written.append(value)
        if keys:
            cur = conn.execute(update, (keys, written))
            result.rows += cur.rowcount
        result.batches += 1
        if progress is not None:
            progress(result.rows + result.skipped, max(estimate, result.rows + result.skipped))
    result.seconds = time.perf_counter() - started
    return result


def backfill_fingerprints(
    conn: Any,
    table: str,
    text_column: str,
    fp_column: str,
    *,
    config: Any = None,
    batch_size: int = 2000,
    workers: int | None = 1,
    progress: Callable[[int, int], None] | None = None,
) -> BackfillResult:
    """Fingerprint ``text_column`` into ``fp_column`` for every row where it is NULL.

    Keyset pagination on the single-column primary key; one UPDATE (its own short
    transaction, ``conn`` in autocommit) per batch. Rows whose text cannot be
    fingerprinted (NULL, empty) stay NULL and are counted in ``skipped``.

    Args:
        conn: psycopg connection in autocommit mode.
        table: table name (may be schema-qualified).
        text_column: the text to fingerprint.
        fp_column: the bigint fingerprint column.
        config: FingerprintConfig (default ``FingerprintConfig()``).
        batch_size: rows per batch (and per transaction).
        workers: fingerprinting processes (None: one per CPU).
        progress: called with (rows done, estimated total) after each batch.
    """
    from simpg.fingerprint import fingerprint_many

    def compute(texts: list[str]) -> list[Any]:
        fps = fingerprint_many(texts, config, workers=workers, on_error="none")
        return [None if fp is None else str(bits.to_db(fp)) for fp in fps]

    return _fill(conn, table, text_column, fp_column, "bigint", compute, batch_size, progress)


def backfill_sketches(
    conn: Any,
    table: str,
    text_column: str,
    sketch_column: str,
    *,
    batch_size: int = 2000,
    progress: Callable[[int, int], None] | None = None,
) -> BackfillResult:
    """Sketch ``text_column`` into ``sketch_column`` (``bit(256)``) for every row where it is NULL.

    As :func:`backfill_fingerprints`: batches, resumable; rows without words to sketch
    stay NULL and are counted in ``skipped``.
    """
    from simpg.fingerprint.minhash import sketch, to_sql

    def compute(texts: list[str]) -> list[Any]:
        out: list[Any] = []
        for text in texts:
            try:
                out.append(to_sql(sketch(text)))
            except ValueError:
                out.append(None)
        return out

    return _fill(conn, table, text_column, sketch_column, "bit(256)", compute, batch_size, progress)


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def existing_layout(conn: Any, table: str, fp_column: str, k: int,
                    layout: Layout | None = None) -> tuple[Layout, list[str], list[str | None]] | None:
    """The simpg index that an earlier (perhaps killed) run left on ``fp_column``, if any.

    Returns ``(layout, prefix columns, B-tree names)`` of a complete index (every prefix
    column there; ``None`` where a table has no valid B-tree) whose layout is ``layout``,
    or has radius ``k`` when ``layout`` is None; None when the column has no prefix
    columns. Raises, before anything changes, when they are of another layout, or of a
    damaged index, or of several: backfill must not build next to them.
    """
    oid, qualified, _ = _table_info(conn, table)
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
    way_out = (
        f"remove them with simpg repair --table {table} --column {fp_column} (a damaged index) or "
        f"SELECT simpg.drop_index({_literal(qualified)}, {_literal(fp_column)}), then run backfill again"
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


def _object_names(conn: Any, oid: int, fp_column: str, layout: Layout) -> tuple[list[str], list[str]]:
    """Prefix column and B-tree names of ``layout``, as simpg.create_index makes them."""
    from simpg.sqlalchemy.index import object_name

    relname = conn.execute("SELECT relname FROM pg_class WHERE oid = %s", (oid,)).fetchone()[0]
    columns = [object_name(fp_column, f"_p{t}") for t in range(layout.tables)]
    indexes = [object_name(f"{relname}_{fp_column}", f"_p{t}_idx") for t in range(layout.tables)]
    return columns, indexes


def _refuse_taken_columns(conn: Any, table: str, fp_column: str, layout: Layout) -> None:
    """Raise if columns that are not prefix columns already have the names of ``layout``'s."""
    oid, qualified, _ = _table_info(conn, table)
    columns, _ = _object_names(conn, oid, fp_column, layout)
    taken = [
        r[0]
        for r in conn.execute(
            "SELECT attname FROM pg_attribute WHERE attrelid = %s AND attname = ANY (%s::name[]) "
            "AND NOT attisdropped ORDER BY attnum",
            (oid, columns),
        )
    ]
    if taken:
        raise SimpgError(
            f"table {qualified} already has columns named {', '.join(taken)} that are not simpg prefix "
            f"columns of {fp_column}; see simpg check --table {table}, then drop or rename them"
        )


def build_index(
    conn: Any,
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
    transaction block). The ALTER waits at most ``lock_timeout`` for its lock.

    Resumes what an interrupted build of the same layout left (see
    :func:`existing_layout`): the prefix columns are kept, INVALID indexes on them are
    dropped concurrently, and only the missing B-trees are built.
    """
    from psycopg import sql

    from simpg.sqlalchemy.index import prefix_expression, prefix_index_sql

    layout = Layout(k, (blocks,) if inner_blocks is None else (blocks, inner_blocks))
    oid, qualified, _ = _table_info(conn, table)
    if _column_type(conn, oid, fp_column) != "bigint":
        raise SimpgError(
            f"column {qualified}.{fp_column} is {_column_type(conn, oid, fp_column)}, "
            "expected bigint"
        )
    columns, indexes = _object_names(conn, oid, fp_column, layout)
    built: list[str | None] = [None] * layout.tables  # valid B-trees there already
    existing = existing_layout(conn, table, fp_column, k, layout)
    t0 = time.perf_counter()
    if existing is None:
        _refuse_taken_columns(conn, table, fp_column, layout)
        adds = sql.SQL(", ").join(
            sql.SQL("ADD COLUMN {} bigint GENERATED ALWAYS AS ({}) STORED").format(
                _ident(c), sql.SQL(prefix_expression(fp_column, layout, t))
            )
            for t, c in enumerate(columns)
        )
        with conn.transaction():
            conn.execute("SELECT set_config('lock_timeout', %s, true)", (lock_timeout,))
            conn.execute(sql.SQL("ALTER TABLE {} {}").format(sql.SQL(qualified), adds))
    else:
        _, columns, built = existing
        logger.info("resuming the simpg index on %s.%s (%s): its prefix columns exist",
                    qualified, fp_column, layout.name)
    t1 = time.perf_counter()
    # what an interrupted CREATE INDEX CONCURRENTLY left: INVALID indexes on the prefix columns
    invalid = [
        r[0]
        for r in conn.execute(
            "SELECT DISTINCT i.indexrelid::regclass::text FROM pg_index AS i "
            "JOIN pg_attribute AS a ON a.attrelid = i.indrelid AND a.attnum = ANY (i.indkey) "
            "WHERE i.indrelid = %s AND a.attname = ANY (%s::name[]) AND NOT i.indisvalid ORDER BY 1",
            (oid, columns),
        )
    ]
    for name in invalid:
        conn.execute(sql.SQL("DROP INDEX CONCURRENTLY IF EXISTS {}").format(sql.SQL(name)))
    names = []
    for column, index, there in zip(columns, indexes, built, strict=True):
        if there is not None:
            names.append(there)
            continue
        conn.execute(
            sql.SQL(
                prefix_index_sql(
                    _ident(index).as_string(conn), qualified, _ident(column).as_string(conn),
                    concurrently=True,
                )
            )
        )
        names.append(index)
    indexes = names
    t2 = time.perf_counter()
    conn.execute(
        sql.SQL("ANALYZE {} ({})").format(
            sql.SQL(qualified), sql.SQL(", ").join(map(_ident, columns))
        )
    )
    register_prefixes(conn, oid, fp_column, layout, columns, indexes, fingerprint_config)
    t3 = time.perf_counter()
    logger.info("indexed %s.%s (%s)", qualified, fp_column, layout.name)
    return IndexResult(layout.name, t1 - t0, t2 - t1, t3 - t2, resumed=existing is not None,
                       invalid_dropped=invalid, indexes_built=sum(there is None for there in built))


def register_prefixes(
    conn: Any,
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


# -- command line ---------------------------------------------------------------------------


def register(subparsers: Any) -> None:
    """Add ``simpg backfill``."""
    p = subparsers.add_parser(
        "backfill",
        help="add fingerprints (and optionally the index) to an existing big table, in batches",
    )
    add_dsn_argument(p)
    p.add_argument("--table", required=True, help="table (may be schema-qualified)")
    p.add_argument("--text-column", required=True, help="column holding the text")
    p.add_argument(
        "--fp-column", required=True, help="bigint fingerprint column (added if missing)"
    )
    p.add_argument(
        "--batch-size", type=int, default=2000, help="rows per batch and transaction (default 2000)"
    )
    p.add_argument("--workers", type=int, default=1, help="fingerprinting processes (default 1)")
    p.add_argument("--sketch-column", help="also sketch the text into this bit(256) column (added if missing), "
                                           "to confirm near-duplicates (simpg.fingerprint.sketch)")
    p.add_argument(
        "--config", help="fingerprint config as JSON, or @FILE (default: FingerprintConfig())"
    )
    p.add_argument("--k", type=int, help="also build the simhash index for this radius")
    p.add_argument(
        "--blocks", type=int, help="level-1 blocks of the index (default: sized for the table)"
    )
    p.add_argument("--inner-blocks", type=int, help="level-2 blocks, optional")
    p.add_argument("--guard", action="store_true",
                   help="then refuse near-duplicates on write: simpg.create_guard with the index's k "
                        "(docs/guard.md); fails, naming how many, if the table already holds some")
    p.add_argument(
        "--lock-timeout",
        default="5s",
        help="longest wait for a table lock before giving up (default 5s)",
    )
    p.add_argument(
        "--progress", action="store_true", help="show progress on stderr (default: when a TTY)"
    )
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(func=run)


def _config(value: str | None) -> Any:
    from simpg.fingerprint import FingerprintConfig

    if value is None:
        return FingerprintConfig()
    text = value
    if value.startswith("@"):
        with open(value[1:], encoding="utf-8") as f:
            text = f.read()
    try:
        return FingerprintConfig.from_json(text)
    except (ValueError, TypeError) as err:
        raise SimpgError(f"invalid --config {value!r}: {err}") from err


def _check_config_matches_index(conn: Any, table: str, fp_column: str, identity: str) -> None:
    """Refuse to mix fingerprints of another config into an indexed column."""
    row = conn.execute(
        "SELECT fingerprint_config FROM simpg.indexes "
        "WHERE indexed_table = to_regclass(%s) AND fingerprint_column = %s",
        (table, fp_column),
    ).fetchone()
    if row and row[0] and row[0] != identity:
        raise SimpgError(
            f"fingerprint config {identity} does not match the simpg index on {table}.{fp_column}, "
            f"made with {row[0]}"
        )


def run(args: argparse.Namespace) -> int:
    """Run ``simpg backfill``."""
    import psycopg

    if not args.dsn:
        raise SimpgError("no database given; pass --dsn or set SIMPG_DSN")
    config = _config(args.config)
    show = args.progress or sys.stderr.isatty()
    bar: Any = None

    def progress(done: int, total: int) -> None:
        nonlocal bar
        if bar is None:
            from tqdm import tqdm  # type: ignore[import-untyped]  # the progress library of every command

            bar = tqdm(total=total, unit="row", file=sys.stderr, leave=True,
                       bar_format="simpg backfill: {n:,}/{total:,} rows ({percentage:.0f}%) {bar} "
                                  "[{elapsed}<{remaining}, {rate_fmt}]")
        bar.total = total
        bar.update(done - bar.n)

    with psycopg.connect(args.dsn, autocommit=True) as conn:
        # everything that can be refused is refused before the first change
        oid, qualified, _ = _check_source(conn, args.table, args.text_column)
        if args.sketch_column and _column_type(conn, oid, args.sketch_column) not in (None, "bit(256)"):
            raise SimpgError(f"column {qualified}.{args.sketch_column} is "
                             f"{_column_type(conn, oid, args.sketch_column)}, expected bit(256)")
        layout = None
        if args.k is not None and args.blocks is not None:
            layout = Layout(args.k, (args.blocks,) if args.inner_blocks is None else (args.blocks, args.inner_blocks))
        _check_config_matches_index(conn, args.table, args.fp_column, config.identity)
        if args.k is not None:
            # a run killed while it built the index left prefix columns: resume with their
            # layout (refused if it is not the one asked for)
            existing = existing_layout(conn, args.table, args.fp_column, args.k, layout)
            if existing is not None:
                layout = existing[0]
            else:
                if layout is None:
                    (estimate,) = conn.execute(
                        "SELECT greatest(reltuples, 0)::bigint FROM pg_class WHERE oid = %s", (oid,)
                    ).fetchone() or (0,)
                    # one function call: always one row
                    (levels,) = cast("tuple[list[int]]", conn.execute(
                        "SELECT simpg.default_levels(%s, %s)", (args.k, estimate)
                    ).fetchone())
                    layout = Layout(args.k, tuple(levels))
                _refuse_taken_columns(conn, args.table, args.fp_column, layout)
        added = add_fingerprint_column(
            conn, args.table, args.fp_column, lock_timeout=args.lock_timeout
        )
        filled = backfill_fingerprints(
            conn,
            args.table,
            args.text_column,
            args.fp_column,
            config=config,
            batch_size=args.batch_size,
            workers=args.workers,
            progress=progress if show else None,
        )
        if bar is not None:
            bar.close()
            bar = None
        sketches = None
        sketch_added = False
        if args.sketch_column:
            sketch_added = add_sketch_column(conn, args.table, args.sketch_column, lock_timeout=args.lock_timeout)
            sketches = backfill_sketches(conn, args.table, args.text_column, args.sketch_column,
                                         batch_size=args.batch_size, progress=progress if show else None)
            if bar is not None:
                bar.close()
        index = None
        if layout is not None:
            index = build_index(
                conn,
                args.table,
                args.fp_column,
                k=layout.k,
                blocks=layout.levels[0],
                inner_blocks=layout.levels[1] if len(layout.levels) > 1 else None,
                fingerprint_config=config.identity,
                lock_timeout=args.lock_timeout,
            )
        guard = None
        if args.guard:
            row = conn.execute("SELECT simpg.create_guard(%s::regclass, %s)", (args.table, args.fp_column)).fetchone()
            guard = row[0] if row else None
    result = {"column_added": added, **asdict(filled), "index": asdict(index) if index else None, "guard": guard,
              "sketches": None if sketches is None else {"column_added": sketch_added, **asdict(sketches)}}
    if args.json:
        print(json.dumps(result))
    else:
        rows = [
            ("column added", "yes" if added else "no (existed)"),
            ("fingerprints written", f"{filled.rows:,}"),
            ("rows skipped (no text)", f"{filled.skipped:,}"),
            ("batches", f"{filled.batches:,}"),
            ("fill time", f"{filled.seconds:.1f} s"),
        ]
        if guard is not None:
            rows.append(("guard", f"{guard} (no two rows within the index's k)"))
        if sketches is not None:
            rows += [
                ("sketch column added", "yes" if sketch_added else "no (existed)"),
                ("sketches written", f"{sketches.rows:,}"),
                ("sketch time", f"{sketches.seconds:.1f} s"),
            ]
        if index:
            if index.resumed:
                dropped = len(index.invalid_dropped)
                rows.append(("index resumed", f"prefix columns existed; {dropped} invalid "
                             f"index{'es' if dropped != 1 else ''} dropped, {index.indexes_built} built"))
            rows += [
                ("index layout", index.layout),
                ("ALTER (ACCESS EXCLUSIVE)", f"{index.alter_seconds:.2f} s"),
                ("CREATE INDEX CONCURRENTLY", f"{index.index_seconds:.1f} s"),
                ("ANALYZE + register", f"{index.analyze_seconds:.1f} s"),
            ]
        width = max(len(name) for name, _ in rows)
        for name, value in rows:
            print(f"{name:<{width}}  {value}")
    return 0
