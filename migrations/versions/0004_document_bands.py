"""Band keys of the reference schema's documents: a second candidate source for simpg near.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-26
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

BAND_COLUMNS = [f"sketch_b{i}" for i in range(4)]


def upgrade() -> None:
    # NULL in rows stored before: they are found through their fingerprint only.
    for column in BAND_COLUMNS:
        op.add_column("simpg_documents", sa.Column(column, sa.BigInteger(), nullable=True))
        op.create_index(f"simpg_documents_{column}_idx", "simpg_documents", [column], unique=False)


def downgrade() -> None:
    for column in reversed(BAND_COLUMNS):
        op.drop_index(f"simpg_documents_{column}_idx", table_name="simpg_documents")
        op.drop_column("simpg_documents", column)
