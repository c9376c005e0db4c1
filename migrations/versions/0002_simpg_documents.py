"""The simpg_documents table of the reference schema, indexed for k <= 4 (6 blocks, 15 tables).

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-22
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import simpg.alembic  # noqa: F401  (registers op.create_simhash_index)
import simpg.sqlalchemy.types

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "simpg_documents",
        sa.Column("id", sa.BigInteger(), nullable=False),
        sa.Column("collection", sa.Text(), server_default=sa.text("'default'"), nullable=False),
        sa.Column("source", sa.Text(), nullable=False),
        sa.Column("title", sa.Text(), nullable=True),
        sa.Column("body", sa.Text(), nullable=False),
        sa.Column("simhash", simpg.sqlalchemy.types.SimHash(), nullable=False),
        sa.Column("fingerprint_config", sa.Text(), nullable=False),
        sa.Column(
            "created_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index(
        "simpg_documents_collection_idx", "simpg_documents", ["collection"], unique=False
    )
    op.create_simhash_index("simpg_documents", "simhash", k=4, blocks=6)


def downgrade() -> None:
    op.drop_simhash_index("simpg_documents", "simhash")
    op.drop_index("simpg_documents_collection_idx", table_name="simpg_documents")
    op.drop_table("simpg_documents")
