"""A profile entry's state is a function of its evidence set ordered by observed_at, not of the order the
evidence arrived in (issue #12, E)."""

from __future__ import annotations

import secrets
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import TenantKeys

VIM = {"dimension": "preference", "key": "editor", "value": "vim"}
DENIAL = {**VIM, "session_id": "s2", "explicit": True, "stance": "contradicts", "observed_at": "2026-09-10T00:00:00Z"}
OLDER = {**VIM, "session_id": "s1", "stance": "supports", "observed_at": "2026-09-01T00:00:00Z"}
STATE = ("tier", "status", "explicit", "current_session_id", "evidence_count", "score", "last_supported_at")


async def observe(client: httpx.AsyncClient, tenant: TenantKeys, user: str, body: dict[str, Any]) -> dict[str, Any]:
    r = await client.post(f"/v1/users/{user}/observations", json=body, headers=tenant.agent)
    assert r.status_code == 201, r.text
    return dict(r.json())


def state(entry: dict[str, Any]) -> tuple[Any, ...]:
    return (*(entry[k] for k in STATE), entry["confirmed_at"] is not None)


async def test_an_older_statement_does_not_revive_a_newer_denial(client: httpx.AsyncClient, tenant: TenantKeys) -> None:
    await observe(client, tenant, "in-order", OLDER)
    in_order = await observe(client, tenant, "in-order", DENIAL)
    await observe(client, tenant, "late", DENIAL)
    late = await observe(client, tenant, "late", OLDER)
    assert in_order["status"] == late["status"] == "rejected"
    assert state(in_order) == state(late)
    # the replay is on the record
    r = await client.get(f"/v1/users/late/profile/{late['id']}", headers=tenant.operator)
    assert r.status_code == 200, r.text
    rules = [e["rule"] for e in r.json()["events"]]
    assert "denial" in rules  # the denial when it arrived; the older statement changed nothing
    # A newer explicit statement does revive it, in either order.
    newer = {**VIM, "session_id": "s3", "explicit": True, "observed_at": "2026-09-20T00:00:00Z"}
    assert (await observe(client, tenant, "late", newer))["status"] == "active"


T0 = datetime(2026, 6, 1, tzinfo=UTC)
observation = st.fixed_dictionaries(
    {
        "stance": st.sampled_from(["supports", "contradicts"]),
        "explicit": st.booleans(),
        "confirmation": st.booleans(),
        "session_id": st.sampled_from(["s1", "s2", "s3"]),
    }
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(evidence=st.lists(observation, min_size=2, max_size=6), data=st.data())
async def test_state_is_the_same_for_every_arrival_order(
    client: httpx.AsyncClient, tenant: TenantKeys, evidence: list[dict[str, Any]], data: st.DataObject
) -> None:
    # distinct days: equal observed_at falls back to arrival order, by design
    bodies = [{**VIM, **e, "observed_at": (T0 + timedelta(days=i)).isoformat()} for i, e in enumerate(evidence)]
    shuffled = data.draw(st.permutations(bodies))
    finals = []
    for order in (bodies, shuffled):
        user = f"order-{secrets.token_hex(4)}"
        entry: dict[str, Any] = {}
        for body in order:
            entry = await observe(client, tenant, user, body)
        finals.append(state(entry))
    assert finals[0] == finals[1], (bodies, shuffled)


async def test_batch_out_of_order_is_replayed(client: httpx.AsyncClient, tenant: TenantKeys) -> None:
    r = await client.post(
        "/v1/users/batch-order/observations/batch", json={"observations": [DENIAL, OLDER]}, headers=tenant.agent
    )
    assert r.status_code == 201, r.text
    assert r.json()["items"][-1]["status"] == "rejected"
