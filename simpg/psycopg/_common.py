"""What the sync and async handles share: input checks and the shaping of their results.

Free of I/O. The result types are :mod:`simpg.results`', the error translation
:mod:`simpg.exc`'s, the in-memory pairs and clusters :mod:`simpg.allpairs`'.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import psycopg
from psycopg import errors
from psycopg.types.numeric import Int8

from simpg import allpairs, bits
from simpg.exc import LAYOUT_CHANGED, InvalidFingerprint, SimpgError, translate
from simpg.fingerprint import FingerprintConfig, fingerprint_many, minhash
from simpg.fingerprint.config import config_for_index, stored_config
from simpg.fingerprint.minhash import checked_max_sketch_distance, to_sql
from simpg.psycopg.catalog import INTEGER_TYPES, IndexInfo, check_k
from simpg.psycopg.statements import near_params
from simpg.psycopg.wire import Int8Array, parse_sketched
from simpg.results import IndexStats, Neighbor, Pair


def duplicates_params(info: IndexInfo, fp: int, k: int, sketch: Any, max_sketch_distance: Any,
                      band_keys: Any = None, band_columns: Sequence[str] = ()) -> list[Any]:
    """``$1..$6`` of :func:`~simpg.psycopg.statements.duplicates_sql`, checked (errors name the value).

    Without ``band_keys`` there is no ``$6``: the statement has no band columns to compare.
    """
    limit = checked_max_sketch_distance(max_sketch_distance)
    params = [*near_params(info, fp, k), to_sql(sketch), Int8(limit)]
    if band_keys is not None:
        params.append(band_key_array(band_keys, band_columns))
    return params


def band_key_array(band_keys: Any, columns: Sequence[str]) -> Int8Array:
    """A document's band keys (signed 64-bit, as stored) as the ``bigint[]`` parameter, one per column."""
    return Int8Array(minhash.checked_band_keys(band_keys, columns))


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


# -- errors ---------------------------------------------------------------------------

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


def key_column(primary_key: list[tuple[str, str]]) -> tuple[str | None, str | None]:
    """The single-column primary key; ``(None, None)`` when there is none (see :func:`with_ids`)."""
    if len(primary_key) != 1:
        return None, None
    return primary_key[0]


def with_ids(info: IndexInfo) -> IndexInfo:
    """``info`` if lookups can name rows, else an error saying to name the key column."""
    if not info.key_column:
        raise SimpgError(
            f"table {info.table} has no single-column primary key; pass key_column= to name the key column"
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


def text_config(config: Any, info: IndexInfo) -> FingerprintConfig:
    """The config to fingerprint texts with: the given one or the index's, never a mismatch."""
    return config_for_index(config, info.fingerprint_config, info.label)


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


def make_stats(info: IndexInfo, row: Sequence[Any], exact: bool) -> IndexStats:
    """IndexStats from a :func:`~simpg.psycopg.statements.stats_query` row."""
    rows, table_bytes, index_sizes = row
    _, identity = stored_config(info.fingerprint_config)
    return IndexStats(
        table=f"{info.schema}.{info.table}", column=info.column, key_column=info.key_column,
        layout=info.layout, rows=int(rows), rows_exact=exact, table_bytes=int(table_bytes),
        index_bytes=dict(zip(info.index_names, map(int, index_sizes), strict=True)),
        prefix_columns=info.prefix_columns, fingerprint_config=identity,
    )


@dataclass(frozen=True)
class SketchedRows:
    """The rows the sketch-confirmed pairs and clusters decide on (those with a sketch), read once.

    ``band_keys`` as :func:`simpg.allpairs.as_band_keys` takes them, None without bands;
    ``k`` and ``max_sketch_distance`` checked.
    """

    ids: np.ndarray
    fingerprints: np.ndarray
    sketches: np.ndarray
    band_keys: tuple[np.ndarray, np.ndarray] | None
    k: int
    max_sketch_distance: int

    def pairs(self) -> list[Pair]:
        """Every confirmed pair, ``a < b``, sorted (:func:`simpg.allpairs.confirmed_pairs_of`)."""
        return allpairs.confirmed_pairs_of(self.ids, self.fingerprints, self.k, self.sketches,
                                           self.max_sketch_distance, self.band_keys)

    def clusters(self, method: str) -> list[list[Any]]:
        """The clusters of the confirmed pairs (:func:`simpg.allpairs.confirmed_clusters_of`)."""
        return allpairs.confirmed_clusters_of(self.ids, self.fingerprints, self.k, method, self.sketches,
                                              self.max_sketch_distance, self.band_keys)


def sketched_rows(rows: Sequence[Sequence[Any]], integer: bool, bands: int, k: int, max_sketch_distance: int,
                  table: str, sketch_column: str) -> SketchedRows:
    """SketchedRows from the :func:`~simpg.psycopg.statements.fetch_sketched_sql` rows of every part.

    A sketch that is not 256 bits (a ``bit varying`` column) raises, naming the column.
    """
    parts = []
    for row in rows:
        try:
            parts.append(parse_sketched(row, integer, bands))
        except ValueError as err:
            raise SimpgError(f"column {sketch_column} of table {table} must be bit(256) (sketches), got {err}"
                             ) from None
    if parts:
        ids, fps, sketches, keys, nulls = (np.concatenate([p[n] for p in parts]) for n in range(5))
    else:
        ids = np.empty(0, dtype=np.int64 if integer else object)
        fps, sketches = np.empty(0, dtype=np.uint64), np.empty((0, minhash.SKETCH_BYTES), dtype=np.uint8)
        keys, nulls = np.empty((0, bands), dtype=np.int64), np.empty(0, dtype=np.int16)
    return SketchedRows(ids, fps, sketches, allpairs.band_keys_with_nulls(keys, nulls) if bands else None,
                        k, max_sketch_distance)
