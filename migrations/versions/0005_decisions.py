"""Reviewers' decisions on pairs of the reference schema's documents (simpg review, simpg dedup).

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-29
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "simpg_decisions",
        sa.Column("id", sa.BigInteger(), nullable=False),
        sa.Column("collection", sa.Text(), nullable=False),
        sa.Column("doc_a", sa.BigInteger(), nullable=False),
        sa.Column("doc_b", sa.BigInteger(), nullable=False),
        sa.Column("verdict", sa.Text(), nullable=False),
        sa.Column("who", sa.Text(), server_default=sa.text("CURRENT_USER"), nullable=False),
        sa.Column("reviewer", sa.Text(), nullable=True),
        sa.Column("decided_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.Column("note", sa.Text(), nullable=True),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("collection", "doc_a", "doc_b", name="simpg_decisions_pair_key"),
        sa.CheckConstraint("doc_a < doc_b", name="simpg_decisions_ordered_check"),
        sa.CheckConstraint("verdict IN ('not_duplicate', 'duplicate')", name="simpg_decisions_verdict_check"),
        sa.ForeignKeyConstraint(["doc_a"], ["simpg_documents.id"], name="simpg_decisions_doc_a_fkey",
                                ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["doc_b"], ["simpg_documents.id"], name="simpg_decisions_doc_b_fkey",
                                ondelete="CASCADE"),
    )
    op.create_index("simpg_decisions_doc_a_idx", "simpg_decisions", ["doc_a"], unique=False)
    op.create_index("simpg_decisions_doc_b_idx", "simpg_decisions", ["doc_b"], unique=False)


def downgrade() -> None:
    op.drop_index("simpg_decisions_doc_b_idx", table_name="simpg_decisions")
    op.drop_index("simpg_decisions_doc_a_idx", table_name="simpg_decisions")
    op.drop_table("simpg_decisions")
