"""item_search's primary key includes tenant_id (a sharded database's unique keys must); the outbox
worker's per-tenant claim reads a tenant's pending changes in id order from an index

Revision ID: 20261201_0014
Revises: 20261201_0013
Create Date: 2026-12-01
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "20261201_0014"
down_revision: str | None = "20261201_0013"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # The outbox worker's upsert names the key as its conflict target (ON CONFLICT (item_id, tenant_id)):
    # on Citus, distributed by tenant_id (docs/citus.md), a unique key must include that column, so the
    # key and its conflict target are the same on one PostgreSQL and on a cluster. item_id stays first:
    # the foreign key's cascade from context_item finds an item's row by item_id alone. Item ids are
    # globally unique, so no existing row can conflict with the wider key.
    op.execute(
        "ALTER TABLE item_search DROP CONSTRAINT pk_item_search, "
        "ADD CONSTRAINT pk_item_search PRIMARY KEY (item_id, tenant_id)"
    )
    # The outbox worker claims tenant by tenant (service/vectors/repository.py): a tenant's oldest pending
    # changes, in id order. Without this index that claim walks the primary key past every other tenant's
    # changes (or sorts all of the tenant's): linear in the outbox, per tenant of a batch.
    op.create_index(
        "ix_vector_outbox_tenant", "vector_outbox", ["tenant_id", "id"], postgresql_where=sa.text("dead_at IS NULL")
    )


def downgrade() -> None:
    op.drop_index("ix_vector_outbox_tenant", table_name="vector_outbox")
    op.execute(
        "ALTER TABLE item_search DROP CONSTRAINT pk_item_search, ADD CONSTRAINT pk_item_search PRIMARY KEY (item_id)"
    )
