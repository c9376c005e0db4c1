"""Sketches of the reference schema's documents: simpg dedup confirms candidates with them.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-25
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import simpg.sqlalchemy.types

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # NULL in rows stored before: simpg dedup computes them from the stored text when it reads them.
    op.add_column("simpg_documents", sa.Column("sketch", simpg.sqlalchemy.types.Sketch(), nullable=True))


def downgrade() -> None:
    op.drop_column("simpg_documents", "sketch")
