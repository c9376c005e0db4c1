"""The reference schema as a model: the ``simpg_documents`` table the CLI (``simpg dedup``) uses.

It must stay identical to the DDL the CLI runs and to ``migrations/`` (the test suite
compares all three on a real server):

.. code-block:: sql

    CREATE TABLE simpg_documents (
        id bigserial PRIMARY KEY,
        collection text NOT NULL DEFAULT 'default',
        source text NOT NULL,
        title text,
        body text NOT NULL,
        simhash bigint NOT NULL,
        fingerprint_config text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        sketch bit(256),
        sketch_b0 bigint,
        sketch_b1 bigint,
        sketch_b2 bigint,
        sketch_b3 bigint
    );
    CREATE INDEX simpg_documents_collection_idx ON simpg_documents (collection);
    CREATE INDEX simpg_documents_sketch_b0_idx ON simpg_documents (sketch_b0);  -- and b1, b2, b3
    SELECT simpg.create_index('simpg_documents', 'simhash', k => 4, blocks => 6);
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, DateTime, Index, MetaData, Text, func, text
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from simpg.sqlalchemy.index import simhash_index
from simpg.sqlalchemy.types import SimHash, Sketch

__all__ = ["Document", "DocumentsBase", "metadata"]


class DocumentsBase(DeclarativeBase):
    """Declarative base of the reference schema (its own MetaData)."""

    metadata = MetaData()


class Document(DocumentsBase):
    """One stored document and its fingerprint."""

    __tablename__ = "simpg_documents"
    __table_args__ = (
        Index("simpg_documents_collection_idx", "collection"),
        *(Index(f"simpg_documents_sketch_b{i}_idx", f"sketch_b{i}") for i in range(4)),
    )

    id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    collection: Mapped[str] = mapped_column(Text, server_default=text("'default'"))
    source: Mapped[str] = mapped_column(Text)  # file path, "file.jsonl:LINE" or "file.csv:ROW"
    title: Mapped[str | None] = mapped_column(Text)
    body: Mapped[str] = mapped_column(Text)
    simhash: Mapped[int] = mapped_column(SimHash)
    fingerprint_config: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())
    sketch: Mapped[bytes | None] = mapped_column(Sketch)  # confirms candidates; NULL before simpg 0.2
    # band keys (simpg.fingerprint.sketch_and_bands), signed as stored; NULL for short texts
    sketch_b0: Mapped[int | None] = mapped_column(BigInteger)
    sketch_b1: Mapped[int | None] = mapped_column(BigInteger)
    sketch_b2: Mapped[int | None] = mapped_column(BigInteger)
    sketch_b3: Mapped[int | None] = mapped_column(BigInteger)


simhash_index(Document.simhash, k=4, blocks=6)
metadata = DocumentsBase.metadata
