"""initial schema: tenants, keys, users, context items, events, idempotency

Revision ID: 20261201_0001
Revises:
Create Date: 2026-12-01
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql as pg

revision: str = "20261201_0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TS = sa.DateTime(timezone=True)


def _in(column: str, values: tuple[str, ...]) -> str:
    return f"{column} IN ({', '.join(repr(v) for v in values)})"


def upgrade() -> None:
    op.create_table(
        "tenant",
        sa.Column("id", sa.Text, nullable=False),
        sa.Column("created_at", TS, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_tenant"),
    )
    op.create_table(
        "api_key",
        sa.Column("id", pg.UUID(as_uuid=True), nullable=False),
        sa.Column("tenant_id", sa.Text, nullable=False),
        sa.Column("role", sa.Text, nullable=False),
        sa.Column("name", sa.Text, nullable=True),
        sa.Column("secret_hash", sa.Text, nullable=False),
        sa.Column("prefix", sa.Text, nullable=False),
        sa.Column("created_at", TS, nullable=False),
        sa.Column("revoked_at", TS, nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_api_key"),
        sa.ForeignKeyConstraint(["tenant_id"], ["tenant.id"], name="fk_api_key_tenant_id_tenant", ondelete="CASCADE"),
        sa.UniqueConstraint("secret_hash", name="uq_api_key_secret_hash"),
        sa.CheckConstraint(_in("role", ("agent", "operator", "admin")), name="ck_api_key_role"),
    )
    op.create_index("ix_api_key_tenant_id", "api_key", ["tenant_id"])

    op.create_table(
        "end_user",
        sa.Column("tenant_id", sa.Text, nullable=False),
        sa.Column("user_id", sa.Text, nullable=False),
        sa.Column("created_at", TS, nullable=False),
        sa.Column("updated_at", TS, nullable=False),
        sa.PrimaryKeyConstraint("tenant_id", "user_id", name="pk_end_user"),
        sa.ForeignKeyConstraint(["tenant_id"], ["tenant.id"], name="fk_end_user_tenant_id_tenant", ondelete="CASCADE"),
    )

    item_types = (
        "rule", "goal", "constraint", "preference", "fact", "decision",
        "entity", "plan", "tool_result", "summary", "episode",
    )  # fmt: skip
    op.create_table(
        "context_item",
        sa.Column("id", pg.UUID(as_uuid=True), nullable=False),
        sa.Column("tenant_id", sa.Text, nullable=False),
        sa.Column("user_id", sa.Text, nullable=False),
        sa.Column("type", sa.Text, nullable=False),
        sa.Column("content", sa.Text, nullable=False),
        sa.Column("key", sa.Text, nullable=True),
        sa.Column("value", pg.JSONB, nullable=True),
        sa.Column("domain", sa.Text, nullable=True),
        sa.Column("source", sa.Text, nullable=False),
        sa.Column("authority", sa.Text, nullable=False),
        sa.Column("scope", sa.Text, nullable=False),
        sa.Column("session_id", sa.Text, nullable=True),
        sa.Column("task_id", sa.Text, nullable=True),
        sa.Column("stage_id", sa.Text, nullable=True),
        sa.Column("step_id", sa.Text, nullable=True),
        sa.Column("hard", sa.Boolean, nullable=False),
        sa.Column("kind", sa.Text, nullable=False),
        sa.Column("status", sa.Text, nullable=False),
        sa.Column("status_reason", sa.Text, nullable=True),
        sa.Column("confidence", sa.Float, nullable=False),
        sa.Column("observed_at", TS, nullable=False),
        sa.Column("created_at", TS, nullable=False),
        sa.Column("updated_at", TS, nullable=False),
        sa.Column("expires_at", TS, nullable=True),
        sa.Column("valid_to", TS, nullable=True),
        sa.Column("deleted_at", TS, nullable=True),
        sa.Column("superseded_by", pg.UUID(as_uuid=True), nullable=True),
        sa.Column("token_cost", sa.Integer, nullable=False),
        sa.Column("token_model", sa.Text, nullable=False),
        sa.Column("variants", pg.JSONB, nullable=True),
        sa.Column(
            "related_ids",
            pg.ARRAY(pg.UUID(as_uuid=True)),
            nullable=False,
            server_default=sa.text("'{}'::uuid[]"),
        ),
        sa.PrimaryKeyConstraint("id", name="pk_context_item"),
        sa.ForeignKeyConstraint(
            ["tenant_id", "user_id"],
            ["end_user.tenant_id", "end_user.user_id"],
            name="fk_context_item_end_user",
        ),
        sa.CheckConstraint(_in("type", item_types), name="ck_context_item_type"),
        sa.CheckConstraint(
            _in("source", ("system", "user", "tool", "summary", "model")), name="ck_context_item_source"
        ),
        sa.CheckConstraint(
            _in("authority", ("system", "user", "tool", "summary", "inferred")),
            name="ck_context_item_authority",
        ),
        sa.CheckConstraint(
            _in("scope", ("step", "stage", "task", "session", "user", "global")), name="ck_context_item_scope"
        ),
        sa.CheckConstraint(_in("kind", ("fact", "opinion")), name="ck_context_item_kind"),
        sa.CheckConstraint(
            _in("status", ("available", "verified", "missing", "superseded", "expired", "deleted")),
            name="ck_context_item_status",
        ),
        sa.CheckConstraint("confidence >= 0 AND confidence <= 1", name="ck_context_item_confidence"),
        sa.CheckConstraint("token_cost >= 0", name="ck_context_item_token_cost"),
    )
    op.create_index("ix_context_item_window", "context_item", ["tenant_id", "user_id", "status", "scope"])
    op.create_index("ix_context_item_user_id_order", "context_item", ["tenant_id", "user_id", "id"])
    op.create_index(
        "ix_context_item_slot",
        "context_item",
        ["tenant_id", "user_id", "key", "scope", "session_id", "task_id"],
        postgresql_where=sa.text("key IS NOT NULL"),
    )

    op.create_table(
        "event",
        sa.Column("id", pg.UUID(as_uuid=True), nullable=False),
        sa.Column("tenant_id", sa.Text, nullable=False),
        sa.Column("user_id", sa.Text, nullable=True),
        sa.Column("actor", sa.Text, nullable=False),
        sa.Column("actor_role", sa.Text, nullable=False),
        sa.Column("action", sa.Text, nullable=False),
        sa.Column("entity_type", sa.Text, nullable=False),
        sa.Column("entity_id", sa.Text, nullable=True),
        sa.Column("reason", sa.Text, nullable=True),
        sa.Column("before", pg.JSONB, nullable=True),
        sa.Column("after", pg.JSONB, nullable=True),
        sa.Column("created_at", TS, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_event"),
    )
    op.create_index("ix_event_user_timeline", "event", ["tenant_id", "user_id", "id"])
    op.create_index("ix_event_entity", "event", ["tenant_id", "entity_id"])
    # Events are append-only: history may be erased (user erasure, retention purge) but never rewritten.
    op.execute(
        """
        CREATE FUNCTION event_reject_update() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            RAISE EXCEPTION 'event rows are append-only' USING ERRCODE = 'restrict_violation';
        END $$;
        """
    )
    op.execute(
        "CREATE TRIGGER event_append_only BEFORE UPDATE ON event FOR EACH ROW EXECUTE FUNCTION event_reject_update()"
    )

    op.create_table(
        "idempotency_record",
        sa.Column("tenant_id", sa.Text, nullable=False),
        sa.Column("key", sa.Text, nullable=False),
        sa.Column("user_id", sa.Text, nullable=True),
        sa.Column("method", sa.Text, nullable=False),
        sa.Column("path", sa.Text, nullable=False),
        sa.Column("request_hash", sa.Text, nullable=False),
        sa.Column("status_code", sa.Integer, nullable=True),
        sa.Column("response_body", sa.LargeBinary, nullable=True),
        sa.Column("created_at", TS, nullable=False),
        sa.PrimaryKeyConstraint("tenant_id", "key", name="pk_idempotency_record"),
    )
    op.create_index("ix_idempotency_record_created_at", "idempotency_record", ["created_at"])
    op.create_index("ix_idempotency_record_user", "idempotency_record", ["tenant_id", "user_id"])


def downgrade() -> None:
    op.drop_table("idempotency_record")
    op.execute("DROP TRIGGER IF EXISTS event_append_only ON event")
    op.execute("DROP FUNCTION IF EXISTS event_reject_update()")
    op.drop_table("event")
    op.drop_table("context_item")
    op.drop_table("end_user")
    op.drop_table("api_key")
    op.drop_table("tenant")
