"""The schema's enums (pydantic Literals) and the database's check constraints name the same values."""

from __future__ import annotations

from typing import get_args

from schemas import items as s_items
from schemas import profiles as s_profiles
from service.db import models


def test_enums_agree() -> None:
    assert get_args(s_items.ItemType) == models.ITEM_TYPES
    assert get_args(s_items.Source) == models.SOURCES
    assert get_args(s_items.Authority) == models.AUTHORITIES
    assert get_args(s_items.Scope) == models.SCOPES
    assert get_args(s_items.Kind) == models.KINDS
    assert get_args(s_items.ItemStatus) == models.ITEM_STATUSES
    assert get_args(s_profiles.Dimension) == models.DIMENSIONS
    assert get_args(s_profiles.Polarity) == models.POLARITIES
    assert get_args(s_profiles.Tier) == models.TIERS
    assert get_args(s_profiles.EntryStatus) == models.ENTRY_STATUSES
