"""context items: a conversation's episodes in order, for relevance in context

Revision ID: 20261201_0011
Revises: 20261201_0010
Create Date: 2026-12-01
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "20261201_0011"
down_revision: str | None = "20261201_0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# As service.db.models builds it (tests/db/test_migrations.py holds the two equal).
CONVERSATION = "type = 'episode' AND session_id IS NOT NULL"


def upgrade() -> None:
    # The window finds the turns just before and after a relevant turn of the same conversation
    # (service/windows/recall.py, conversation_neighbours) by probing this index, never by reading the session.
    op.create_index(
        "ix_context_item_conversation",
        "context_item",
        ["tenant_id", "user_id", "session_id", "observed_at", "id"],
        postgresql_where=sa.text(CONVERSATION),
    )


def downgrade() -> None:
    op.drop_index("ix_context_item_conversation", table_name="context_item")
