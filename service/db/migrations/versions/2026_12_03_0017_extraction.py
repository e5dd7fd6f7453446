"""Learning from conversations (docs/design.md §3.9): the provenance of learned items and observations,
which messages are extracted and by which extractor version, sessions ended while messages still wait,
and the tokens each tenant spent on a language-model extractor per day

Revision ID: 20261203_0017
Revises: 20261202_0016
Create Date: 2026-12-03
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql as pg

revision: str = "20261203_0017"
down_revision: str | None = "20261202_0016"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    for table in ("context_item", "observation"):
        op.add_column(table, sa.Column("extracted_by", sa.Text, nullable=True))
        op.add_column(table, sa.Column("evidence", pg.JSONB, nullable=True))
    # A user's learned items by extractor version: the listing filter, and re-extraction's supersession.
    op.create_index(
        "ix_context_item_extracted",
        "context_item",
        ["tenant_id", "user_id", "extracted_by"],
        postgresql_where=sa.text("extracted_by IS NOT NULL"),
    )
    op.add_column("conversation_message", sa.Column("extracted_by", sa.Text, nullable=True))
    op.add_column("conversation_message", sa.Column("extracted_at", sa.DateTime(timezone=True), nullable=True))
    op.add_column("conversation_message", sa.Column("ended_at", sa.DateTime(timezone=True), nullable=True))
    # The messages waiting for extraction, per session in order: what the extract job and the on-demand
    # route read. Small: a message leaves it once extracted.
    op.create_index(
        "ix_conversation_message_waiting",
        "conversation_message",
        ["tenant_id", "user_id", "session_id", "seq"],
        postgresql_where=sa.text("extracted_by IS NULL"),
    )
    op.create_table(
        "extraction_usage",
        sa.Column("tenant_id", sa.Text, sa.ForeignKey("tenant.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("day", sa.Date, primary_key=True),
        sa.Column("calls", sa.Integer, nullable=False, server_default="0"),
        sa.Column("prompt_tokens", sa.BigInteger, nullable=False, server_default="0"),
        sa.Column("completion_tokens", sa.BigInteger, nullable=False, server_default="0"),
    )


def downgrade() -> None:
    op.drop_table("extraction_usage")
    op.drop_index("ix_conversation_message_waiting", table_name="conversation_message")
    for column in ("ended_at", "extracted_at", "extracted_by"):
        op.drop_column("conversation_message", column)
    op.drop_index("ix_context_item_extracted", table_name="context_item")
    for table in ("observation", "context_item"):
        op.drop_column(table, "evidence")
        op.drop_column(table, "extracted_by")
