"""Slot resolution (service/items/resolution.py) against real rows: existing items are written through the
API, then resolve_rows plans a write in a transaction of its own. Its plan — updates of existing items,
events, one resolution per row — and the new rows it retires in place are checked; nothing is inserted."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest

from scoring.items import authority_for_source, default_confidence
from service.auth.principal import Principal
from service.db.engine import Database, session_scope
from service.errors import ValidationFailed
from service.ids import uuid7
from service.items.resolution import Plan, resolve_rows, slot_lock_name, slot_of
from tests.conftest import TenantKeys

USER = "r"


def new_row(tenant_id: str, now: datetime, **fields: Any) -> dict[str, Any]:
    """A new item as create_items builds it (service/items/service.py), with a user-scoped default."""
    source = fields.pop("source", "model")
    row: dict[str, Any] = {
        "id": uuid7(), "tenant_id": tenant_id, "user_id": USER, "type": "fact", "content": "x", "key": None,
        "value": None, "domain": None, "source": source, "authority": authority_for_source(source),
        "scope": "user", "session_id": None, "task_id": None, "stage_id": None, "step_id": None, "hard": False,
        "kind": "fact", "status": "available", "status_reason": None, "confidence": default_confidence(source),
        "observed_at": now, "created_at": now, "updated_at": now, "expires_at": None, "valid_to": None,
        "deleted_at": None, "superseded_by": None, "scope_ref": "", "support_count": 1, "corrects": None,
    }  # fmt: skip
    row.update(fields)
    return row


async def existing(client: httpx.AsyncClient, tenant: TenantKeys, **item: Any) -> uuid.UUID:
    r = await client.post(f"/v1/users/{USER}/items", json={"type": "fact", **item}, headers=tenant.agent)
    assert r.status_code == 201, r.text
    return uuid.UUID(r.json()["id"])


async def plan_for(
    db: Database, tenant: TenantKeys, rows: list[dict[str, Any]], *, now: datetime, batch: bool = False
) -> Plan:
    principal = Principal(tenant_id=tenant.tenant_id, key_id=uuid.uuid4(), role="agent")
    async with session_scope(db) as session:
        return await resolve_rows(session, principal=principal, user_id=USER, rows=rows, now=now, batch=batch)


def actions(plan: Plan) -> list[tuple[str, str | None, Any]]:
    return [(e["action"], e["rule"], uuid.UUID(str(e["entity_id"]))) for e in plan.events]


NOW = datetime.now(UTC)


def test_slot_and_its_lock_name() -> None:
    row = {"key": "budget", "scope": "task", "scope_ref": "t1"}
    assert slot_of(row) == ("budget", "task", "t1")
    assert slot_lock_name("t", "u", slot_of(row)) == "ctxmem-slot\x1ft\x1fu\x1fbudget\x1ftask\x1ft1"
    # the separator keeps ("a", "b c") and ("a b", "c") apart
    assert slot_lock_name("a", "b\x20c", ("k", "user", "")) != slot_lock_name("a\x20b", "c", ("k", "user", ""))


async def test_keyless_rows_are_stored_without_resolving(db: Database, tenant: TenantKeys) -> None:
    rows = [new_row(tenant.tenant_id, NOW), new_row(tenant.tenant_id, NOW)]
    plan = await plan_for(db, tenant, rows, now=NOW)
    assert plan.updates == {} and plan.events == []
    assert [r["outcome"] for r in plan.resolutions.values()] == ["new", "new"]
    assert plan.resolutions[1]["active_id"] == rows[1]["id"]
    assert plan.resolutions[0]["detail"] == "stored (no key: no slot to resolve against)"


async def test_a_user_statement_replaces_a_model_guess(
    client: httpx.AsyncClient, db: Database, tenant: TenantKeys
) -> None:
    old = await existing(client, tenant, content="budget 300", key="budget", value=300)
    row = new_row(tenant.tenant_id, NOW, content="budget 500", key="budget", value=500, source="user")
    plan = await plan_for(db, tenant, [row], now=NOW)
    assert plan.updates[old]["status"] == "superseded" and plan.updates[old]["superseded_by"] == row["id"]
    assert plan.updates[old]["valid_to"] == NOW
    assert actions(plan) == [("item.superseded", "authority", old)]
    res = plan.resolutions[0]
    assert (res["outcome"], res["rule"], res["active_id"], res["retired_ids"]) == ("replaced", "authority",
                                                                                   row["id"], [old])  # fmt: skip
    assert row["status"] == "available"


async def test_a_model_guess_does_not_replace_a_user_statement(
    client: httpx.AsyncClient, db: Database, tenant: TenantKeys
) -> None:
    kept = await existing(client, tenant, content="budget 500", key="budget", value=500, source="user")
    row = new_row(tenant.tenant_id, NOW, content="budget 300", key="budget", value=300)
    plan = await plan_for(db, tenant, [row], now=NOW)
    assert plan.updates == {} and plan.events == []
    assert plan.resolutions[0]["outcome"] == "rejected" and plan.resolutions[0]["active_id"] == kept
    assert row["status"] == "superseded" and row["superseded_by"] == kept and row["valid_to"] == NOW


async def test_the_same_value_reinforces_the_current_item(
    client: httpx.AsyncClient, db: Database, tenant: TenantKeys
) -> None:
    kept = await existing(client, tenant, content="likes tea", key="drink", value="tea", source="user")
    row = new_row(tenant.tenant_id, NOW, content="likes tea", key="drink", value="tea", source="user")
    plan = await plan_for(db, tenant, [row], now=NOW)
    assert plan.updates[kept]["support_count"] == 2
    assert 0.9 < plan.updates[kept]["confidence"] <= 1.0  # raised from the user default, 0.9
    assert actions(plan) == [("item.reinforced", "reinforcement", kept)]
    assert plan.events[0]["before"]["support_count"] == 1 and plan.events[0]["after"]["support_count"] == 2
    assert row["status"] == "superseded" and row["superseded_by"] == kept
    assert plan.resolutions[0]["retired_ids"] == [row["id"]]


async def test_rows_of_one_batch_resolve_in_order(db: Database, tenant: TenantKeys) -> None:
    first = new_row(tenant.tenant_id, NOW, content="city Oslo", key="city", value="Oslo")
    second = new_row(tenant.tenant_id, NOW, content="city Bergen", key="city", value="Bergen", source="user")
    plan = await plan_for(db, tenant, [first, second], now=NOW, batch=True)
    assert plan.updates == {} and plan.events == []  # the loser is new too: retired in place, no update
    assert first["status"] == "superseded" and first["superseded_by"] == second["id"]
    assert plan.resolutions[0]["outcome"] == "new" and plan.resolutions[1]["retired_ids"] == [first["id"]]


async def test_an_item_past_its_lifetime_no_longer_holds_the_slot(
    client: httpx.AsyncClient, db: Database, tenant: TenantKeys
) -> None:
    ends = NOW + timedelta(hours=1)
    stale = await existing(client, tenant, content="seat 12A", key="seat", value="12A", source="user",
                           expires_at=ends.isoformat())  # fmt: skip
    row = new_row(tenant.tenant_id, ends, content="seat 3C", key="seat", value="3C")
    plan = await plan_for(db, tenant, [row], now=ends)  # the write happens as the item expires
    assert plan.updates[stale] == {"id": stale, "status": "expired", "status_reason": "expired", "updated_at": ends}
    assert actions(plan) == [("item.expired", "expiry", stale)]
    assert plan.resolutions[0]["outcome"] == "new"  # a model guess takes the slot an expired user item left

    before = await plan_for(db, tenant, [new_row(tenant.tenant_id, NOW, key="seat", value="3C")], now=NOW)
    assert before.resolutions[0]["outcome"] == "rejected"  # a second earlier, the user item still held it


async def test_a_narrower_scope_overrides_the_broader_item_inside_its_instance(
    client: httpx.AsyncClient, db: Database, tenant: TenantKeys
) -> None:
    broad = await existing(client, tenant, content="tone formal", key="tone", value="formal", source="user")
    row = new_row(tenant.tenant_id, NOW, content="tone casual", key="tone", value="casual", scope="session",
                  session_id="s1", scope_ref="s1")  # fmt: skip
    plan = await plan_for(db, tenant, [row], now=NOW)
    assert plan.resolutions[0]["outcome"] == "new"  # its own slot: nothing retired
    assert plan.resolutions[0]["overrides"] == [broad]
    assert actions(plan) == [("item.scope_override", "scope-override", row["id"])]


async def test_a_correction_of_an_unknown_item_is_named_by_index(db: Database, tenant: TenantKeys) -> None:
    rows = [new_row(tenant.tenant_id, NOW), new_row(tenant.tenant_id, NOW, corrects=uuid7())]
    with pytest.raises(ValidationFailed, match=r"^items\[1\]: corrects: no item") as err:
        await plan_for(db, tenant, rows, now=NOW, batch=True)
    assert err.value.extra == {"index": 1}


async def test_a_correction_retires_its_target_whatever_it_says(
    client: httpx.AsyncClient, db: Database, tenant: TenantKeys
) -> None:
    target = await existing(client, tenant, content="allergic to nuts", source="user")
    row = new_row(tenant.tenant_id, NOW, content="not allergic", source="user", corrects=target)
    plan = await plan_for(db, tenant, [row], now=NOW)
    assert plan.updates[target]["status"] == "superseded" and plan.updates[target]["superseded_by"] == row["id"]
    assert actions(plan) == [("item.superseded", "correction", target)]
    res = plan.resolutions[0]
    assert (res["outcome"], res["rule"], res["retired_ids"]) == ("replaced", "correction", [target])
