"""Arithmetic a rule writes once and runs two ways: on Python numbers, or rendered as SQL for a set-based job.

A rule written with ``+ - * /`` and the helpers below (``least``, ``greatest``, ``when``, ``rounded``,
``at_least``, ``both``) returns a number when every operand is a number, and an ``Sql`` expression when one
of them is (a column of the job's statement): the job's SQL is generated from the rule rather than
translated by hand (CONVENTIONS §16). Numbers render as float8 literals, so the SQL computes in double
precision as Python does; ``rounded`` renders as PostgreSQL's ``round(numeric, n)``.

Nothing here touches a database: an ``Sql`` is a string built from the rule's own data.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Sql:
    """An SQL expression (a column name, or one built by the arithmetic below), never a client's value."""

    text: str

    def __add__(self, other: Num) -> Sql:
        return _op(self, "+", other)

    def __radd__(self, other: Num) -> Sql:
        return _op(other, "+", self)

    def __sub__(self, other: Num) -> Sql:
        return _op(self, "-", other)

    def __rsub__(self, other: Num) -> Sql:
        return _op(other, "-", self)

    def __mul__(self, other: Num) -> Sql:
        return _op(self, "*", other)

    def __rmul__(self, other: Num) -> Sql:
        return _op(other, "*", self)

    def __truediv__(self, other: Num) -> Sql:
        return _op(self, "/", other)

    def __rtruediv__(self, other: Num) -> Sql:
        return _op(other, "/", self)


Num = float | Sql
Cond = bool | Sql


def render(value: Num | Cond) -> str:
    """``value`` as SQL text: an expression as it is, a boolean as TRUE/FALSE, a number as a float8 literal
    (quoted, so that ``inf`` and ``nan`` render too)."""
    if isinstance(value, Sql):
        return value.text
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    return f"CAST('{float(value)!r}' AS float8)"


def literal(name: str) -> str:
    """An SQL string literal of one of the code's own names (a tier, a status, an action, a JSON key), never
    of input: lower-case letters, ``_`` and ``.`` only."""
    if not name or not name.replace("_", "").replace(".", "").isalpha() or not name.islower():
        raise ValueError(f"not a name: {name!r}")
    return f"'{name}'"


def _op(left: Num, op: str, right: Num) -> Sql:
    return Sql(f"({render(left)} {op} {render(right)})")


def _symbolic(*values: Num | Cond) -> bool:
    return any(isinstance(v, Sql) for v in values)


def number(value: Num) -> float:
    """A rule's result on numbers (what it returns when no operand was SQL)."""
    if isinstance(value, Sql):
        raise TypeError(f"an SQL expression where a number was expected: {value.text}")
    return value


def truth(value: Cond) -> bool:
    """A condition's result on numbers."""
    if isinstance(value, Sql):
        raise TypeError(f"an SQL expression where a truth value was expected: {value.text}")
    return value


def least(a: Num, b: Num) -> Num:
    """``min(a, b)``; SQL ``LEAST``."""
    return Sql(f"LEAST({render(a)}, {render(b)})") if _symbolic(a, b) else min(number(a), number(b))


def greatest(a: Num, b: Num) -> Num:
    """``max(a, b)``; SQL ``GREATEST``."""
    return Sql(f"GREATEST({render(a)}, {render(b)})") if _symbolic(a, b) else max(number(a), number(b))


def when(condition: Cond, then: Num, otherwise: Num) -> Num:
    """``then if condition else otherwise``; SQL ``CASE``."""
    if _symbolic(condition, then, otherwise):
        return Sql(f"CASE WHEN {render(condition)} THEN {render(then)} ELSE {render(otherwise)} END")
    return number(then) if truth(condition) else number(otherwise)


def rounded(value: Num, decimals: int) -> Num:
    """``round(value, decimals)``; SQL ``round(value::numeric, decimals)`` (a numeric from there on)."""
    if isinstance(value, Sql):
        return Sql(f"round(CAST({value.text} AS numeric), {int(decimals)})")
    return round(value, decimals)


def at_least(value: Num, floor: Num) -> Cond:
    """``value >= floor``."""
    return Sql(f"({render(value)} >= {render(floor)})") if _symbolic(value, floor) else number(value) >= number(floor)


def both(a: Cond, b: Cond) -> Cond:
    """``a and b``."""
    return Sql(f"({render(a)} AND {render(b)})") if _symbolic(a, b) else truth(a) and truth(b)
