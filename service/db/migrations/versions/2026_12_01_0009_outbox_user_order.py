"""vector outbox: a user's pending changes newest first, from the index

Revision ID: 20261201_0009
Revises: 20261201_0008
Create Date: 2026-12-01
"""

from collections.abc import Sequence

from alembic import op

revision: str = "20261201_0009"
down_revision: str | None = "20261201_0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # The window's lexical ranking reads a user's newest pending changes (ORDER BY id DESC LIMIT n).
    op.drop_index("ix_vector_outbox_user", table_name="vector_outbox")
    op.create_index("ix_vector_outbox_user", "vector_outbox", ["tenant_id", "user_id", "id"])


def downgrade() -> None:
    op.drop_index("ix_vector_outbox_user", table_name="vector_outbox")
    op.create_index("ix_vector_outbox_user", "vector_outbox", ["tenant_id", "user_id"])
