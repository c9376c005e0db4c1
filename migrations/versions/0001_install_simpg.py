"""Install simpg (CREATE EXTENSION when the server has the files, else the plain script).

Revision ID: 0001
Revises:
Create Date: 2026-11-22
"""

from __future__ import annotations

from alembic import op

import simpg.alembic  # noqa: F401  (registers op.install_simpg)

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.install_simpg()


def downgrade() -> None:
    op.uninstall_simpg()
