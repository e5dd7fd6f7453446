"""item_search's full-text index is per user: a GIN index over (tenant_id, user_id, tsv) (btree_gin)
replaces the one over tsv alone

Revision ID: 20261202_0015
Revises: 20261201_0014
Create Date: 2026-12-02
"""

from collections.abc import Sequence

from alembic import op
from sqlalchemy import text

revision: str = "20261202_0015"
down_revision: str | None = "20261201_0014"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_NEEDS = (
    "migration 20261202_0015 needs PostgreSQL's btree_gin extension (part of the standard contrib modules, "
    "trusted since PostgreSQL 13: any role with CREATE on the database may create it): run "
    "CREATE EXTENSION btree_gin in this database as such a role or a superuser, then start ctxmem again"
)


def upgrade() -> None:
    # The window's lexical ranking asks, for each query term, which of *this user's* texts hold it. A GIN
    # index over tsv alone answers for every user in the database and the rows are filtered by user
    # afterwards — or the planner walks all of the user's rows testing each — so one user's window grew
    # with everybody's memory (bench.window, 1,000 items: BM25 statement 6.5 ms alone in the table, 18 to 21 ms
    # with 99 other users' 99,000 texts beside it). With tenant_id and user_id in the same GIN index the
    # term's posting list is intersected with the user's inside the index (6.7 ms with the 99 others).
    conn = op.get_bind()
    installed = conn.execute(text("SELECT 1 FROM pg_extension WHERE extname = 'btree_gin'")).first()
    if installed is None:
        available = conn.execute(text("SELECT 1 FROM pg_available_extensions WHERE name = 'btree_gin'")).first()
        if available is None:
            raise RuntimeError(_NEEDS + " (this server does not have it: install its contrib package)")
        # A trusted extension is created by any role with CREATE on the database.
        allowed = conn.execute(
            text(
                "SELECT rolsuper OR has_database_privilege(current_user, current_database(), 'CREATE') "
                "FROM pg_roles WHERE rolname = current_user"
            )
        ).scalar()
        if not allowed:
            raise RuntimeError(_NEEDS)
        op.execute("CREATE EXTENSION IF NOT EXISTS btree_gin")
    op.create_index("ix_item_search_user_tsv", "item_search", ["tenant_id", "user_id", "tsv"], postgresql_using="gin")
    op.drop_index("ix_item_search_tsv", table_name="item_search")


def downgrade() -> None:
    # The extension stays: other objects may use it by now, and it holds no data.
    op.create_index("ix_item_search_tsv", "item_search", ["tsv"], postgresql_using="gin")
    op.drop_index("ix_item_search_user_tsv", table_name="item_search")
