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
few million rows (``simpg plan --k 4`` for bigger tables).
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, DateTime, Index, MetaData, Text, func, text
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from simpg.reference import BAND_COLUMNS, TABLE
from simpg.sqlalchemy.index import simhash_index
from simpg.sqlalchemy.types import SimHash, Sketch

__all__ = ["Document", "DocumentsBase", "metadata"]


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


simhash_index(Document.simhash, k=4, blocks=6)
metadata = DocumentsBase.metadata
