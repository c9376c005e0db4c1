"""What the sync and async handles share: result types, input checks, error translation.

Everything here is free of I/O except :func:`translated`, a context manager that
wraps I/O: sync and async code alike (it does no I/O itself, so it needs no
``async with``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
import psycopg
from psycopg import errors
from psycopg.types.numeric import Int8

from simpg import allpairs, bits
from simpg.exc import ExtensionNotInstalled, InvalidFingerprint, NearDuplicate, SimpgError
from simpg.fingerprint import FingerprintConfig, InvalidConfig, fingerprint_many
from simpg.fingerprint.config import FORMAT_VERSION, identity_of
from simpg.fingerprint.minhash import BANDS, checked_max_distance, similarity, to_sql
from simpg.layout import Layout
from simpg.psycopg.catalog import DAMAGED, INTEGER_TYPES, LAYOUT_CHANGED, IndexInfo, check_k
from simpg.psycopg.statements import near_params
from simpg.psycopg.wire import Int8Array

__all__ = ["Duplicate", "Guard", "IndexProblem", "IndexStats", "Inserted", "Neighbor", "Pair", "near_duplicate"]


class Neighbor(NamedTuple):
    """A row found by a lookup: its id and its Hamming distance to the query."""

    id: Any
    distance: int


class Guard(NamedTuple):
    """A simpg guard of a table (``simpg.table_guards``); the sketch settings None if it has none."""

    name: str
    column: str
    k: int
    key_column: str
    sketch_column: str | None = None
    max_sketch_distance: int | None = None
    band_columns: tuple[str, ...] | None = None

    @classmethod
    def from_row(cls, row: Sequence[Any]) -> Guard:
        """A row of ``simpg.table_guards``."""
        name, column, k, key_column, sketch_column, max_sketch_distance, band_columns = row
        return cls(name, column, k, key_column, sketch_column, max_sketch_distance,
                   None if band_columns is None else tuple(band_columns))


class Inserted(NamedTuple):
    """What ``insert_or_get`` did.

    Either ``inserted`` the row (``key`` is its key), or found the stored row ``key``
    within ``distance`` bits and inserted nothing.
    """

    inserted: bool
    key: str
    distance: int | None


class Duplicate(NamedTuple):
    """A row a lookup found and its sketch confirmed: id, fingerprint distance, sketch distance."""

    id: Any
    distance: int
    sketch_distance: int

    @property
    def similarity(self) -> float:
        """The estimated Jaccard similarity of the two documents (from the sketch distance)."""
        return similarity(self.sketch_distance)


def duplicates_params(info: IndexInfo, fp: int, k: int, sketch: Any, max_sketch_distance: Any,
                      bands: Any = None, band_columns: Sequence[str] = ()) -> list[Any]:
    """``$1..$6`` of :func:`~simpg.psycopg.statements.duplicates_sql`, checked (errors name the value).

    Without ``bands`` there is no ``$6``: the statement has no band columns to compare.
    """
    limit = checked_max_distance(max_sketch_distance)
    params = [*near_params(info, fp, k), to_sql(sketch), Int8(limit)]
    if bands is not None:
        params.append(band_keys(bands, band_columns))
    return params


def band_columns(sketch_column: str, columns: Any) -> tuple[str, ...]:
    """The band key columns: ``columns``, or ``<sketch_column>_b0 ..`` one per band by default."""
    if columns is None:
        return tuple(f"{sketch_column}_b{i}" for i in range(BANDS))
    if isinstance(columns, str) or not isinstance(columns, Sequence) or not columns or not all(
            isinstance(c, str) and c for c in columns):
        raise SimpgError(f"expected band_columns as a list of column names, got {columns!r}")
    return tuple(columns)


def band_keys(bands: Any, columns: Sequence[str]) -> Int8Array:
    """A document's band keys (signed 64-bit, as stored) as the ``bigint[]`` parameter, one per column."""
    if isinstance(bands, (str, bytes)) or not isinstance(bands, (Sequence, np.ndarray)):
        raise SimpgError(f"expected a sequence of band keys, got {bands!r}")
    keys = list(bands)
    if len(keys) != len(columns):
        raise SimpgError(f"expected {len(columns)} band keys (one per band column), got {len(keys)}: {keys!r}")
    for key in keys:
        if isinstance(key, (bool, np.bool_)) or not isinstance(key, (int, np.integer)) or not (
                -(1 << 63) <= int(key) < 1 << 63):
            raise SimpgError(f"expected a signed 64-bit band key, got {key!r}")
    return Int8Array(np.array([int(key) for key in keys], dtype=np.int64))


def sketch_column_error(err: psycopg.Error, table: str, column: str, bands: Sequence[str] = ()) -> Exception:
    """A missing or mistyped sketch or band column, named (other errors of the statement unchanged)."""
    if isinstance(err, errors.UndefinedColumn):
        message = err.diag.message_primary or ""
        if message == f"column t.{column} does not exist":
            return SimpgError(f"column {column} of table {table} does not exist (the sketches to confirm with)")
        missing = next((b for b in bands if message == f"column t.{b} does not exist"), None)
        if missing is not None:
            return SimpgError(f"column {missing} of table {table} does not exist (band keys, bigint)")
    if isinstance(err, errors.UndefinedFunction):
        first = str(err).splitlines()[0]
        if bands and " = bigint" in first:
            return SimpgError(f"band columns {', '.join(bands)} of table {table} must be bigint, got: {first}")
        return SimpgError(f"column {column} of table {table} must be bit(256) (sketches), got: {first}")
    return translate(err)


class Pair(NamedTuple):
    """Two rows within distance ``k`` of each other (``a < b`` for integer ids)."""

    a: Any
    b: Any
    distance: int


@dataclass(frozen=True)
class IndexProblem:
    """One problem that ``simpg.check`` found in a simpg index (see docs/security.md).

    ``problem`` is one of ``'missing prefix column'`` (the index cannot answer exactly;
    queries refuse it), ``'missing b-tree'`` (exact but slow), ``'invalid index'`` (an
    interrupted ``CREATE INDEX CONCURRENTLY``), ``'several layouts'`` and ``'stale prefix
    values'``; ``detail`` names the object.
    """

    column: str  # the fingerprint column
    problem: str
    detail: str

    def __str__(self) -> str:
        return f"{self.column}: {self.problem}: {self.detail}"


@dataclass(frozen=True)
class IndexStats:
    """What :meth:`SimHashColumn.stats` reports about one indexed column."""

    table: str
    column: str
    id_column: str | None
    layout: Layout
    rows: int
    rows_exact: bool
    table_bytes: int
    index_bytes: dict[str, int]
    prefix_columns: tuple[str, ...]
    fingerprint_config: str | None

    @property
    def total_index_bytes(self) -> int:
        """Size of all prefix indexes together."""
        return sum(self.index_bytes.values())

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "table": self.table, "column": self.column, "id_column": self.id_column,
            "layout": self.layout.name, "k": self.layout.k, "levels": list(self.layout.levels),
            "tables": self.layout.tables, "rows": self.rows, "rows_exact": self.rows_exact,
            "table_bytes": self.table_bytes, "index_bytes": self.index_bytes,
            "total_index_bytes": self.total_index_bytes, "prefix_columns": list(self.prefix_columns),
            "fingerprint_config": self.fingerprint_config,
        }


# -- errors ---------------------------------------------------------------------------

# simpg's SQL functions raise these with messages meant for people; pass them on as
# SimpgError so callers (and the CLI) need to catch one family only.
_CLEAR_SQLSTATES = (errors.InvalidParameterValue, errors.UndefinedObject, errors.UndefinedColumn,
                    errors.UndefinedTable, errors.DuplicateObject, errors.DatatypeMismatch,
                    errors.NullValueNotAllowed, errors.AmbiguousColumn, errors.InsufficientPrivilege,
                    errors.InvalidObjectDefinition)


def near_duplicate(err: psycopg.Error) -> NearDuplicate | None:
    """The :class:`~simpg.exc.NearDuplicate` a simpg guard's refusal means, else None.

    For your own INSERTs: ``except psycopg.errors.ExclusionViolation as err:
    dup = near_duplicate(err)``.
    """
    if not isinstance(err, errors.ExclusionViolation):
        return None
    found = re.fullmatch(r"Key \((?:.+)\)=\((.*)\) is within (\d+) bits of the new row, key \(.+\)=\(.*\)\.",
                         err.diag.message_detail or "", re.S)
    if found is None:
        return None  # an EXCLUDE constraint's, not a guard's
    message = (err.diag.message_primary or str(err)) + f" ({err.diag.message_detail})"
    return NearDuplicate(message, key=found.group(1), distance=int(found.group(2)), guard=err.diag.constraint_name)


def translate(err: psycopg.Error) -> Exception:
    """A SimpgError for the database errors whose message says it all, else ``err``."""
    duplicate = near_duplicate(err)
    if duplicate is not None:
        return duplicate
    if isinstance(err, (errors.UndefinedFunction, errors.InvalidSchemaName)) and "simpg" in str(err):
        return ExtensionNotInstalled()
    if isinstance(err, _CLEAR_SQLSTATES) or err.sqlstate in (LAYOUT_CHANGED, DAMAGED):
        diag = err.diag
        message = diag.message_primary or str(err)
        if diag.message_hint:
            message += f"; {diag.message_hint}"
        return SimpgError(message)
    return err


@contextmanager
def translated() -> Iterator[None]:
    """Database errors raised inside come out as :func:`translate` gives them.

    The one place that says how: ``with translated(): cur.execute(...)``, in sync
    and async code alike. A psycopg error that :func:`translate` keeps is re-raised
    as it is, with its traceback.
    """
    try:
        yield
    except psycopg.Error as err:
        clear = translate(err)
        if clear is err:
            raise
        raise clear from err


def layout_changed(err: psycopg.Error) -> bool:
    """Whether ``err`` says the index may have another layout than a handle read.

    simpg.layout_is says so; a prefix column that no longer exists (the index was
    dropped, or re-created with fewer tables) fails the statement before it runs.
    """
    return err.sqlstate == LAYOUT_CHANGED or isinstance(err, errors.UndefinedColumn)


def layout_changed_error(info: IndexInfo) -> SimpgError:
    """What a lookup says when the layout changed and the error aborted the caller's transaction."""
    return SimpgError(
        f"the simpg index on {info.label} changed since this handle read its layout ({info.layout.name}); "
        "roll back and call again (the handle reads the layout anew)"
    )


def aborted(conn: psycopg.Connection[Any] | psycopg.AsyncConnection[Any]) -> bool:
    """Whether the connection's transaction failed (nothing more runs until a rollback)."""
    return conn.info.transaction_status == psycopg.pq.TransactionStatus.INERROR


def id_column(primary_key: list[tuple[str, str]]) -> tuple[str | None, str | None]:
    """The single-column primary key; ``(None, None)`` when there is none (see :func:`with_ids`)."""
    if len(primary_key) != 1:
        return None, None
    return primary_key[0]


def with_ids(info: IndexInfo) -> IndexInfo:
    """``info`` if lookups can name rows, else an error saying to name the id column."""
    if not info.id_column:
        raise SimpgError(
            f"table {info.table} has no single-column primary key; pass id_column= to name the id column"
        )
    return info


def no_index_error(table: str, column: str) -> SimpgError:
    """What check() says of a column that has no simpg index, complete or damaged."""
    return SimpgError(f"no simpg index on {table}.{column}; create one with create()")


# -- inputs ---------------------------------------------------------------------------

def verify_rows(value: Any) -> bool:
    """check()'s ``verify_rows``: a bool, not anything truthy."""
    if not isinstance(value, bool):
        raise SimpgError(f"verify_rows must be True or False, got {value!r}")
    return value


def fingerprint(value: Any) -> int:
    """An unsigned 64-bit fingerprint, or InvalidFingerprint naming the value."""
    return bits.check(value)


def fingerprint_array(values: Any) -> np.ndarray:
    """Unsigned fingerprints as ``uint64`` (ints checked one by one; see allpairs)."""
    if isinstance(values, (str, bytes)) or values is None:
        raise InvalidFingerprint(f"expected a sequence of 64-bit fingerprints, got {values!r:.60}")
    return allpairs.as_fingerprints(values)


def radius(k: Any, info: IndexInfo) -> int:
    """``k`` (default: the index's radius), checked against the index."""
    return check_k(info.layout.k if k is None else k, info)


def extra_columns(columns: Mapping[str, Sequence[Any]] | None, n: int) -> tuple[list[str], list[Sequence[Any]]]:
    """Names and value lists of the extra columns of add(), each of length ``n``."""
    if not columns:
        return [], []
    names, values = [], []
    for name, col in columns.items():
        if not isinstance(name, str):
            raise SimpgError(f"column names must be strings, got {name!r}")
        col = col if isinstance(col, Sequence) and not isinstance(col, (str, bytes)) else list(col)
        if len(col) != n:
            raise SimpgError(f"column {name!r} has {len(col)} values for {n} fingerprints")
        names.append(name)
        values.append(col)
    return names, values


def stored_config(info: IndexInfo) -> tuple[Any, str | None]:
    """The index's fingerprint config (a FingerprintConfig when stored as JSON) and identity."""
    text = info.fingerprint_config
    if not text:
        return None, None
    try:
        config = FingerprintConfig.from_json(text)
    except InvalidConfig:
        return None, identity_of(text)  # an identity string, or a config of an older format
    return config, config.identity


def text_config(config: Any, info: IndexInfo) -> Any:
    """The config to fingerprint texts with: the given one or the index's, never a mismatch."""
    stored, identity = stored_config(info)
    if config is None:
        if identity is not None and stored is None:
            if not identity.startswith(f"simpg-fp{FORMAT_VERSION}:"):
                raise SimpgError(
                    f"the simpg index on {info.label} was made with fingerprint config {identity}, of an "
                    f"older format than this simpg's ({FORMAT_VERSION}); move the table to a new config "
                    "with simpg backfill --refingerprint (docs/fingerprinting.md)"
                )
            raise SimpgError(
                f"the simpg index on {info.label} was made with fingerprint config {identity}; "
                "pass that config to fingerprint texts"
            )
        return stored or FingerprintConfig()
    if not isinstance(config, FingerprintConfig):
        raise SimpgError(f"expected FingerprintConfig, got {config!r}")
    if identity is not None and config.identity != identity:
        raise SimpgError(
            f"fingerprint config {config.identity} differs from {identity}, "
            f"the one the simpg index on {info.label} was made with; fingerprint texts with that one, "
            "or move the table to this one with simpg backfill --refingerprint"
        )
    return config


def fingerprint_texts(docs: list[Any], config: Any, workers: int | None) -> np.ndarray:
    """add()'s fingerprints of texts, as ``uint64`` (one process below 2000 texts unless ``workers``)."""
    if workers is None:
        workers = 1 if len(docs) < 2000 else None
    return np.array(list(fingerprint_many(docs, config, workers=workers)), dtype=np.uint64)


def config_text(config: Any) -> str | None:
    """What create() stores in simpg.indexes.fingerprint_config: the config's JSON."""
    if config is None:
        return None
    if not isinstance(config, FingerprintConfig):
        raise SimpgError(f"expected FingerprintConfig, got {config!r}")
    return str(config.to_json())


# -- results --------------------------------------------------------------------------

def nearest_first(row: Neighbor) -> tuple[int, bool, int]:
    """Sort key of integer-id lookups: ``ORDER BY distance, id``, a NULL id last (as PostgreSQL)."""
    return row.distance, row.id is None, row.id or 0


def group_near_many(rows: Iterable[Sequence[Any]], count: int) -> list[list[Neighbor]]:
    """``(query number from 1, id, distance)`` rows to one list of neighbours per query."""
    out: list[list[Neighbor]] = [[] for _ in range(count)]
    for n, id_, distance in rows:
        out[n - 1].append(Neighbor(id_, distance))
    return out


def integer_ids(info: IndexInfo) -> bool:
    """Whether pairs() can fetch ids through the binary-COPY fast path."""
    return info.id_type in INTEGER_TYPES


def join_parts(parts: list[tuple[np.ndarray, np.ndarray]], integer: bool) -> tuple[np.ndarray, np.ndarray]:
    """One ``(ids, fingerprints)`` pair of arrays from the fetched parts."""
    if not parts:
        return np.empty(0, dtype=np.int64 if integer else object), np.empty(0, dtype=np.uint64)
    if len(parts) == 1:
        return parts[0]
    return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])


def pair_arrays(ids: np.ndarray, fps: np.ndarray, k: int,
                ) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Chunks of ``(ids a, ids b, distances)`` over every pair within ``k``."""
    numeric = ids.dtype != object
    for i, j, d in allpairs.pair_chunks(fps, k):
        a, b = ids[i], ids[j]
        if numeric:
            a, b = np.minimum(a, b), np.maximum(a, b)
        yield a, b, d


def pairs_from_arrays(chunk: tuple[np.ndarray, np.ndarray, np.ndarray]) -> list[Pair]:
    """One chunk of :func:`pair_arrays` as Pair tuples of Python values."""
    a, b, d = chunk
    return [Pair(x, y, z) for x, y, z in zip(a.tolist(), b.tolist(), d.tolist(), strict=True)]


def cluster_method(value: Any) -> str:
    """clusters()'s ``method``, or SimpgError naming it."""
    if value not in allpairs.CLUSTER_METHODS:
        raise SimpgError(f"method must be one of {', '.join(map(repr, allpairs.CLUSTER_METHODS))}, got {value!r}")
    return str(value)


def clusters_of(ids: np.ndarray, fps: np.ndarray, k: int, method: str = "representative") -> list[list[Any]]:
    """Clusters (size >= 2) as lists of ids, largest first.

    ``"representative"`` takes rows in id order (the table's order for ids that have
    none), so the representative is the smallest id of its cluster.
    """
    rank = None
    if method == "representative" and ids.dtype != object:
        rank = ids
    elif method == "representative":
        try:
            rank = np.argsort(np.array(sorted(range(len(ids)), key=ids.__getitem__)), kind="stable")
        except TypeError:  # ids without an order: the table's
            rank = None
    groups = allpairs.clusters(fps, k, method=method, rank=rank)
    out = []
    for rows in groups:
        members = ids[rows].tolist()
        try:
            members.sort()
        except TypeError:  # ids without an order: keep the table's
            pass
        out.append(members)
    out.sort(key=lambda c: -len(c))
    return out


def make_stats(info: IndexInfo, row: Sequence[Any], exact: bool) -> IndexStats:
    """IndexStats from a :func:`~simpg.psycopg.statements.stats_query` row."""
    rows, table_bytes, index_sizes = row
    _, identity = stored_config(info)
    return IndexStats(
        table=f"{info.schema}.{info.table}", column=info.column, id_column=info.id_column,
        layout=info.layout, rows=int(rows), rows_exact=exact, table_bytes=int(table_bytes),
        index_bytes=dict(zip(info.index_names, map(int, index_sizes), strict=True)),
        prefix_columns=info.prefix_columns, fingerprint_config=identity,
    )
