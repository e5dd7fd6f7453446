"""vector outbox: dead letters (changes that fail on their own while others apply)

Revision ID: 20261201_0008
Revises: 20261201_0007
Create Date: 2026-12-01
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "20261201_0008"
down_revision: str | None = "20261201_0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("vector_outbox", sa.Column("dead_at", sa.DateTime(timezone=True), nullable=True))


def downgrade() -> None:
    op.drop_column("vector_outbox", "dead_at")
