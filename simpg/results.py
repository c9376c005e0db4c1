"""What simpg's handles return: neighbours, duplicates, pairs, guards and index reports.

The same types come from every surface (``simpg.psycopg``, ``simpg.shards``,
``simpg.sqlalchemy``), so code that reads results does not depend on which one found
them. ``simpg.psycopg`` re-exports them.

Example:
    >>> from simpg.results import Neighbor
    >>> Neighbor(id=7, distance=2)
    Neighbor(id=7, distance=2)
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Generic, NamedTuple, TypeVar

from simpg.fingerprint.minhash import similarity
from simpg.layout import Layout
from simpg.passages.comparison import SharedPassage

T = TypeVar("T")

__all__ = ["Duplicate", "Guard", "IndexProblem", "IndexStats", "Inserted", "Neighbor", "Pair", "PassageLookup",
           "PassageMatch"]


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


class Pair(NamedTuple):
    """Two rows within distance ``k`` of each other (``a < b`` for integer ids)."""

    a: Any
    b: Any
    distance: int


@dataclass(frozen=True)
class PassageMatch:
    """A stored row that shares passages with a text, verified on both texts (:func:`simpg.passages.compare`).

    ``passages`` are the shared passages, ``a_*`` fields in the query text and ``b_*`` in
    the row's text (token ranges and character offsets, to highlight them);
    ``shared_tokens`` their total length; ``text_in_row`` the share of the query text's
    3-shingles found in the row, ``row_in_text`` the share of the row's in the text;
    ``shared_hashes`` the distinct passage hashes (not skipped) the row shares with the
    text, as the index found it.
    """

    key: Any
    passages: tuple[SharedPassage, ...]
    shared_tokens: int
    text_in_row: float
    row_in_text: float
    shared_hashes: int

    @property
    def longest(self) -> int:
        """Tokens of the longest shared passage."""
        return max((p.length for p in self.passages), default=0)


@dataclass(frozen=True)
class PassageLookup(Generic[T]):
    """What a passage lookup found, and the common hashes it skipped (``max_common``).

    Iterates over ``matches``. ``skipped_hashes`` empty: nothing was skipped, so every
    row sharing a passage of at least the index's guarantee with the text is in it.
    """

    matches: tuple[T, ...]
    skipped_hashes: tuple[int, ...] = ()

    def __iter__(self) -> Iterator[T]:
        return iter(self.matches)

    def __len__(self) -> int:
        return len(self.matches)

    def __getitem__(self, i: int) -> T:
        return self.matches[i]


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
    key_column: str | None
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
            "table": self.table, "column": self.column, "key_column": self.key_column,
            "layout": self.layout.name, "k": self.layout.k, "levels": list(self.layout.levels),
            "tables": self.layout.tables, "rows": self.rows, "rows_exact": self.rows_exact,
            "table_bytes": self.table_bytes, "index_bytes": self.index_bytes,
            "total_index_bytes": self.total_index_bytes, "prefix_columns": list(self.prefix_columns),
            "fingerprint_config": self.fingerprint_config,
        }
