"""service/timeline/service.py, called as the endpoint calls it: permission, page size from settings, the
last page has no cursor, a cursor only reads back in its own order. (The route: test_timeline.py.)"""

from __future__ import annotations

import secrets
from datetime import UTC, datetime

import pytest
from fastapi import FastAPI

from schemas.items import ItemCreate
from service.errors import Forbidden, ValidationFailed
from service.items import service as items
from service.timeline import service
from tests.conftest import TenantKeys
from tests.service.service_context import service_context

NOW = datetime(2026, 9, 1, 12, tzinfo=UTC)


async def user_with_events(app: FastAPI, tenant: TenantKeys, n: int) -> str:
    uid = f"u-{secrets.token_hex(4)}"
    async with service_context(app, tenant.agent, now=NOW) as ctx:
        facts = [ItemCreate(type="fact", content=f"fact {i}") for i in range(n)]
        await items.create_items(ctx, user_id=uid, items=facts, batch=True)
    return uid


async def test_reading_the_timeline_needs_evidence_read(app: FastAPI, tenant: TenantKeys) -> None:
    with pytest.raises(Forbidden, match="evidence:read"):
        async with service_context(app, tenant.agent) as ctx:
            await service.timeline(ctx, user_id="u", kinds=[], order="desc", limit=None, cursor=None)


async def test_the_default_page_is_the_settings_and_the_last_page_has_no_cursor(
    app: FastAPI, tenant: TenantKeys
) -> None:
    uid = await user_with_events(app, tenant, 4)
    async with service_context(app, tenant.operator, default_page_size=3) as ctx:
        first = await service.timeline(ctx, user_id=uid, kinds=["item"], order="asc", limit=None, cursor=None)
        rest = await service.timeline(
            ctx, user_id=uid, kinds=["item"], order="asc", limit=None, cursor=first.next_cursor
        )
        exact = await service.timeline(ctx, user_id=uid, kinds=["item"], order="asc", limit=4, cursor=None)
    assert len(first.items) == 3 and first.next_cursor is not None
    assert len(rest.items) == 1 and rest.next_cursor is None
    assert [e.id for e in first.items + rest.items] == [e.id for e in exact.items]
    assert exact.next_cursor is None  # exactly a page left: no empty page to fetch


async def test_limits_and_cursors_are_checked(app: FastAPI, tenant: TenantKeys) -> None:
    uid = await user_with_events(app, tenant, 2)
    async with service_context(app, tenant.operator, max_page_size=10, default_page_size=5) as ctx:
        with pytest.raises(ValidationFailed, match="limit must be at most 10"):
            await service.timeline(ctx, user_id=uid, kinds=[], order="desc", limit=11, cursor=None)
        page = await service.timeline(ctx, user_id=uid, kinds=[], order="asc", limit=1, cursor=None)
        with pytest.raises(ValidationFailed, match="send the same order"):
            await service.timeline(ctx, user_id=uid, kinds=[], order="desc", limit=1, cursor=page.next_cursor)


async def test_kinds_are_prefixes_of_the_action(app: FastAPI, tenant: TenantKeys) -> None:
    uid = await user_with_events(app, tenant, 1)
    async with service_context(app, tenant.operator) as ctx:
        assert [
            e.action
            for e in (
                await service.timeline(ctx, user_id=uid, kinds=["item"], order="desc", limit=None, cursor=None)
            ).items
        ] == ["item.created"]
        nothing = await service.timeline(ctx, user_id=uid, kinds=["profile"], order="desc", limit=None, cursor=None)
        assert nothing.items == [] and nothing.next_cursor is None
