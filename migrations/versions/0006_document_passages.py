"""Passage hashes of the reference schema's documents: the passages they share (partial duplicates).

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-29
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import simpg.alembic  # noqa: F401  (registers create_passage_index)
import simpg.sqlalchemy.types

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # NULL in rows stored before: simpg backfill --passages fills them
    op.add_column("simpg_documents", sa.Column("passages", simpg.sqlalchemy.types.Passages(), nullable=True))
    # the GIN index and the windows' comment
    op.create_passage_index("simpg_documents", "passages", window=22, spaceless_window=46)


def downgrade() -> None:
    op.drop_passage_index("simpg_documents", "passages")
    op.drop_column("simpg_documents", "passages")
