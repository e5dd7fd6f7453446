"""service/profiles/service.py, called as an endpoint calls it (``service.x(ctx, *, ...)``): who may write,
confirm and read evidence; what the schema cannot check; one entry per belief; the user's yes and no."""

from __future__ import annotations

import secrets
import unicodedata
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from fastapi import FastAPI

from schemas.profiles import ConfirmBody, ObservationCreate
from service.errors import BatchItemInvalid, BatchTooLarge, EntryNotFound, Forbidden, ValidationFailed
from service.profiles import service
from tests.conftest import TenantKeys
from tests.service.service_context import service_context

NOW = datetime(2026, 9, 1, 12, tzinfo=UTC)


def obs(**fields: Any) -> ObservationCreate:
    base = {"dimension": "preference", "key": "brand", "value": "ThinkPad", "session_id": "s-1", "domain": "laptop"}
    return ObservationCreate.model_validate({**base, **fields})


def user() -> str:
    return f"u-{secrets.token_hex(4)}"


async def test_observations_of_one_belief_are_one_entry_keyed_in_nfc(app: FastAPI, tenant: TenantKeys) -> None:
    uid = user()
    nfd = unicodedata.normalize("NFD", "Café")
    async with service_context(app, tenant.agent, now=NOW) as ctx:
        a, b, c = await service.add_observations(
            ctx,
            user_id=uid,
            observations=[obs(value="Café"), obs(value=nfd, session_id="s-2"), obs(value="Tea")],
            batch=True,
        )
    assert a.id == b.id != c.id
    assert a.value == "Café" and b.evidence_count == 2
    assert b.evidence_ids is not None and len(b.evidence_ids) == 2
    assert b.tier == "candidate"  # two independent sessions


async def test_who_may_write_confirm_and_read(app: FastAPI, tenant: TenantKeys) -> None:
    uid = user()
    async with service_context(app, tenant.agent, now=NOW) as ctx:
        (entry,) = await service.add_observations(ctx, user_id=uid, observations=[obs()], batch=False)
    with pytest.raises(Forbidden, match="may not profile:write"):
        async with service_context(app, tenant.operator, now=NOW) as ctx:
            await service.add_observations(ctx, user_id=uid, observations=[obs()], batch=False)
    with pytest.raises(Forbidden, match="may not evidence:read"):
        async with service_context(app, tenant.agent, now=NOW) as ctx:
            await service.get_evidence(ctx, user_id=uid, entry_id=entry.id)
    async with service_context(app, tenant.operator, now=NOW) as ctx:  # an operator may confirm for the user
        confirmed = await service.confirm_or_reject(ctx, user_id=uid, entry_id=entry.id, body=None, confirm=True)
    assert (confirmed.tier, confirmed.status) == ("long_term", "active")


async def test_a_batch_over_the_setting_is_413(app: FastAPI, tenant: TenantKeys) -> None:
    with pytest.raises(BatchTooLarge, match=r"at most 2 observations \(setting CTXMEM_MAX_BATCH_ITEMS\), got 3"):
        async with service_context(app, tenant.agent, now=NOW, max_batch_items=2) as ctx:
            await service.add_observations(ctx, user_id=user(), observations=[obs()] * 3, batch=True)


async def test_observed_at_in_the_future_is_refused_naming_the_batch_index(app: FastAPI, tenant: TenantKeys) -> None:
    future = (NOW + timedelta(days=1)).isoformat()
    with pytest.raises(BatchItemInvalid) as err:
        async with service_context(app, tenant.agent, now=NOW) as ctx:
            await service.add_observations(
                ctx, user_id=user(), observations=[obs(), obs(observed_at=future)], batch=True
            )
    assert (err.value.detail, err.value.extra["index"], err.value.status) == (
        "observations[1]: observed_at is in the future",
        1,
        422,
    )
    with pytest.raises(ValidationFailed, match=r"^observed_at is in the future$"):
        async with service_context(app, tenant.agent, now=NOW) as ctx:
            await service.add_observations(ctx, user_id=user(), observations=[obs(observed_at=future)], batch=False)


async def test_nothing_is_written_when_a_batch_is_refused(app: FastAPI, tenant: TenantKeys) -> None:
    uid = user()
    with pytest.raises(BatchItemInvalid):
        async with service_context(app, tenant.agent, now=NOW) as ctx:
            await service.add_observations(
                ctx, user_id=uid, observations=[obs(), obs(observed_at="2099-01-01T00:00:00Z")], batch=True
            )
    async with service_context(app, tenant.operator, now=NOW) as ctx:
        profile = await service.get_profile(ctx, user_id=uid, domains=None, session_id=None, tiers=None)
    assert profile.tiers == {}


async def test_confirm_and_reject_record_the_users_word(app: FastAPI, tenant: TenantKeys) -> None:
    uid = user()
    async with service_context(app, tenant.agent, now=NOW) as ctx:
        (entry,) = await service.add_observations(ctx, user_id=uid, observations=[obs()], batch=False)
    async with service_context(app, tenant.agent, now=NOW + timedelta(minutes=1)) as ctx:
        rejected = await service.confirm_or_reject(
            ctx, user_id=uid, entry_id=entry.id, body=ConfirmBody(note="said no on the phone"), confirm=False
        )
    assert (rejected.id, rejected.status) == (entry.id, "rejected")
    async with service_context(app, tenant.admin, now=NOW + timedelta(minutes=2)) as ctx:
        evidence = await service.get_evidence(ctx, user_id=uid, entry_id=entry.id)
    newest = evidence.observations[0]  # newest first
    assert (newest.stance, newest.confirmation, newest.explicit, newest.source) == ("contradicts", True, True, "user")
    assert (newest.note, newest.session_id) == ("said no on the phone", "operator")
    assert [o.id for o in evidence.observations][::-1] == evidence.entry.evidence_ids
    assert evidence.events and all(e.entity_id == str(entry.id) for e in evidence.events)


async def test_confirming_without_a_body_names_the_role_in_the_note(app: FastAPI, tenant: TenantKeys) -> None:
    uid = user()
    async with service_context(app, tenant.agent, now=NOW) as ctx:
        (entry,) = await service.add_observations(ctx, user_id=uid, observations=[obs()], batch=False)
        await service.confirm_or_reject(ctx, user_id=uid, entry_id=entry.id, body=None, confirm=True)
    async with service_context(app, tenant.operator, now=NOW) as ctx:
        evidence = await service.get_evidence(ctx, user_id=uid, entry_id=entry.id)
    assert evidence.observations[0].note == "confirmed by agent on the user's behalf"


async def test_unknown_entries_are_404_for_another_user_too(app: FastAPI, tenant: TenantKeys) -> None:
    uid = user()
    async with service_context(app, tenant.agent, now=NOW) as ctx:
        (entry,) = await service.add_observations(ctx, user_id=uid, observations=[obs()], batch=False)
    async with service_context(app, tenant.admin, now=NOW) as ctx:
        for user_id, entry_id in ((uid, uuid.uuid4()), ("someone-else", entry.id)):
            with pytest.raises(EntryNotFound, match=f"no profile entry {entry_id}"):
                await service.get_evidence(ctx, user_id=user_id, entry_id=entry_id)
            with pytest.raises(EntryNotFound):
                await service.confirm_or_reject(ctx, user_id=user_id, entry_id=entry_id, body=None, confirm=True)


async def test_the_profile_groups_by_tier_and_domain_and_filters_tiers(app: FastAPI, tenant: TenantKeys) -> None:
    uid = user()
    async with service_context(app, tenant.agent, now=NOW) as ctx:
        laptop, global_, confirmed = await service.add_observations(
            ctx,
            user_id=uid,
            observations=[
                obs(),
                obs(domain=None, key="tone", value="brief"),
                obs(key="os", value="Linux", confirmation=True),
            ],
            batch=True,
        )
    async with service_context(app, tenant.operator, now=NOW) as ctx:
        everything = await service.get_profile(ctx, user_id=uid, domains=None, session_id=None, tiers=None)
        current = await service.get_profile(ctx, user_id=uid, domains=None, session_id=None, tiers=["current"])
    listing = {tier: {d: {e.id for e in es} for d, es in ds.items()} for tier, ds in everything.tiers.items()}
    assert listing == {
        "current": {"laptop": {laptop.id}, "global": {global_.id}},
        "long_term": {"laptop": {confirmed.id}},
    }
    assert set(current.tiers) == {"current"}
    assert [e.entry.id for e in everything.effective.entries] == [confirmed.id]  # only long-term is a default
    assert current.effective == everything.effective  # the tier filter is for the listing only
