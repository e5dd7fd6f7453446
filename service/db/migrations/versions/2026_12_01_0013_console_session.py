"""console: console_session, the operator console's server-side sessions

Revision ID: 20261201_0013
Revises: 20261201_0012
Create Date: 2026-12-01
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql as pg

revision: str = "20261201_0013"
down_revision: str | None = "20261201_0012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    # Keyed by the API key that signed in (and its tenant), never by an end user: export and erasure of a
    # user do not see it. Deleting the key or the tenant deletes its sessions.
    op.create_table(
        "console_session",
        sa.Column("id", pg.UUID(as_uuid=True), nullable=False),
        sa.Column("tenant_id", sa.Text, nullable=False),
        sa.Column("key_id", pg.UUID(as_uuid=True), nullable=False),
        sa.Column("token_hash", sa.Text, nullable=False),
        sa.Column("csrf_token", sa.Text, nullable=False),
        sa.Column("flash", sa.Text, nullable=True),
        sa.Column("created_at", TS, nullable=False),
        sa.Column("last_seen_at", TS, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_console_session"),
        sa.ForeignKeyConstraint(
            ["tenant_id"], ["tenant.id"], name="fk_console_session_tenant_id_tenant", ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["key_id"], ["api_key.id"], name="fk_console_session_key_id_api_key", ondelete="CASCADE"
        ),
        sa.UniqueConstraint("token_hash", name="uq_console_session_token_hash"),
    )
    op.create_index("ix_console_session_key_id", "console_session", ["key_id"])


def downgrade() -> None:
    op.drop_table("console_session")
