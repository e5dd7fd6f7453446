"""Slot resolution inside the write transaction: lock the slots, read their active items, let the pure
resolver in ``scoring.conflicts`` decide, and turn the decisions into row changes and events.

Nothing is deleted: a loser — the old item or the newcomer itself — is stored ``superseded`` with
``superseded_by``, ``valid_to`` and the reason, and every decision is an event naming its rule.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from scoring.conflicts import Contender, check_correction, normalize_value, overridden, reinforced_confidence, resolve
from scoring.items import expired
from scoring.scopes import ScopeContext, Scoped
from service.auth.principal import Permission, Principal
from service.db.models import ACTIVE_STATUSES
from service.db.rows import from_row
from service.errors import CorrectionRefused, ServiceError, ValidationFailed
from service.events import event
from service.items import repository

Slot = tuple[str, str, str]  # key, scope, scope_ref


def slot_of(row: Mapping[str, Any]) -> Slot:
    return (row["key"], row["scope"], row["scope_ref"])


def slot_lock_name(tenant_id: str, user_id: str, slot: Slot) -> str:
    return "\x1f".join(("ctxmem-slot", tenant_id, user_id, *slot))


def _contender(row: Mapping[str, Any]) -> Contender:
    return from_row(Contender, row, id=str(row["id"]), norm=normalize_value(row["value"], row["content"]))


@dataclass
class Plan:
    """What the write must do besides inserting its rows: updates of existing items and extra events,
    each by the write's author about one of the user's items, at the write's time."""

    principal: Principal
    user_id: str
    now: datetime
    updates: dict[uuid.UUID, dict[str, Any]] = field(default_factory=dict)
    events: list[dict[str, Any]] = field(default_factory=list)
    resolutions: dict[int, dict[str, Any]] = field(default_factory=dict)

    def update(self, item_id: uuid.UUID, **values: Any) -> None:
        self.updates.setdefault(item_id, {"id": item_id}).update(values)

    def record(
        self, action: str, item_id: uuid.UUID, *, rule: str, reason: str, before: Any = None, after: Any = None
    ) -> None:
        """Add an event about the item ``item_id`` to the write's events."""
        self.events.append(
            event(
                self.principal,
                user_id=self.user_id,
                action=action,
                entity_type="context_item",
                entity_id=item_id,
                rule=rule,
                reason=reason,
                now=self.now,
                before=before,
                after=after,
            )
        )


@dataclass
class _Current:
    row: dict[str, Any]  # a new row of this write (mutable) or a copy of an existing one
    existing: bool


Holders = dict[Slot, _Current | None]  # each slot's active item as the write goes on; None: retired, free


def _stored(row: dict[str, Any]) -> dict[str, Any]:
    """The resolution of a write that meets nothing: new, active, retiring nothing (a keyless item has no
    slot to compete for, so this is always its outcome)."""
    return {
        "outcome": "new",
        "rule": None,
        "active_id": row["id"],
        "retired_ids": [],
        "overrides": [],
        "detail": "stored" if row["key"] is not None else "stored (no key: no slot to resolve against)",
    }


async def resolve_rows(
    session: AsyncSession,
    *,
    principal: Principal,
    user_id: str,
    rows: list[dict[str, Any]],
    now: datetime,
    batch: bool,
) -> Plan:
    """Resolve ``rows`` (new items, not yet inserted) against their slots, in order. Mutates the rows
    that lose (status, superseded_by…) and returns the changes to existing items.

    The correction targets must exist; the slots the write touches are locked and their holders read;
    then each row in turn retires what it corrects, contests its slot and names what it overrides."""
    plan = Plan(principal=principal, user_id=user_id, now=now)
    keyed = [r for r in rows if r["key"] is not None]
    target_ids = [r["corrects"] for r in rows if r["corrects"] is not None]
    if not keyed and not target_ids:
        plan.resolutions.update((i, _stored(row)) for i, row in enumerate(rows))
        return plan
    tenant_id = principal.tenant_id
    found = await _correction_targets(session, tenant_id=tenant_id, user_id=user_id, rows=rows, batch=batch)
    slots = {slot_of(r) for r in keyed} | {slot_of(t) for t in found if t["key"] is not None}
    await repository.lock_slots(session, slot_names=[slot_lock_name(tenant_id, user_id, s) for s in slots])
    current, by_key = await _slot_holders(session, plan, slots)
    locked = await repository.items_by_ids(session, tenant_id=tenant_id, user_id=user_id, ids=target_ids, lock=True)
    targets = {t["id"]: dict(t) for t in locked}

    for i, row in enumerate(rows):
        plan.resolutions[i] = _stored(row)
        if row["corrects"] is not None:
            _correct(plan, i, row, targets[row["corrects"]], current, batch=batch)
        if row["key"] is None:
            continue
        _contest(plan, i, row, current)
        _name_overrides(plan, i, row, by_key.get(row["key"], []))
        by_key.setdefault(row["key"], []).append(row)
    return plan


def _refusal(error: type[ServiceError], message: str, i: int, *, batch: bool) -> ServiceError:
    """The error for row ``i``: in a batch it names the item by its index."""
    return error(f"items[{i}]: {message}", index=i) if batch else error(message)


async def _correction_targets(
    session: AsyncSession, *, tenant_id: str, user_id: str, rows: Sequence[Mapping[str, Any]], batch: bool
) -> list[Mapping[str, Any]]:
    """The items the rows correct, each of which must exist for this user. Checked before the slots are
    locked, so that a missing target is refused without waiting; their state is re-read under the locks."""
    target_ids = [r["corrects"] for r in rows if r["corrects"] is not None]
    found = {
        t["id"]: t
        for t in await repository.items_by_ids(
            session, tenant_id=tenant_id, user_id=user_id, ids=target_ids, lock=False
        )
    }
    for i, r in enumerate(rows):
        if r["corrects"] is not None and r["corrects"] not in found:
            raise _refusal(ValidationFailed, f"corrects: no item {r['corrects']} for this user", i, batch=batch)
    return list(found.values())


async def _slot_holders(
    session: AsyncSession, plan: Plan, slots: set[Slot]
) -> tuple[Holders, dict[str, list[dict[str, Any]]]]:
    """Who holds each slot, read under the slot locks, and every active item of the slots' keys (any scope
    instance: what scope overrides are named against). An item past its lifetime that the expire job has
    not swept yet holds no slot: it is expired here, by the rule ``expiry``."""
    keys = sorted({s[0] for s in slots})
    actives = await repository.active_for_keys(
        session, tenant_id=plan.principal.tenant_id, user_id=plan.user_id, keys=keys, lock=True
    )
    current: Holders = {}
    by_key: dict[str, list[dict[str, Any]]] = {}
    for a in actives:
        row = dict(a)
        if expired(row["expires_at"], now=plan.now) and slot_of(row) in slots:
            plan.update(row["id"], status="expired", status_reason="expired", updated_at=plan.now)
            plan.record("item.expired", row["id"], rule="expiry", reason="past expires_at")
            continue
        current[slot_of(row)] = _Current(row, existing=True)
        by_key.setdefault(row["key"], []).append(row)
    return current, by_key


def _correct(plan: Plan, i: int, row: dict[str, Any], target: dict[str, Any], current: Holders, *, batch: bool) -> None:
    """Row ``i`` retires the item it corrects at once, newer or not, if the target is still active and
    ``scoring.conflicts.check_correction`` allows it (system authority, hard constraints); its slot is free."""
    if target["status"] not in ACTIVE_STATUSES:
        by = f" (by {target['superseded_by']})" if target["superseded_by"] else ""
        message = f"corrects: item {target['id']} is already {target['status']}{by}"
        raise _refusal(CorrectionRefused, message, i, batch=batch)
    check = check_correction(
        target_authority=target["authority"],
        target_hard=target["hard"],
        newcomer_authority=row["authority"],
        is_admin=plan.principal.can(Permission.WRITE_SYSTEM_AUTHORITY),
    )
    if not check.allowed:
        raise _refusal(CorrectionRefused, f"corrects: {check.reason}", i, batch=batch)
    _retire_existing(plan, target, row["id"], "correction", f"corrected by {row['id']} (user correction)")
    target["status"] = "superseded"
    target["superseded_by"] = row["id"]
    if target["key"] is not None and (cur := current.get(slot_of(target))) and cur.row["id"] == target["id"]:
        current[slot_of(target)] = None
    res = plan.resolutions[i]
    res.update(outcome="replaced", rule="correction", retired_ids=[target["id"]], detail="user correction")


def _contest(plan: Plan, i: int, row: dict[str, Any], current: Holders) -> None:
    """Row ``i`` against the holder of its slot (``scoring.conflicts.resolve``): it takes an empty slot or
    replaces the holder, else it is retired at once, rejected or reinforcing the holder."""
    res = plan.resolutions[i]
    slot = slot_of(row)
    cur = current.get(slot)
    if cur is not None and row["corrects"] is not None and cur.row["id"] == row["corrects"]:
        cur = None  # already retired by the correction
    decision = resolve(_contender(cur.row) if cur else None, _contender(row))
    if decision.outcome == "new":
        current[slot] = _Current(row, existing=False)
        return
    assert cur is not None
    if decision.outcome == "replaced":
        _retire(plan, cur, row["id"], decision.rule or "", decision.detail)
        current[slot] = _Current(row, existing=False)
        res.update(outcome="replaced", rule=decision.rule, retired_ids=[*res["retired_ids"], cur.row["id"]])
        res["detail"] = decision.detail
        return
    if decision.outcome == "rejected":
        reason = f"superseded by {cur.row['id']}: {decision.detail}"
    else:
        _reinforce(plan, cur, row)
        reason = f"reinforcement of {cur.row['id']}: same value"
    _retire_new(row, cur.row["id"], reason, plan.now)
    res.update(outcome=decision.outcome, rule=decision.rule, active_id=cur.row["id"], detail=decision.detail)
    res["retired_ids"] = [*res["retired_ids"], row["id"]]


def _reinforce(plan: Plan, cur: _Current, row: Mapping[str, Any]) -> None:
    """The holder gains one supporting write and the confidence ``scoring.conflicts.reinforced_confidence``
    gives it; ``row`` is kept as evidence (its caller retires it)."""
    before = {"support_count": cur.row["support_count"], "confidence": cur.row["confidence"]}
    cur.row["support_count"] += 1
    cur.row["confidence"] = reinforced_confidence(cur.row["confidence"], row["confidence"])
    after = {"support_count": cur.row["support_count"], "confidence": cur.row["confidence"]}
    if cur.existing:
        plan.update(cur.row["id"], updated_at=plan.now, **after)
    reason = f"reinforced by {row['id']}"
    plan.record("item.reinforced", cur.row["id"], rule="reinforcement", reason=reason, before=before, after=after)


def _name_overrides(plan: Plan, i: int, row: Mapping[str, Any], same_key: Sequence[Mapping[str, Any]]) -> None:
    """An active row names the active items of its key that it hides inside its own instance
    (``scoring.conflicts.overridden``); they are not retired: they still apply everywhere else."""
    if row["status"] not in ACTIVE_STATUSES:
        return
    others = [o for o in same_key if o["status"] in ACTIVE_STATUSES]
    hidden = {s.id for s in overridden(_scoped(row), from_row(ScopeContext, row), [_scoped(o) for o in others])}
    ids = [o["id"] for o in others if str(o["id"]) in hidden]
    if not ids:
        return
    plan.resolutions[i]["overrides"] = ids
    reason = f"overrides broader-scope items inside {row['scope']} {row['scope_ref']}"
    plan.record(
        "item.scope_override",
        row["id"],
        rule="scope-override",
        reason=reason,
        after={"overrides": [str(o) for o in ids]},
    )


def _scoped(row: Mapping[str, Any]) -> Scoped:
    return from_row(Scoped, row, id=str(row["id"]))


def _retire_new(row: dict[str, Any], winner_id: uuid.UUID, reason: str, now: datetime) -> None:
    row.update(status="superseded", superseded_by=winner_id, valid_to=now, status_reason=reason)


def _retire(plan: Plan, cur: _Current, winner_id: uuid.UUID, rule: str, detail: str) -> None:
    if cur.existing:
        _retire_existing(plan, cur.row, winner_id, rule, detail)
    else:
        _retire_new(cur.row, winner_id, f"superseded by {winner_id}: {detail}", plan.now)
    cur.row["status"] = "superseded"


def _retire_existing(plan: Plan, row: Mapping[str, Any], winner_id: uuid.UUID, rule: str, detail: str) -> None:
    reason = f"superseded by {winner_id}: {detail}"
    plan.update(
        row["id"],
        status="superseded",
        superseded_by=winner_id,
        valid_to=plan.now,
        status_reason=reason,
        updated_at=plan.now,
    )
    before, after = {"status": row["status"]}, {"status": "superseded", "superseded_by": str(winner_id)}
    plan.record("item.superseded", row["id"], rule=rule, reason=reason, before=before, after=after)
