"""scoring/expr.py: a rule written once gives the Python number on numbers and the SQL on columns."""

from __future__ import annotations

import pytest

from scoring.expr import Sql, at_least, both, greatest, least, literal, number, render, rounded, when


def rule(a: float | Sql, b: float | Sql) -> float | Sql:
    return rounded(when(at_least(a, b), least(a * 2, 7.0), greatest(b - a, 1.5) / 3), 2)


def test_on_numbers_a_rule_is_plain_python() -> None:
    assert rule(4.0, 1.0) == 7.0
    assert rule(1.0, 2.0) == 0.5
    assert rule(2.0, 1.0) == 4.0
    assert both(True, at_least(1.0, 2.0)) is False


def test_on_a_column_it_renders_the_same_operations_in_sql() -> None:
    got = render(rule(Sql("a"), 1.0))
    one = "CAST('1.0' AS float8)"
    assert got == (
        f"round(CAST(CASE WHEN (a >= {one}) THEN LEAST((a * CAST('2.0' AS float8)), CAST('7.0' AS float8)) "
        f"ELSE (GREATEST(({one} - a), CAST('1.5' AS float8)) / CAST('3.0' AS float8)) END AS numeric), 2)"
    )
    assert render(both(Sql("x"), True)) == "(x AND TRUE)"
    assert render(float("inf")) == "CAST('inf' AS float8)"


def test_names_only_become_literals() -> None:
    assert literal("long_term") == "'long_term'"
    assert literal("item.expired") == "'item.expired'"
    for bad in ("", "x'; DROP TABLE event; --", "Active", "a b"):
        with pytest.raises(ValueError, match="not a name"):
            literal(bad)


def test_a_column_is_not_a_number() -> None:
    with pytest.raises(TypeError, match="where a number was expected"):
        number(least(Sql("a"), 1.0))
