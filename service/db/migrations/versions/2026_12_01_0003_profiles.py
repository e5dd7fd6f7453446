"""profiles: profile_entry and observation

Revision ID: 20261201_0003
Revises: 20261201_0002
Create Date: 2026-12-01
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql as pg

revision: str = "20261201_0003"
down_revision: str | None = "20261201_0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TS = sa.DateTime(timezone=True)


def _in(column: str, values: tuple[str, ...]) -> str:
    return f"{column} IN ({', '.join(repr(v) for v in values)})"


def upgrade() -> None:
    op.create_table(
        "profile_entry",
        sa.Column("id", pg.UUID(as_uuid=True), nullable=False),
        sa.Column("tenant_id", sa.Text, nullable=False),
        sa.Column("user_id", sa.Text, nullable=False),
        sa.Column("domain", sa.Text, nullable=True),
        sa.Column("domain_key", sa.Text, nullable=False),
        sa.Column("dimension", sa.Text, nullable=False),
        sa.Column("key", sa.Text, nullable=False),
        sa.Column("value", sa.Text, nullable=False),
        sa.Column("polarity", sa.Text, nullable=False),
        sa.Column("tier", sa.Text, nullable=False),
        sa.Column("status", sa.Text, nullable=False),
        sa.Column("score", sa.Float, nullable=False),
        sa.Column("breakdown", pg.JSONB, nullable=False),
        sa.Column("explicit", sa.Boolean, nullable=False),
        sa.Column("evidence_count", sa.Integer, nullable=False),
        sa.Column("current_session_id", sa.Text, nullable=True),
        sa.Column("confirmed_at", TS, nullable=True),
        sa.Column("first_evidence_at", TS, nullable=False),
        sa.Column("last_evidence_at", TS, nullable=False),
        sa.Column("last_supported_at", TS, nullable=True),
        sa.Column("expires_at", TS, nullable=True),
        sa.Column("created_at", TS, nullable=False),
        sa.Column("updated_at", TS, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_profile_entry"),
        sa.ForeignKeyConstraint(
            ["tenant_id", "user_id"], ["end_user.tenant_id", "end_user.user_id"], name="fk_profile_entry_end_user"
        ),
        sa.CheckConstraint(
            _in("dimension", ("goal", "ability", "preference", "decision_style", "relationship")),
            name="ck_profile_entry_dimension",
        ),
        sa.CheckConstraint(_in("polarity", ("like", "dislike", "neutral")), name="ck_profile_entry_polarity"),
        sa.CheckConstraint(_in("tier", ("current", "candidate", "long_term")), name="ck_profile_entry_tier"),
        sa.CheckConstraint(
            _in("status", ("active", "weakened", "expired", "rejected")), name="ck_profile_entry_status"
        ),
        sa.CheckConstraint("score >= 0 AND score <= 100", name="ck_profile_entry_score"),
        sa.UniqueConstraint(
            "tenant_id",
            "user_id",
            "domain_key",
            "dimension",
            "key",
            "value",
            "polarity",
            name="uq_profile_entry_belief",
        ),
    )
    op.create_index("ix_profile_entry_user_tier", "profile_entry", ["tenant_id", "user_id", "tier", "status"])
    op.create_table(
        "observation",
        sa.Column("id", pg.UUID(as_uuid=True), nullable=False),
        sa.Column("tenant_id", sa.Text, nullable=False),
        sa.Column("user_id", sa.Text, nullable=False),
        sa.Column("entry_id", pg.UUID(as_uuid=True), nullable=False),
        sa.Column("session_id", sa.Text, nullable=False),
        sa.Column("context", sa.Text, nullable=False),
        sa.Column("explicit", sa.Boolean, nullable=False),
        sa.Column("stance", sa.Text, nullable=False),
        sa.Column("confirmation", sa.Boolean, nullable=False),
        sa.Column("observed_at", TS, nullable=False),
        sa.Column("source", sa.Text, nullable=False),
        sa.Column("note", sa.Text, nullable=True),
        sa.Column("weight", sa.Float, nullable=False),
        sa.Column("created_at", TS, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_observation"),
        sa.ForeignKeyConstraint(
            ["entry_id"], ["profile_entry.id"], name="fk_observation_entry_id_profile_entry", ondelete="CASCADE"
        ),
        sa.CheckConstraint("stance IN ('supports', 'contradicts')", name="ck_observation_stance"),
        sa.CheckConstraint("weight > 0 AND weight <= 1", name="ck_observation_weight"),
    )
    op.create_index("ix_observation_entry", "observation", ["tenant_id", "entry_id", "observed_at"])
    op.create_index("ix_observation_user", "observation", ["tenant_id", "user_id", "id"])


def downgrade() -> None:
    op.drop_table("observation")
    op.drop_table("profile_entry")
