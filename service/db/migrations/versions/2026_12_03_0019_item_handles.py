"""context items: an index over the end of each id, so that an item is found by its handle (the id's last 8
hex digits, as a window shows them before a shortened item) without reading the user's items

Revision ID: 20261203_0019
Revises: 20261203_0018
Create Date: 2026-12-03
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "20261203_0019"
down_revision: str | None = "20261203_0018"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# As service.db.models builds it (HANDLE_INDEX; tests/db/test_migrations.py holds the two equal).
HANDLE = "right(id::text, 8)"


def upgrade() -> None:
    # GET …/items/{handle} and a search for a handle (service/items/repository.py, find_by_handle) probe
    # (tenant, user, the id's last 8 characters): one user of 100,000 items read them all before.
    op.create_index("ix_context_item_handle", "context_item", ["tenant_id", "user_id", sa.text(HANDLE)])


def downgrade() -> None:
    op.drop_index("ix_context_item_handle", table_name="context_item")
