"""What simpg's handles return: neighbours, duplicates, pairs, guards, passages and index reports.

The same types come from every surface (``simpg.psycopg``, ``simpg.shards``,
``simpg.sqlalchemy``), so code that reads results does not depend on which one found
them. ``simpg.psycopg`` re-exports them.

Example:
    >>> from simpg.results import Neighbor
    >>> Neighbor(id=7, distance=2)
    Neighbor(id=7, distance=2)
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple, TypeVar

from simpg.fingerprint.minhash import similarity
from simpg.layout import Layout
from simpg.passages import PassageConfig, SharedPassage

__all__ = ["Duplicate", "Guard", "IndexProblem", "IndexStats", "Inserted", "Neighbor", "Pair", "PassageIndex",
           "PassageMatch", "PassageMatches", "SharedPassage"]

#: What a :class:`PassageMatches` holds: a :class:`PassageMatch`, or a pair with one
#: (SQLAlchemy's ``passages_near``: ``(object, PassageMatch)``).
MatchT = TypeVar("MatchT")


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


class PassageIndex(NamedTuple):
    """A passage index as a handle reads it (``simpg.passage_indexes``) with the columns its lookups read.

    ``index_name`` and ``key_bits`` are None when the GIN index on the keys is missing
    (lookups stay exact, they read the whole table); ``key_bits``: the bits of each hash the
    index keeps (``simpg.passage_keys``).
    """

    table: str
    column: str
    window: int
    spaceless_window: int
    index_name: str | None
    key_column: str
    text_column: str
    key_bits: int | None = None

    @property
    def config(self) -> PassageConfig:
        """The config the stored hashes were made with (texts are winnowed with it)."""
        return PassageConfig(self.window, self.spaceless_window)

    @property
    def guarantee(self) -> int:
        """Every shared run of at least this many tokens is found: ``max(window, spaceless_window) + K - 1``."""
        return self.config.guarantee


@dataclass(frozen=True)
class PassageMatch:
    """A row that shares passages with the text looked up, verified on both texts.

    In each of ``passages`` (:class:`~simpg.passages.SharedPassage`) side ``a`` is the text
    looked up and side ``b`` the row's text: ``text[p.a_char_start:p.a_char_end]`` is the
    passage in the text, ``row_text[p.b_char_start:p.b_char_end]`` in the row, in order of
    their start in the text. Containment is exact, over token 3-shingle sets, both ways.
    """

    key: Any
    passages: tuple[SharedPassage, ...]
    shared_tokens: int  #: tokens of all shared passages together
    longest: int  #: tokens of the longest shared passage
    row_in_text: float  #: how much of the row is in the text (its shingles found in the text)
    text_in_row: float  #: how much of the text is in the row
    shared_hashes: int  #: passage hashes the index found shared (not skipped)

    @property
    def passage_count(self) -> int:
        """The number of shared passages (a passage the text holds twice counts twice)."""
        return len(self.passages)

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form (passages as text and row offsets)."""
        return {"key": self.key, "passage_count": self.passage_count, "shared_tokens": self.shared_tokens,
                "longest": self.longest, "row_in_text": self.row_in_text, "text_in_row": self.text_in_row,
                "shared_hashes": self.shared_hashes,
                "passages": [{"tokens": p.length, "text_start": p.a_char_start, "text_end": p.a_char_end,
                              "row_start": p.b_char_start, "row_end": p.b_char_end} for p in self.passages]}


class PassageMatches(list[MatchT]):
    """What a passage lookup returns: its matches (a list, most shared hashes first) and what it skipped.

    The psycopg handles return ``PassageMatches[PassageMatch]``, SQLAlchemy's
    ``passages_near`` ``PassageMatches[tuple[object, PassageMatch]]`` (the objects loaded).

    ``skipped``: the text's passage hashes the lookup did not search, because the
    statistics put each in more than ``max_common`` rows (boilerplate); a row that shares
    only those with the text is not found. Empty: the answer is exact (every row sharing
    a run of the index's guarantee is in it).
    """

    skipped: tuple[int, ...]

    def __init__(self, matches: Iterable[MatchT] = (), skipped: Iterable[int] = ()) -> None:
        super().__init__(matches)
        self.skipped = tuple(skipped)

    def __repr__(self) -> str:
        return f"PassageMatches({list(self)!r}, skipped={self.skipped!r})"
