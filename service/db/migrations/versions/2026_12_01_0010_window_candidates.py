"""context items: partial indexes for a window's standing candidates

Revision ID: 20261201_0010
Revises: 20261201_0009
Create Date: 2026-12-01
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "20261201_0010"
down_revision: str | None = "20261201_0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# As service.db.models builds them (tests/db/test_migrations.py holds the two equal).
STANDING = (
    "status IN ('available', 'verified', 'missing') AND scope IN ('user', 'global')"
    " AND (type IN ('rule', 'constraint', 'goal', 'plan', 'decision') OR status IN ('verified', 'missing'))"
)
SCOPED = "status IN ('available', 'verified', 'missing') AND scope NOT IN ('user', 'global')"


def upgrade() -> None:
    # A window reads a user's pinned kinds of item and this session's / task's items without scanning the
    # user's other items, of which there may be 100,000.
    op.create_index(
        "ix_context_item_standing", "context_item", ["tenant_id", "user_id"], postgresql_where=sa.text(STANDING)
    )
    op.create_index(
        "ix_context_item_scoped",
        "context_item",
        ["tenant_id", "user_id", "scope_ref"],
        postgresql_where=sa.text(SCOPED),
    )


def downgrade() -> None:
    op.drop_index("ix_context_item_scoped", table_name="context_item")
    op.drop_index("ix_context_item_standing", table_name="context_item")
