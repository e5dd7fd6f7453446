"""Which items apply where (docs/design.md §3.1, §3.2): scope instances and narrower-scope overrides."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

from scoring.items import SCOPE_ID_FIELD

# Scopes that apply in every context; each other scope applies only inside its own instance, named by the
# id field SCOPE_ID_FIELD gives it (in this order: session, task, stage, step). The window's SQL is built
# from these two (service/windows/repository.py), so the rule is written once.
EVERYWHERE: Final = ("user", "global")
INSTANCE_SCOPES: Final = tuple(SCOPE_ID_FIELD)

# Narrow to broad. A narrower item with the same key overrides a broader one, inside its own instance only.
SCOPE_ORDER: dict[str, int] = {"step": 0, "stage": 1, "task": 2, "session": 3, "user": 4, "global": 5}


def scope_ref(scope: str, ids: dict[str, str | None]) -> str:
    """The instance a scope refers to: the session/task/stage/step id it needs, '' for user/global."""
    field = SCOPE_ID_FIELD.get(scope)
    if field is None:
        return ""
    ref = ids.get(field)
    if not ref:
        raise ValueError(f"scope {scope!r} needs {field}")
    return ref


@dataclass(frozen=True)
class ScopeContext:
    """Where a read happens: the session, task, stage and step the agent is in (each optional)."""

    session_id: str | None = None
    task_id: str | None = None
    stage_id: str | None = None
    step_id: str | None = None

    def ref_for(self, scope: str) -> str | None:
        field = SCOPE_ID_FIELD.get(scope)
        return None if field is None else getattr(self, field)


@dataclass(frozen=True)
class Scoped:
    id: str
    key: str | None
    scope: str
    scope_ref: str


def applies(item: Scoped, ctx: ScopeContext) -> bool:
    """User and global items apply everywhere; the others only inside their own instance."""
    if item.scope in EVERYWHERE:
        return True
    return ctx.ref_for(item.scope) == item.scope_ref


def effective(items: Iterable[Scoped], ctx: ScopeContext) -> dict[str, list[str]]:
    """The items that apply in ``ctx``, each with the ids it overrides: for every key, the narrowest
    applicable scope wins and hides the broader ones (ties: the later id). Keyless items never override."""
    applicable = [i for i in items if applies(i, ctx)]
    result: dict[str, list[str]] = {}
    by_key: dict[str, list[Scoped]] = {}
    for item in applicable:
        if item.key is None:
            result[item.id] = []
        else:
            by_key.setdefault(item.key, []).append(item)
    for group in by_key.values():
        group.sort(key=lambda i: (SCOPE_ORDER[i.scope], _desc(i.id)))
        winner = group[0]
        result[winner.id] = sorted(i.id for i in group[1:])
    return result


def _desc(item_id: str) -> tuple[int, ...]:
    return tuple(-ord(c) for c in item_id)
