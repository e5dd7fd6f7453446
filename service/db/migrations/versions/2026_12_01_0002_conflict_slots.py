"""conflict slots: scope_ref, support_count, corrects, one active item per slot, event.rule

Revision ID: 20261201_0002
Revises: 20261201_0001
Create Date: 2026-12-01
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql as pg

revision: str = "20261201_0002"
down_revision: str | None = "20261201_0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

ACTIVE = "key IS NOT NULL AND status IN ('available', 'verified', 'missing')"


def upgrade() -> None:
    op.add_column("context_item", sa.Column("scope_ref", sa.Text, nullable=False, server_default=""))
    op.add_column("context_item", sa.Column("support_count", sa.Integer, nullable=False, server_default="1"))
    op.add_column("context_item", sa.Column("corrects", pg.UUID(as_uuid=True), nullable=True))
    op.execute(
        """
        UPDATE context_item SET scope_ref = CASE scope
            WHEN 'session' THEN coalesce(session_id, '')
            WHEN 'task' THEN coalesce(task_id, '')
            WHEN 'stage' THEN coalesce(stage_id, '')
            WHEN 'step' THEN coalesce(step_id, '')
            ELSE '' END
        """
    )
    # Rows written before slots existed may hold several active items per slot: keep the latest active.
    op.execute(
        f"""
        UPDATE context_item c SET status = 'superseded', status_reason = 'superseded by migration: later write',
               superseded_by = w.id, valid_to = now()
        FROM (
            SELECT id, tenant_id, user_id, key, scope, scope_ref,
                   row_number() OVER (PARTITION BY tenant_id, user_id, key, scope, scope_ref ORDER BY id DESC) AS rn
            FROM context_item WHERE {ACTIVE}
        ) w
        WHERE w.rn = 1 AND c.{ACTIVE.replace(" AND ", " AND c.")}
          AND c.tenant_id = w.tenant_id AND c.user_id = w.user_id AND c.key = w.key
          AND c.scope = w.scope AND c.scope_ref = w.scope_ref AND c.id <> w.id
        """
    )
    op.drop_index("ix_context_item_slot", table_name="context_item")
    op.create_index(
        "ix_context_item_slot",
        "context_item",
        ["tenant_id", "user_id", "key", "scope", "scope_ref", "id"],
        postgresql_where=sa.text("key IS NOT NULL"),
    )
    op.create_index(
        "uq_context_item_active_slot",
        "context_item",
        ["tenant_id", "user_id", "key", "scope", "scope_ref"],
        unique=True,
        postgresql_where=sa.text(ACTIVE),
    )
    op.add_column("event", sa.Column("rule", sa.Text, nullable=True))


def downgrade() -> None:
    op.drop_column("event", "rule")
    op.drop_index("uq_context_item_active_slot", table_name="context_item")
    op.drop_index("ix_context_item_slot", table_name="context_item")
    op.create_index(
        "ix_context_item_slot",
        "context_item",
        ["tenant_id", "user_id", "key", "scope", "session_id", "task_id"],
        postgresql_where=sa.text("key IS NOT NULL"),
    )
    op.drop_column("context_item", "corrects")
    op.drop_column("context_item", "support_count")
    op.drop_column("context_item", "scope_ref")
