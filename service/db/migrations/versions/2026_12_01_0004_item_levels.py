"""item compression levels precomputed at write time

Revision ID: 20261201_0004
Revises: 20261201_0003
Create Date: 2026-12-01
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql as pg

revision: str = "20261201_0004"
down_revision: str | None = "20261201_0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("context_item", sa.Column("level_texts", pg.ARRAY(sa.Text), nullable=True))
    op.add_column("context_item", sa.Column("level_tokens", pg.ARRAY(sa.Integer), nullable=True))


def downgrade() -> None:
    op.drop_column("context_item", "level_tokens")
    op.drop_column("context_item", "level_texts")
