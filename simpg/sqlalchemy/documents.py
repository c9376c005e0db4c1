"""The reference schema: the ``simpg_documents`` table that ``simpg dedup`` and ``simpg load`` write.

This model is the one definition of the table. :func:`simpg.reference.ensure_reference_schema`
runs the DDL it renders (``CREATE TABLE`` and ``CREATE INDEX`` compiled for PostgreSQL, then
``simpg.create_index`` with the declared layout) and moves a table of an earlier simpg
forward by adding the columns it lacks; ``migrations/`` must migrate to the same table
(tests/integration/test_migrations.py compares them with Alembic's autogenerate and on the
server's catalog). ``python -m simpg.reference`` prints the DDL.

The simhash index is declared for ``k <= DEDUP_K`` (4) with 6 blocks (15 tables): the
radius ``simpg dedup`` decides at, so every report, lookup and guard on the table answers
at it too; prefixes of 20-22 bits keep a lookup to a few candidates in a table of up to a
few million rows (``simpg plan -k 4`` for bigger tables).
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import (
    BigInteger,
    CheckConstraint,
    DateTime,
    ForeignKey,
    Index,
    MetaData,
    Text,
    UniqueConstraint,
    func,
    text,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from simpg.reference import BAND_COLUMNS, DECISIONS_TABLE, PASSAGE_SPACELESS_WINDOW, PASSAGE_WINDOW, TABLE, VERDICTS
from simpg.sqlalchemy.index import simhash_index
from simpg.sqlalchemy.passages import passage_index
from simpg.sqlalchemy.types import Passages, SimHash, Sketch

__all__ = ["Decision", "Document", "DocumentsBase", "metadata"]


class DocumentsBase(DeclarativeBase):
    """Declarative base of the reference schema (its own MetaData)."""

    metadata = MetaData()


class Document(DocumentsBase):
    """One stored document and its fingerprint."""

    __tablename__ = TABLE
    __table_args__ = (
        Index(f"{TABLE}_collection_idx", "collection"),
        *(Index(f"{TABLE}_{column}_idx", column) for column in BAND_COLUMNS),
    )

    id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    collection: Mapped[str] = mapped_column(Text, server_default=text("'default'"))
    source: Mapped[str] = mapped_column(Text)  # file path, "file.jsonl:LINE" or "file.csv:ROW"
    title: Mapped[str | None] = mapped_column(Text)
    body: Mapped[str] = mapped_column(Text)
    simhash: Mapped[int] = mapped_column(SimHash)
    fingerprint_config: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())
    # Columns added after the first release are nullable: ensure_reference_schema adds them
    # to a table of an earlier simpg, whose rows have no value for them.
    sketch: Mapped[bytes | None] = mapped_column(Sketch)  # confirms candidates; NULL in rows of simpg < 0.2
    # band keys (simpg.fingerprint.sketch_and_bands), signed as stored: lookup candidates too;
    # NULL for texts of fewer than 16 shingles and in rows stored before them
    sketch_b0: Mapped[int | None] = mapped_column(BigInteger)
    sketch_b1: Mapped[int | None] = mapped_column(BigInteger)
    sketch_b2: Mapped[int | None] = mapped_column(BigInteger)
    sketch_b3: Mapped[int | None] = mapped_column(BigInteger)
    # passage hashes (simpg.passages.passage_hashes, windows PASSAGE_WINDOW and
    # PASSAGE_SPACELESS_WINDOW): the passages a document shares with others (partial
    # duplicates, docs/partial.md); NULL until filled (simpg backfill --passages), and in rows
    # stored before them
    passages: Mapped[list[int] | None] = mapped_column(Passages)


simhash_index(Document.simhash, k=4, blocks=6)
passage_index(Document.passages, window=PASSAGE_WINDOW, spaceless_window=PASSAGE_SPACELESS_WINDOW)


class Decision(DocumentsBase):
    """A reviewer's decision on two stored documents of a collection (:mod:`simpg.review.decisions`).

    ``not_duplicate``: the two are never paired nor put in one cluster; ``duplicate``: they
    are paired and their clusters merged. One decision per pair (``doc_a < doc_b``): a later
    one replaces it. Deleting a document (``simpg dedup`` without ``--append`` replaces the
    collection's rows) deletes its decisions.
    """

    __tablename__ = DECISIONS_TABLE
    __table_args__ = (
        UniqueConstraint("collection", "doc_a", "doc_b", name=f"{DECISIONS_TABLE}_pair_key"),
        CheckConstraint("doc_a < doc_b", name=f"{DECISIONS_TABLE}_ordered_check"),
        CheckConstraint("verdict IN (" + ", ".join(f"'{v}'" for v in VERDICTS) + ")",
                        name=f"{DECISIONS_TABLE}_verdict_check"),
        # the cascades from simpg_documents look rows up by either end
        Index(f"{DECISIONS_TABLE}_doc_a_idx", "doc_a"),
        Index(f"{DECISIONS_TABLE}_doc_b_idx", "doc_b"),
    )

    id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    collection: Mapped[str] = mapped_column(Text)
    doc_a: Mapped[int] = mapped_column(BigInteger, ForeignKey(
        f"{TABLE}.id", ondelete="CASCADE", name=f"{DECISIONS_TABLE}_doc_a_fkey"))
    doc_b: Mapped[int] = mapped_column(BigInteger, ForeignKey(
        f"{TABLE}.id", ondelete="CASCADE", name=f"{DECISIONS_TABLE}_doc_b_fkey"))
    verdict: Mapped[str] = mapped_column(Text)
    who: Mapped[str] = mapped_column(Text, server_default=text("CURRENT_USER"))  # the database role
    reviewer: Mapped[str | None] = mapped_column(Text)  # a person's name, when given (--reviewer)
    decided_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())
    note: Mapped[str | None] = mapped_column(Text)

metadata = DocumentsBase.metadata
