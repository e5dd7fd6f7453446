"""service/windows/service.py, called as the endpoint calls it (``build_window(ctx, *, user_id, req)``):
the budget rule, who may read and archive, the 422 when the pinned content alone does not fit, and a window
that is the same for the same input. (Windows through HTTP: test_window_api.py and the others here.)"""

from __future__ import annotations

import secrets
from datetime import UTC, datetime
from typing import Any

import pytest
from fastapi import FastAPI
from hypothesis import given
from hypothesis import strategies as st

from schemas.items import ItemCreate
from schemas.windows import ChatMessage, WindowRequest
from service.caches import ProcessCaches
from service.conversations import service as conversations
from service.errors import BudgetTooSmallError, Forbidden
from service.items import service as items
from service.settings import Settings
from service.windows import service
from service.windows.service import budget_of, value_model
from tests.conftest import TenantKeys
from tests.service.service_context import service_context

NOW = datetime(2026, 9, 1, 12, tzinfo=UTC)


def req(**fields: Any) -> WindowRequest:
    return WindowRequest.model_validate({"input": "which cache?", **fields})


def test_max_tokens_is_the_budget_as_given(settings: Settings) -> None:
    assert budget_of(req(max_tokens=123), settings) == 123


@given(st.integers(2, 200_000), st.data())
def test_a_context_limit_gives_the_smaller_of_room_and_watermark(
    settings: Settings, limit: int, data: st.DataObject
) -> None:
    reserve = data.draw(st.integers(0, limit - 1))
    watermark = data.draw(st.none() | st.floats(0.01, 1.0))
    budget = budget_of(req(context_limit=limit, reserve_tokens=reserve, watermark=watermark), settings)
    share = watermark if watermark is not None else settings.window.watermark
    assert budget == min(limit - reserve, int(share * limit))
    assert budget <= limit - reserve


def test_the_value_model_is_built_once_per_configuration(settings: Settings) -> None:
    caches = ProcessCaches()
    assert value_model(caches, settings) is value_model(caches, settings.model_copy())
    floor = settings.window.value.relevance_floor
    other = settings.replace(window_value=settings.window.value.model_copy(update={"relevance_floor": floor / 2}))
    assert value_model(caches, other) is not value_model(caches, settings)  # another configuration, another model


async def seeded_user(app: FastAPI, tenant: TenantKeys) -> str:
    uid = f"u-{secrets.token_hex(4)}"
    async with service_context(app, tenant.agent, now=NOW) as ctx:
        rule = ItemCreate(type="constraint", hard=True, content="Never recommend Redis Cluster: it burned us before.")
        facts = [
            ItemCreate(type="fact", content=f"benchmark note {i}: memcached held p99 under 2 ms") for i in range(5)
        ]
        await items.create_items(ctx, user_id=uid, items=[rule, *facts], batch=True)
    return uid


async def test_reading_needs_items_read_and_archiving_needs_items_write(app: FastAPI, tenant: TenantKeys) -> None:
    uid = await seeded_user(app, tenant)
    async with service_context(app, tenant.operator, now=NOW) as ctx:
        window = await service.build_window(ctx, user_id=uid, req=req(max_tokens=500))
    assert "Redis Cluster" in window["text"]
    with pytest.raises(Forbidden, match="items:write"):
        async with service_context(app, tenant.operator, now=NOW) as ctx:
            await service.build_window(ctx, user_id=uid, req=req(max_tokens=500, archive_dropped=True))


async def test_archive_off_writes_nothing_even_for_a_key_that_may_write(app: FastAPI, tenant: TenantKeys) -> None:
    uid = await seeded_user(app, tenant)
    turns = [
        ChatMessage(role=role, content=f"{role} turn {i}: the offsite venue seats forty and has a garden")
        for i in range(20)
        for role in ("user", "assistant")
    ]
    async with service_context(app, tenant.agent, now=NOW) as ctx:
        await conversations.append_messages(ctx, user_id=uid, session_id="s1", messages=turns)
    request = req(max_tokens=300, session_id="s1")
    async with service_context(app, tenant.admin, now=NOW) as ctx:
        preview = await service.build_window(ctx, user_id=uid, req=request, archive=False)
        page = await conversations.list_messages(ctx, user_id=uid, session_id="s1", limit=100, cursor=None)
    assert 0 < len(preview["messages"]) < len(turns)  # turns fell out of the window...
    assert preview["archived_item_id"] is None and all(m.archived_item_id is None for m in page.items)  # ...kept live
    async with service_context(app, tenant.admin, now=NOW) as ctx:
        window = await service.build_window(ctx, user_id=uid, req=request)
    assert window["archived_item_id"] is not None  # the same request, archiving on, archives them
    assert window["messages"] == preview["messages"]


async def test_pinned_content_over_the_budget_is_a_422_with_what_it_needs(app: FastAPI, tenant: TenantKeys) -> None:
    uid = await seeded_user(app, tenant)
    with pytest.raises(BudgetTooSmallError) as err:
        async with service_context(app, tenant.agent, now=NOW) as ctx:
            await service.build_window(ctx, user_id=uid, req=req(max_tokens=5))
    e = err.value
    assert e.status == 422 and e.extra["budget"] == 5 and e.extra["required"] > 5
    assert e.detail == f"pinned content needs {e.extra['required']} tokens; the budget is 5"


async def test_the_same_input_gives_the_same_window_and_it_fits(app: FastAPI, tenant: TenantKeys) -> None:
    uid = await seeded_user(app, tenant)
    windows = []
    for _ in range(2):
        async with service_context(app, tenant.agent, now=NOW) as ctx:
            windows.append(await service.build_window(ctx, user_id=uid, req=req(max_tokens=120)))
    first, second = windows
    assert first == second
    assert first["tokens"]["used"] <= first["tokens"]["budget"] == 120
    assert first["state_version"].startswith("sv1:")
