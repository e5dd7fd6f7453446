"""The database's check constraints allow exactly the values of the schemas' enums (pydantic Literals), which
models.py reads rather than repeats; tests/db/test_migrations.py holds the migrated schema to the models."""

from __future__ import annotations

from typing import Any, get_args

import pytest
import sqlalchemy as sa

from schemas import items as s_items
from schemas import profiles as s_profiles
from service.db import models


def _check(table: sa.Table, column: str) -> str:
    name = f"ck_{table.name}_{column}"
    (constraint,) = [c for c in table.constraints if isinstance(c, sa.CheckConstraint) and c.name == name]
    return str(constraint.sqltext)


@pytest.mark.parametrize(
    ("table", "column", "literal"),
    [
        (models.ContextItem.__table__, "type", s_items.ItemType),
        (models.ContextItem.__table__, "source", s_items.Source),
        (models.ContextItem.__table__, "authority", s_items.Authority),
        (models.ContextItem.__table__, "scope", s_items.Scope),
        (models.ContextItem.__table__, "kind", s_items.Kind),
        (models.ContextItem.__table__, "status", s_items.ItemStatus),
        (models.ProfileEntry.__table__, "dimension", s_profiles.Dimension),
        (models.ProfileEntry.__table__, "polarity", s_profiles.Polarity),
        (models.ProfileEntry.__table__, "tier", s_profiles.Tier),
        (models.ProfileEntry.__table__, "status", s_profiles.EntryStatus),
    ],
)
def test_check_constraints_allow_the_schema_values(table: sa.Table, column: str, literal: Any) -> None:
    values = ", ".join(repr(v) for v in get_args(literal))
    assert _check(table, column) == f"{column} IN ({values})"
