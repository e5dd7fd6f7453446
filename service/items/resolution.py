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

from scoring.conflicts import Contender, check_correction, normalize_value, reinforced_confidence, resolve
from scoring.scopes import SCOPE_ORDER, ScopeContext, Scoped, applies
from service.auth.service import Permission, Principal
from service.db.models import ACTIVE_STATUSES
from service.errors import CorrectionRefused, ValidationFailed
from service.events import event
from service.items import repository

Slot = tuple[str, str, str]  # key, scope, scope_ref


def slot_of(row: Mapping[str, Any]) -> Slot:
    return (row["key"], row["scope"], row["scope_ref"])


def slot_lock_name(tenant_id: str, user_id: str, slot: Slot) -> str:
    return "\x1f".join(("ctxmem-slot", tenant_id, user_id, *slot))


def _contender(row: Mapping[str, Any]) -> Contender:
    return Contender(
        id=str(row["id"]),
        authority=row["authority"],
        observed_at=row["observed_at"],
        confidence=row["confidence"],
        norm=normalize_value(row["value"], row["content"]),
        hard=row["hard"],
    )


@dataclass
class Plan:
    """What the write must do besides inserting its rows: updates of existing items and extra events."""

    updates: dict[uuid.UUID, dict[str, Any]] = field(default_factory=dict)
    events: list[dict[str, Any]] = field(default_factory=list)
    resolutions: dict[int, dict[str, Any]] = field(default_factory=dict)

    def update(self, item_id: uuid.UUID, **values: Any) -> None:
        self.updates.setdefault(item_id, {"id": item_id}).update(values)


@dataclass
class _Current:
    row: dict[str, Any]  # a new row of this write (mutable) or a copy of an existing one
    existing: bool


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
    that lose (status, superseded_by…) and returns the changes to existing items."""
    plan = Plan()
    keyed = [r for r in rows if r["key"] is not None]
    correcting = [(i, r) for i, r in enumerate(rows) if r["corrects"] is not None]
    if not keyed and not correcting:
        plan.resolutions.update((i, _stored(row)) for i, row in enumerate(rows))
        return plan
    tenant_id = principal.tenant_id

    def where(i: int) -> str:
        return f"items[{i}]: " if batch else ""

    def index(i: int) -> dict[str, int]:
        return {"index": i} if batch else {}

    # Correction targets: checked before locking (existence), re-read under the lock (state).
    target_ids = [r["corrects"] for _, r in correcting]
    found = {t["id"]: t for t in await repository.items_by_ids(session, tenant_id, user_id, target_ids, lock=False)}
    for i, r in correcting:
        if r["corrects"] not in found:
            raise ValidationFailed(f"{where(i)}corrects: no item {r['corrects']} for this user", **index(i))
    slots = {slot_of(r) for r in keyed} | {slot_of(t) for t in found.values() if t["key"] is not None}
    await repository.lock_slots(session, [slot_lock_name(tenant_id, user_id, s) for s in slots])

    keys = sorted({s[0] for s in slots})
    actives = await repository.active_for_keys(session, tenant_id, user_id, keys, lock=True)
    current: dict[Slot, _Current | None] = {}
    by_key: dict[str, list[dict[str, Any]]] = {}
    for a in actives:
        row = dict(a)
        if row["expires_at"] is not None and row["expires_at"] <= now and slot_of(row) in slots:
            # Past its lifetime but not yet swept by the expire job: it no longer holds the slot.
            plan.update(row["id"], status="expired", status_reason="expired", updated_at=now)
            plan.events.append(
                event(
                    principal,
                    user_id=user_id,
                    action="item.expired",
                    entity_type="context_item",
                    entity_id=row["id"],
                    rule="expiry",
                    reason="past expires_at",
                    now=now,
                )
            )
            continue
        current[slot_of(row)] = _Current(row, existing=True)
        by_key.setdefault(row["key"], []).append(row)
    targets = {
        t["id"]: dict(t) for t in await repository.items_by_ids(session, tenant_id, user_id, target_ids, lock=True)
    }

    for i, row in enumerate(rows):
        res = plan.resolutions[i] = _stored(row)
        if row["corrects"] is not None:
            target = targets[row["corrects"]]
            if target["status"] not in ACTIVE_STATUSES:
                raise CorrectionRefused(
                    f"{where(i)}corrects: item {target['id']} is already {target['status']}"
                    + (f" (by {target['superseded_by']})" if target["superseded_by"] else ""),
                    **index(i),
                )
            check = check_correction(
                target_authority=target["authority"],
                target_hard=target["hard"],
                newcomer_authority=row["authority"],
                is_admin=principal.can(Permission.WRITE_SYSTEM_AUTHORITY),
            )
            if not check.allowed:
                raise CorrectionRefused(f"{where(i)}corrects: {check.reason}", **index(i))
            detail = f"corrected by {row['id']} (user correction)"
            _retire_existing(plan, principal, user_id, target, row["id"], "correction", detail, now)
            target["status"] = "superseded"
            target["superseded_by"] = row["id"]
            if target["key"] is not None and (cur := current.get(slot_of(target))) and cur.row["id"] == target["id"]:
                current[slot_of(target)] = None
            res.update(outcome="replaced", rule="correction", retired_ids=[target["id"]], detail="user correction")
        if row["key"] is None:
            continue

        slot = slot_of(row)
        cur = current.get(slot)
        if cur is not None and row["corrects"] is not None and cur.row["id"] == row["corrects"]:
            cur = None  # already retired above
        decision = resolve(_contender(cur.row) if cur else None, _contender(row))
        if decision.outcome == "new":
            current[slot] = _Current(row, existing=False)
        elif decision.outcome == "replaced":
            assert cur is not None
            _retire(plan, principal, user_id, cur, row["id"], decision.rule or "", decision.detail, now)
            current[slot] = _Current(row, existing=False)
            res.update(outcome="replaced", rule=decision.rule, retired_ids=[*res["retired_ids"], cur.row["id"]])
            res["detail"] = decision.detail
        elif decision.outcome == "rejected":
            assert cur is not None
            _retire_new(row, cur.row["id"], f"superseded by {cur.row['id']}: {decision.detail}", now)
            res.update(outcome="rejected", rule=decision.rule, active_id=cur.row["id"], detail=decision.detail)
            res["retired_ids"] = [*res["retired_ids"], row["id"]]
        else:  # reinforced
            assert cur is not None
            before = {"support_count": cur.row["support_count"], "confidence": cur.row["confidence"]}
            cur.row["support_count"] += 1
            cur.row["confidence"] = reinforced_confidence(cur.row["confidence"], row["confidence"])
            after = {"support_count": cur.row["support_count"], "confidence": cur.row["confidence"]}
            if cur.existing:
                plan.update(cur.row["id"], updated_at=now, **after)
            plan.events.append(
                event(
                    principal,
                    user_id=user_id,
                    action="item.reinforced",
                    entity_type="context_item",
                    entity_id=cur.row["id"],
                    rule="reinforcement",
                    reason=f"reinforced by {row['id']}",
                    now=now,
                    before=before,
                    after=after,
                )
            )
            _retire_new(row, cur.row["id"], f"reinforcement of {cur.row['id']}: same value", now)
            res.update(outcome="reinforced", rule="reinforcement", active_id=cur.row["id"], detail=decision.detail)
            res["retired_ids"] = [*res["retired_ids"], row["id"]]

        if row["status"] in ACTIVE_STATUSES and row["scope"] not in ("user", "global"):
            overridden = _overridden(row, by_key.get(row["key"], []))
            if overridden:
                res["overrides"] = overridden
                plan.events.append(
                    event(
                        principal,
                        user_id=user_id,
                        action="item.scope_override",
                        entity_type="context_item",
                        entity_id=row["id"],
                        rule="scope-override",
                        reason=f"overrides broader-scope items inside {row['scope']} {row['scope_ref']}",
                        now=now,
                        after={"overrides": [str(o) for o in overridden]},
                    )
                )
        by_key.setdefault(row["key"], []).append(row)
    return plan


def _overridden(row: Mapping[str, Any], same_key: Sequence[Mapping[str, Any]]) -> list[uuid.UUID]:
    """Active broader-scope items with the same key that apply where ``row`` applies."""
    ctx = ScopeContext(
        session_id=row["session_id"], task_id=row["task_id"], stage_id=row["stage_id"], step_id=row["step_id"]
    )
    out = []
    for other in same_key:
        if other["status"] not in ACTIVE_STATUSES or other["id"] == row["id"]:
            continue
        if SCOPE_ORDER[other["scope"]] <= SCOPE_ORDER[row["scope"]]:
            continue
        if applies(Scoped(str(other["id"]), other["key"], other["scope"], other["scope_ref"]), ctx):
            out.append(other["id"])
    return out


def _retire_new(row: dict[str, Any], winner_id: uuid.UUID, reason: str, now: datetime) -> None:
    row.update(status="superseded", superseded_by=winner_id, valid_to=now, status_reason=reason)


def _retire(
    plan: Plan,
    principal: Principal,
    user_id: str,
    cur: _Current,
    winner_id: uuid.UUID,
    rule: str,
    detail: str,
    now: datetime,
) -> None:
    if cur.existing:
        _retire_existing(plan, principal, user_id, cur.row, winner_id, rule, detail, now)
    else:
        _retire_new(cur.row, winner_id, f"superseded by {winner_id}: {detail}", now)
    cur.row["status"] = "superseded"


def _retire_existing(
    plan: Plan,
    principal: Principal,
    user_id: str,
    row: Mapping[str, Any],
    winner_id: uuid.UUID,
    rule: str,
    detail: str,
    now: datetime,
) -> None:
    reason = f"superseded by {winner_id}: {detail}"
    plan.update(
        row["id"],
        status="superseded",
        superseded_by=winner_id,
        valid_to=now,
        status_reason=reason,
        updated_at=now,
    )
    plan.events.append(
        event(
            principal,
            user_id=user_id,
            action="item.superseded",
            entity_type="context_item",
            entity_id=row["id"],
            rule=rule,
            reason=reason,
            now=now,
            before={"status": row["status"]},
            after={"status": "superseded", "superseded_by": str(winner_id)},
        )
    )
