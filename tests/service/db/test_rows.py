"""service/db/rows.py: a row becomes a pure value by column name."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from service.db.rows import from_row


@dataclass(frozen=True)
class Pair:
    id: str
    label: str
    weight: float = 1.0


def test_fields_come_from_columns_of_the_same_name_and_extra_columns_are_ignored() -> None:
    assert from_row(Pair, {"id": "a", "label": "x", "weight": 2.0, "other": 3}) == Pair("a", "x", 2.0)


def test_computed_fields_win_over_columns() -> None:
    row = {"id": 7, "label": "x", "weight": 2.0}
    assert from_row(Pair, row, id=str(row["id"]), weight=0.5) == Pair("7", "x", 0.5)


def test_a_missing_column_is_an_error_even_when_the_field_has_a_default() -> None:
    with pytest.raises(KeyError, match="weight"):
        from_row(Pair, {"id": "a", "label": "x"})
