"""conversations: conversation_message, a user's sessions as stored chat history

Revision ID: 20261201_0012
Revises: 20261201_0011
Create Date: 2026-12-01
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql as pg

revision: str = "20261201_0012"
down_revision: str | None = "20261201_0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    # The unique index on (tenant, user, session, seq) is also how a session's messages are read, in order.
    op.create_table(
        "conversation_message",
        sa.Column("id", pg.UUID(as_uuid=True), nullable=False),
        sa.Column("tenant_id", sa.Text, nullable=False),
        sa.Column("user_id", sa.Text, nullable=False),
        sa.Column("session_id", sa.Text, nullable=False),
        sa.Column("seq", sa.BigInteger, nullable=False),
        sa.Column("message", pg.JSONB, nullable=False),
        sa.Column("created_at", TS, nullable=False),
        sa.Column("archived_at", TS, nullable=True),
        sa.Column("archived_item_id", pg.UUID(as_uuid=True), nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_conversation_message"),
        sa.ForeignKeyConstraint(
            ["tenant_id", "user_id"],
            ["end_user.tenant_id", "end_user.user_id"],
            name="fk_conversation_message_end_user",
        ),
        sa.UniqueConstraint(
            "tenant_id", "user_id", "session_id", "seq", name="uq_conversation_message_tenant_id_user_id_session_id_seq"
        ),
        sa.CheckConstraint("seq >= 1", name="ck_conversation_message_seq"),
    )


def downgrade() -> None:
    op.drop_table("conversation_message")
