"""SQLAlchemy support: the SimHash column type, within-k queries and declared indexes.

Example:
    >>> from sqlalchemy import BigInteger, String, select
    >>> from sqlalchemy.orm import DeclarativeBase, mapped_column
    >>> from simpg.sqlalchemy import SimHash, simhash_index
    >>> class Base(DeclarativeBase):
    ...     pass
    >>> class Article(Base):
    ...     __tablename__ = "articles"
    ...     id = mapped_column(BigInteger, primary_key=True)
    ...     body = mapped_column(String)
    ...     simhash = mapped_column(SimHash)
    >>> _ = simhash_index(Article.simhash, k=3, blocks=5)
    >>> stmt = select(Article).where(Article.simhash.within(0x0123456789ABCDEF, 3))
"""

from __future__ import annotations

from simpg.sqlalchemy.engines import async_lookup_engine, lookup_engine
from simpg.sqlalchemy.functions import hamming, layout_is, permute, prefix_hi, prefix_lo, sketch_distance
from simpg.sqlalchemy.index import (
    NearDuplicate,
    SimHashGuard,
    SimHashIndex,
    index_for,
    near_duplicate,
    object_name,
    prefix_expression,
    raise_near_duplicates,
    register,
    simhash_guard,
    simhash_index,
    table_guards,
    table_indexes,
)
from simpg.sqlalchemy.orm import (
    FingerprintWriter,
    duplicates,
    duplicates_async,
    duplicates_select,
    fingerprint_on_write,
    near,
    near_async,
    near_select,
)
from simpg.sqlalchemy.passages import (
    PassageIndex,
    PassagesWriter,
    passage_index,
    passage_index_for,
    passages_near,
    passages_near_async,
    passages_on_write,
    table_passage_indexes,
)
from simpg.sqlalchemy.types import Passages, SimHash, Sketch
from simpg.sqlalchemy.urls import url_from_dsn

__all__ = [
    "FingerprintWriter",
    "NearDuplicate",
    "PassageIndex",
    "Passages",
    "PassagesWriter",
    "SimHash",
    "SimHashGuard",
    "SimHashIndex",
    "Sketch",
    "async_lookup_engine",
    "duplicates",
    "duplicates_async",
    "duplicates_select",
    "fingerprint_on_write",
    "hamming",
    "index_for",
    "layout_is",
    "lookup_engine",
    "near_duplicate",
    "near",
    "near_async",
    "near_select",
    "object_name",
    "passage_index",
    "passage_index_for",
    "passages_near",
    "passages_near_async",
    "passages_on_write",
    "permute",
    "prefix_expression",
    "prefix_hi",
    "prefix_lo",
    "raise_near_duplicates",
    "register",
    "simhash_guard",
    "simhash_index",
    "sketch_distance",
    "table_guards",
    "table_indexes",
    "table_passage_indexes",
    "url_from_dsn",
]
