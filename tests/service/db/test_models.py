"""service/db/models.py: the table conventions every model follows (tenant first, singular snake_case
names, timezone-aware ``*_at`` timestamps, constraint names from one convention). (Models vs the migrated
schema: tests/db/test_migrations.py; check constraints vs the schemas' Literals: tests/db/test_enums.py.)"""

from __future__ import annotations

import re

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql as pg

from service.db import models
from service.db.models import NAMING_CONVENTION, metadata

TABLES = list(metadata.sorted_tables)
# Known exceptions, each for a reason: a job run may cover every tenant (tenant_id NULL), and its scheduler
# tick and "as of" instant are points in the simulated schedule, and an item's valid_to the end of what
# it describes: none of them is when a row changed.
CROSS_TENANT = {"job_run"}
TIMESTAMPS_NOT_AT = {("job_run", "tick"), ("job_run", "as_of"), ("context_item", "valid_to")}


def test_every_table_is_singular_snake_case_and_carries_its_tenant() -> None:
    assert TABLES
    for table in TABLES:
        assert re.fullmatch(r"[a-z]+(_[a-z]+)*", table.name), table.name
        assert not table.name.endswith("s") or table.name.endswith("ss"), f"{table.name} looks plural"
        if table.name != "tenant":
            assert "tenant_id" in table.c, f"{table.name} has no tenant_id"
            assert table.c.tenant_id.nullable == (table.name in CROSS_TENANT), table.name


def test_timestamps_are_timezone_aware_and_named_at() -> None:
    for table in TABLES:
        for column in table.columns:
            if isinstance(column.type, sa.DateTime):
                assert column.type.timezone, f"{table.name}.{column.name} is a naive timestamp"
                named_at = column.name.endswith("_at") or (table.name, column.name) in TIMESTAMPS_NOT_AT
                assert named_at, f"{table.name}.{column.name} should be named *_at"


def test_constraint_names_follow_the_convention() -> None:
    assert metadata.naming_convention is NAMING_CONVENTION or metadata.naming_convention == NAMING_CONVENTION
    for table in TABLES:
        assert table.primary_key.name == f"pk_{table.name}"
        for fk in table.foreign_key_constraints:
            assert fk.name is not None and fk.name.startswith(f"fk_{table.name}_"), fk.name
        for ck in (c for c in table.constraints if isinstance(c, sa.CheckConstraint)):
            assert ck.name is not None and str(ck.name).startswith(f"ck_{table.name}_"), ck.name
        for ix in table.indexes:
            assert ix.name is not None and (ix.name.startswith(("ix_", "uq_")) or table.name in ix.name), ix.name


def test_user_owned_tables_carry_the_user_id_and_ids_are_uuids_or_keys() -> None:
    for name in ("context_item", "profile_entry", "observation", "end_user"):
        table = metadata.tables[name]
        assert "user_id" in table.c and not table.c.user_id.nullable
    for table in TABLES:
        for column in table.columns:
            if column.name.endswith("_id") and isinstance(column.type, pg.UUID):
                assert column.type.as_uuid


def test_nullable_json_columns_store_python_none_as_sql_null() -> None:
    assert models.JSON.none_as_null
    for table in TABLES:
        for column in table.columns:
            if isinstance(column.type, pg.JSONB) and column.nullable:
                assert column.type.none_as_null, f"{table.name}.{column.name}"


def test_check_constraints_take_their_values_from_the_schemas() -> None:
    from typing import get_args

    from schemas import items as s_items

    assert get_args(s_items.ItemType) == models.ITEM_TYPES
    assert get_args(s_items.ItemStatus) == models.ITEM_STATUSES
