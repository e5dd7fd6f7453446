"""service/users/service.py, called as the endpoints call it: a user exists from its first write; export is
checked before it streams and is one consistent JSON document; erasure removes every row, keeps no id in
its own event, and refuses a user that was never written."""

from __future__ import annotations

import hashlib
import json
import secrets
from datetime import UTC, datetime

import pytest
from fastapi import FastAPI
from hypothesis import given
from hypothesis import strategies as st
from sqlalchemy import text

from schemas.items import ItemCreate
from schemas.profiles import ObservationCreate
from service.errors import Forbidden, UserNotFound
from service.idempotency import Idempotency
from service.items import service as items
from service.profiles import service as profiles
from service.users import service
from service.users.service import EXPORT_SECTIONS, user_fingerprint
from tests.conftest import TenantKeys
from tests.helpers import count_rows, tenant_rows
from tests.service.service_context import service_context

NOW = datetime(2026, 9, 1, 12, tzinfo=UTC)
ERASURE_EVENT = "SELECT action, entity_id, after, user_id FROM event WHERE tenant_id = :t AND action = 'user.erased'"


def test_the_fingerprint_is_sha256_of_tenant_and_user_with_a_separator() -> None:
    assert user_fingerprint("t", "u") == "sha256:" + hashlib.sha256(b"t\x1fu").hexdigest()


@given(st.text("ab:", max_size=4), st.text("ab:", max_size=4), st.text("ab:", max_size=4), st.text("ab:", max_size=4))
def test_distinct_tenant_user_pairs_have_distinct_fingerprints(t1: str, u1: str, t2: str, u2: str) -> None:
    if (t1, u1) != (t2, u2):
        assert user_fingerprint(t1, u1) != user_fingerprint(t2, u2)


async def user_with_data(app: FastAPI, tenant: TenantKeys) -> str:
    uid = f"u-{secrets.token_hex(4)}"
    async with service_context(app, tenant.agent, now=NOW) as ctx:
        await items.create_items(ctx, user_id=uid, items=[ItemCreate(type="fact", content="likes tea")], batch=False)
        obs = ObservationCreate(dimension="preference", key="drink", value="tea", session_id="s")
        await profiles.add_observations(ctx, user_id=uid, observations=[obs], batch=False)
    return uid


async def test_ensure_user_is_idempotent(app: FastAPI, tenant: TenantKeys) -> None:
    uid = f"u-{secrets.token_hex(4)}"
    for _ in range(2):
        async with service_context(app, tenant.agent, now=NOW) as ctx:
            await service.ensure_user(ctx, user_id=uid)
    assert await count_rows(app.state.db, tenant.tenant_id, "end_user", uid) == 1


async def test_export_is_refused_before_anything_streams(app: FastAPI, tenant: TenantKeys) -> None:
    with pytest.raises(Forbidden, match="users:export"):
        async with service_context(app, tenant.agent, now=NOW) as ctx:
            await service.export_user(ctx, db=app.state.db, user_id="u")


async def test_the_export_is_one_json_document_of_every_section(app: FastAPI, tenant: TenantKeys) -> None:
    uid = await user_with_data(app, tenant)
    async with service_context(app, tenant.operator, now=NOW) as ctx:
        stream = await service.export_user(ctx, db=app.state.db, user_id=uid)
        body = b"".join([chunk async for chunk in stream])
    doc = json.loads(body)
    assert (doc["tenant_id"], doc["user_id"], doc["exported_at"]) == (tenant.tenant_id, uid, NOW.isoformat())
    assert [name for name, _, _ in EXPORT_SECTIONS] == list(doc)[3:]
    assert [i["content"] for i in doc["items"]] == ["likes tea"]
    assert [e["value"] for e in doc["profile_entries"]] == ["tea"]
    assert len(doc["observations"]) == 1
    assert {e["action"] for e in doc["events"]} >= {"item.created", "profile.created", "observation.added"}


async def test_erasing_a_user_never_written_is_404(app: FastAPI, tenant: TenantKeys) -> None:
    with pytest.raises(UserNotFound, match="no user 'ghost' to erase"):
        async with service_context(app, tenant.admin, now=NOW) as ctx:
            await service.erase_user(ctx, user_id="ghost", idem=Idempotency(ctx.session, tenant.tenant_id, None))


async def test_only_an_admin_may_erase(app: FastAPI, tenant: TenantKeys) -> None:
    uid = await user_with_data(app, tenant)
    with pytest.raises(Forbidden, match="users:erase"):
        async with service_context(app, tenant.operator, now=NOW) as ctx:
            await service.erase_user(ctx, user_id=uid, idem=Idempotency(ctx.session, tenant.tenant_id, None))
    assert await count_rows(app.state.db, tenant.tenant_id, "context_item", uid) == 1


async def test_erasure_removes_every_row_and_its_event_keeps_only_counts(app: FastAPI, tenant: TenantKeys) -> None:
    uid = await user_with_data(app, tenant)
    async with service_context(app, tenant.admin, now=NOW) as ctx:
        idem = Idempotency(ctx.session, tenant.tenant_id, None)
        result = await service.erase_user(ctx, user_id=uid, idem=idem)
    assert result.erased and result.erased_at == NOW
    assert result.user_fingerprint == user_fingerprint(tenant.tenant_id, uid)
    assert result.rows["context_item"] == 1 and result.rows["observation"] == 1
    assert idem.forget_user == uid  # the request's own idempotency record drops the id too
    for table in ("context_item", "profile_entry", "observation", "end_user", "event"):
        assert await count_rows(app.state.db, tenant.tenant_id, table, uid) == 0, table
    rows = await tenant_rows(app.state.db, tenant.tenant_id)
    assert rows["event"] >= 1  # the erasure's own event, about no user
    async with service_context(app, tenant.operator, now=NOW) as ctx:
        found = await ctx.session.execute(text(ERASURE_EVENT), {"t": tenant.tenant_id})
        (action, entity, after, user_id) = found.one()
    assert (action, entity, user_id) == ("user.erased", result.user_fingerprint, None)
    assert uid not in json.dumps(after)
    assert after == {"rows": result.rows}


async def test_the_erasure_counts_are_what_erasure_then_deletes(app: FastAPI, tenant: TenantKeys) -> None:
    uid = await user_with_data(app, tenant)
    with pytest.raises(Forbidden, match="users:erase"):
        async with service_context(app, tenant.operator, now=NOW) as ctx:
            await service.erasure_counts(ctx, user_id=uid)
    with pytest.raises(UserNotFound, match="no user 'ghost' to erase"):
        async with service_context(app, tenant.admin, now=NOW) as ctx:
            await service.erasure_counts(ctx, user_id="ghost")
    async with service_context(app, tenant.admin, now=NOW) as ctx:
        counts = await service.erasure_counts(ctx, user_id=uid)
    assert counts["context_item"] == 1 and counts["observation"] == 1 and counts["end_user"] == 1
    async with service_context(app, tenant.admin, now=NOW) as ctx:
        result = await service.erase_user(ctx, user_id=uid, idem=Idempotency(ctx.session, tenant.tenant_id, None))
    assert result.rows == counts
