"""scheduled jobs: job_run, event.run_id, profile_entry.decayed_at, ctxmem_uuid7()

Revision ID: 20261201_0005
Revises: 20261201_0004
Create Date: 2026-12-01
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql as pg

revision: str = "20261201_0005"
down_revision: str | None = "20261201_0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.add_column("event", sa.Column("run_id", pg.UUID(as_uuid=True), nullable=True))
    op.add_column("profile_entry", sa.Column("decayed_at", TS, nullable=True))
    op.create_table(
        "job_run",
        sa.Column("id", pg.UUID(as_uuid=True), nullable=False),
        sa.Column("name", sa.Text, nullable=False),
        sa.Column("tenant_id", sa.Text, nullable=True),
        sa.Column("trigger", sa.Text, nullable=False),
        sa.Column("tick", TS, nullable=True),
        sa.Column("as_of", TS, nullable=False),
        sa.Column("started_at", TS, nullable=False),
        sa.Column("finished_at", TS, nullable=True),
        sa.Column("status", sa.Text, nullable=False),
        sa.Column("rows", pg.JSONB, nullable=False),
        sa.Column("error", sa.Text, nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_job_run"),
        sa.CheckConstraint("status IN ('running', 'succeeded', 'failed', 'interrupted')", name="ck_job_run_status"),
    )
    op.create_index("ix_job_run_name_started", "job_run", ["name", "started_at"])
    op.create_index(
        "uq_job_run_tick", "job_run", ["name", "tick"], unique=True, postgresql_where=sa.text("tick IS NOT NULL")
    )
    # Jobs write their events in set-based SQL; ids must stay time-ordered like the service's (UUIDv7).
    # PostgreSQL 18 has uuidv7(); this works on 13+ (a v4 with the millisecond timestamp laid over it).
    op.execute(
        """
        CREATE FUNCTION ctxmem_uuid7() RETURNS uuid LANGUAGE sql VOLATILE AS $$
            SELECT encode(set_bit(set_bit(overlay(uuid_send(gen_random_uuid()) PLACING
                substring(int8send(floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint) FROM 3)
                FROM 1 FOR 6), 52, 1), 53, 1), 'hex')::uuid
        $$
        """
    )
    # Expiry sweeps and decay scans read these.
    op.create_index(
        "ix_context_item_expiry",
        "context_item",
        ["expires_at"],
        postgresql_where=sa.text("expires_at IS NOT NULL AND status IN ('available', 'verified', 'missing')"),
    )
    op.create_index(
        "ix_context_item_deleted", "context_item", ["deleted_at"], postgresql_where=sa.text("status = 'deleted'")
    )


def downgrade() -> None:
    op.drop_index("ix_context_item_deleted", table_name="context_item")
    op.drop_index("ix_context_item_expiry", table_name="context_item")
    op.execute("DROP FUNCTION IF EXISTS ctxmem_uuid7()")
    op.drop_table("job_run")
    op.drop_column("profile_entry", "decayed_at")
    op.drop_column("event", "run_id")
