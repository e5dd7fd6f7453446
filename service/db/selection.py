"""Which of a user's items a read takes (``Selection``), and the SQL predicates that the window's reads
(service/windows/repository.py) and recall's (service/recall/repository.py) share: whether an item applies
to a selection's scopes (scoring.scopes.applies), whether it may be shown now, and its row version."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from scoring.scopes import EVERYWHERE, INSTANCE_SCOPES
from service.db.models import active_sql


@dataclass(frozen=True)
class Selection:
    """Which of a user's items a window reads: the user's and global scopes, the given session / task /
    stage / step instances (``None``: that scope's items do not apply) and, when given, only these domains
    (or none). Every window read takes one, and the window cache keys on it."""

    tenant_id: str
    user_id: str
    session_id: str | None = None
    task_id: str | None = None
    stage_id: str | None = None
    step_id: str | None = None
    domains: tuple[str, ...] | None = None

    def args(self) -> tuple[Any, ...]:
        """The parameters $1..$7 of the window's statements (instance ids in INSTANCE_SCOPES order; "" matches
        no item, whose scope_ref is never empty)."""
        return (
            self.tenant_id,
            self.user_id,
            self.session_id or "",
            self.task_id or "",
            self.stage_id or "",
            self.step_id or "",
            list(self.domains) if self.domains else None,
        )


ACTIVE = active_sql()
EVERYWHERE_SQL = f"scope IN ({', '.join(repr(s) for s in EVERYWHERE)})"


def in_instance(first: int, alias: str = "") -> str:
    """scoring.scopes.applies for the instance scopes, the instance ids bound from ``$first`` on (in
    INSTANCE_SCOPES order: session, task, stage, step)."""
    a = f"{alias}." if alias else ""
    return " OR ".join(f"({a}scope = '{s}' AND {a}scope_ref = ${first + i})" for i, s in enumerate(INSTANCE_SCOPES))


def applies(first: int, alias: str = "") -> str:
    """scoring.scopes.applies as SQL: everywhere-scopes, or the item's own instance."""
    a = f"{alias}." if alias else ""
    return f"({a}{EVERYWHERE_SQL} OR {in_instance(first, alias)})"


def in_domains(domains: str, alias: str = "") -> str:
    """The SQL predicate "in the ``domains`` (a text[] parameter; NULL: any) or in none"."""
    a = f"{alias}." if alias else ""
    return f"({domains}::text[] IS NULL OR {a}domain IS NULL OR {a}domain = ANY({domains}::text[]))"


def retrievable(alias: str = "", *, now: str, domains: str) -> str:
    """The SQL predicate "this item may be shown in a window now": in force, unexpired at ``now``, in the
    ``domains`` (a text[] parameter; NULL: any) or in none. What ``retrieved_items`` checks of a row."""
    a = f"{alias}." if alias else ""
    unexpired = f"({a}expires_at IS NULL OR {a}expires_at > {now})"
    return f"{active_sql(alias or None)} AND {unexpired} AND {in_domains(domains, alias)}"


# ``version`` identifies a row version: a hash of the id seeded with ``xmin``, the transaction that wrote
# this version of the row. Any UPDATE writes a new version with a new xmin, whatever columns it sets and
# whether or not it touches ``updated_at``, so (count, bit_xor of version) over a set of rows changes
# whenever a row of the set is inserted, updated or deleted, or enters or leaves the set. The window
# cache keeps the pair computed from the rows it fetched and compares it with the window's version
# statement (service/windows/repository.py); bit_xor needs PostgreSQL 14. A transaction id is reused only
# after 2^32 transactions, and then only an unchanged count and a 64-bit hash collision would hide a change.
def row_version(alias: str = "") -> str:
    """``version`` (the note above) of the rows of the table aliased ``alias``."""
    a = f"{alias}." if alias else ""
    return f"uuid_hash_extended({a}id, {a}xmin::text::bigint)"


ROW_VERSION = row_version()
