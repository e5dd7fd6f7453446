"""lexical index: item_search (tsvector + GIN) maintained by the outbox worker

Revision ID: 20261201_0007
Revises: 20261201_0006
Create Date: 2026-12-01
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql as pg

revision: str = "20261201_0007"
down_revision: str | None = "20261201_0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # A side table rather than a column of context_item: filled by the outbox worker after the write
    # (a generated column cost ingest 3x), and updating it leaves context_item's rows — and so the
    # window cache's version of them — untouched.
    op.create_table(
        "item_search",
        sa.Column("item_id", pg.UUID(as_uuid=True), nullable=False),
        sa.Column("tenant_id", sa.Text, nullable=False),
        sa.Column("user_id", sa.Text, nullable=False),
        sa.Column("tsv", pg.TSVECTOR, nullable=False),
        sa.PrimaryKeyConstraint("item_id", name="pk_item_search"),
        sa.ForeignKeyConstraint(
            ["item_id"], ["context_item.id"], name="fk_item_search_item_id_context_item", ondelete="CASCADE"
        ),
    )
    op.create_index("ix_item_search_user", "item_search", ["tenant_id", "user_id"])
    op.create_index("ix_item_search_tsv", "item_search", ["tsv"], postgresql_using="gin")
    # The lexical ranking also reads the user's changes the worker has not applied yet.
    op.create_index("ix_vector_outbox_user", "vector_outbox", ["tenant_id", "user_id"])
    # Everything active is indexed by the worker (the rows queued by 0006 cover what existed then).
    op.execute(
        """
        INSERT INTO item_search (item_id, tenant_id, user_id, tsv)
        SELECT id, tenant_id, user_id, ctxmem_tsv(content) FROM context_item
        WHERE status IN ('available', 'verified', 'missing')
        """
    )


def downgrade() -> None:
    op.drop_index("ix_vector_outbox_user", table_name="vector_outbox")
    op.drop_table("item_search")
