"""Observations, tiers, 4C scores and the effective profile through HTTP on a real PostgreSQL."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest

from service.db.engine import Database
from tests.conftest import TenantKeys
from tests.helpers import tenant_rows

T0 = datetime(2026, 6, 1, tzinfo=UTC)
OBS = "/v1/users/u/observations"


def obs(session: str, day: float = 0, **kw: Any) -> dict[str, Any]:
    body = {
        "domain": "phone",
        "dimension": "preference",
        "key": "brand",
        "value": "xiaomi",
        "polarity": "like",
        "session_id": session,
        "context": "buy_phone",
        "observed_at": (T0 + timedelta(days=day)).isoformat(),
        "source": "model",
    }
    body.update(kw)
    return {k: v for k, v in body.items() if v is not None}


async def post(client: httpx.AsyncClient, headers: dict[str, str], body: dict[str, Any]) -> dict[str, Any]:
    r = await client.post(OBS, json=body, headers=headers)
    assert r.status_code == 201, r.text
    return dict(r.json())


def parts(b: dict[str, Any]) -> float:
    return round(b["count"] + b["continuity"] + b["cross_context"] + b["confirmation"] - b["penalty"], 2)


async def test_calibration_case1_three_sessions_candidate(client: httpx.AsyncClient, tenant: TenantKeys) -> None:
    e1 = await post(client, tenant.agent, obs("s1", 0))
    assert (e1["tier"], e1["status"]) == ("current", "active")
    await post(client, tenant.agent, obs("s2", 7))
    e3 = await post(client, tenant.agent, obs("s3", 14))
    assert e3["id"] == e1["id"]
    assert e3["tier"] == "candidate"
    assert 30 <= e3["score"] <= 40
    assert parts(e3["breakdown"]) == pytest.approx(e3["score"])
    assert len(e3["evidence_ids"]) == 3 and sorted(e3["breakdown"]["evidence_ids"]) == sorted(e3["evidence_ids"])
    # A listing gives the count only (null ids, not an empty list beside a count of 3); the entry's page the ids.
    listed = (await client.get("/v1/users/u/profile", headers=tenant.agent)).json()["tiers"]["candidate"]
    (entry,) = [e for es in listed.values() for e in es]
    assert entry["evidence_count"] == 3 and entry["evidence_ids"] is None
    detail = (await client.get(f"/v1/users/u/profile/{e3['id']}", headers=tenant.operator)).json()
    assert sorted(detail["entry"]["evidence_ids"]) == sorted(e3["evidence_ids"])


async def test_calibration_case2_same_session_repeats_count_once(client: httpx.AsyncClient, tenant: TenantKeys) -> None:
    r = await client.post(
        OBS + "/batch", json={"observations": [obs("s1", i / 100) for i in range(5)]}, headers=tenant.agent
    )
    assert r.status_code == 201
    e = r.json()["items"][-1]
    assert e["tier"] == "current" and e["score"] < 20
    assert e["breakdown"]["sessions"] == 1 and e["evidence_count"] == 5


async def test_calibration_case3_confirmation_is_long_term_at_once(
    client: httpx.AsyncClient, tenant: TenantKeys
) -> None:
    e = await post(client, tenant.agent, obs("s1", explicit=True, confirmation=True, source="user"))
    assert (e["tier"], e["status"]) == ("long_term", "active")
    assert e["confirmed_at"] is not None


async def test_calibration_case4_scores_for_promotion(client: httpx.AsyncClient, tenant: TenantKeys) -> None:
    contexts = ["buy_phone", "compare", "repair"]
    batch = [obs(f"s{i}", i * 20, context=contexts[i % 3]) for i in range(6)]
    r = await client.post(OBS + "/batch", json={"observations": batch}, headers=tenant.agent)
    e = r.json()["items"][-1]
    assert e["score"] >= 60
    assert e["tier"] == "candidate"  # promotion to long_term is the promotion job's, not inline


async def test_calibration_case5_single_signal_never_candidate(client: httpx.AsyncClient, tenant: TenantKeys) -> None:
    e = await post(client, tenant.agent, obs("s1", key="form_factor", value="foldable", context="viewed_foldable"))
    assert e["tier"] == "current" and e["score"] < 30


async def test_contradiction_weakens_and_explicit_denial_rejects(client: httpx.AsyncClient, tenant: TenantKeys) -> None:
    await post(client, tenant.agent, obs("s1", 0))
    e = await post(client, tenant.agent, obs("s2", 1, stance="contradicts"))
    assert e["status"] == "weakened" and e["breakdown"]["penalty"] > 0
    e = await post(client, tenant.agent, obs("s3", 2, stance="contradicts", explicit=True, source="user"))
    assert e["status"] == "rejected"
    # rejection is final until new explicit evidence: inferred support does nothing
    e = await post(client, tenant.agent, obs("s4", 3))
    assert e["status"] == "rejected"
    e = await post(client, tenant.agent, obs("s5", 4, explicit=True, source="user"))
    assert (e["tier"], e["status"]) == ("current", "active")


async def test_effective_view_domain_session_explicit(client: httpx.AsyncClient, tenant: TenantKeys) -> None:
    glob = await post(client, tenant.agent, obs("s1", domain=None, value="apple", explicit=True, confirmation=True))
    dom = await post(client, tenant.agent, obs("s1", value="xiaomi", confirmation=True, explicit=True))
    r = await client.get("/v1/users/u/profile", params={"domain": "phone"}, headers=tenant.agent)
    assert r.status_code == 200, r.text
    eff = r.json()["effective"]
    assert [e["entry"]["id"] for e in eff["entries"]] == [dom["id"]]
    assert eff["entries"][0]["overrides"] == [glob["id"]]
    r = await client.get("/v1/users/u/profile", params={"domain": "laptop"}, headers=tenant.agent)
    assert [e["entry"]["id"] for e in r.json()["effective"]["entries"]] == [glob["id"]]
    # an explicit statement in session s9 overrides history inside s9 only
    now = await post(client, tenant.agent, obs("s9", 30, value="oppo", explicit=True, source="user"))
    assert now["tier"] == "current"
    inside = (await client.get("/v1/users/u/profile?domain=phone&session_id=s9", headers=tenant.agent)).json()
    assert [(e["entry"]["id"], e["why"]) for e in inside["effective"]["entries"]] == [(now["id"], "current-statement")]
    outside = (await client.get("/v1/users/u/profile?domain=phone&session_id=s2", headers=tenant.agent)).json()
    assert [e["entry"]["id"] for e in outside["effective"]["entries"]] == [dom["id"]]
    # listing by tier and domain
    tiers = inside["tiers"]
    assert [e["id"] for e in tiers["long_term"]["phone"]] == [dom["id"]]
    assert [e["id"] for e in tiers["long_term"]["global"]] == [glob["id"]]
    assert [e["id"] for e in tiers["current"]["phone"]] == [now["id"]]
    only = (await client.get("/v1/users/u/profile?tier=current", headers=tenant.agent)).json()
    assert list(only["tiers"]) == ["current"]


async def test_explicit_beats_inferred_and_candidates_are_hints(client: httpx.AsyncClient, tenant: TenantKeys) -> None:
    inferred = [obs(f"s{i}", i * 20, value="samsung", context=f"c{i % 3}") for i in range(6)]
    await client.post(OBS + "/batch", json={"observations": inferred}, headers=tenant.agent)
    cand = (await client.get("/v1/users/u/profile", headers=tenant.agent)).json()["effective"]
    assert cand["entries"] == [] and [h["value"] for h in cand["hints"]] == ["samsung"]
    confirmed = await post(client, tenant.agent, obs("s7", 130, value="google", explicit=True, confirmation=True))
    dislike = await post(
        client,
        tenant.agent,
        obs("s7", 130, key="form_factor", value="foldable", polarity="dislike", explicit=True, confirmation=True),
    )
    eff = (await client.get("/v1/users/u/profile?domain=phone", headers=tenant.agent)).json()["effective"]
    assert [e["entry"]["id"] for e in eff["entries"]] == [confirmed["id"]]
    assert [e["entry"]["id"] for e in eff["constraints"]] == [dislike["id"]]


async def test_evidence_trail_for_operators(client: httpx.AsyncClient, tenant: TenantKeys) -> None:
    e = await post(client, tenant.agent, obs("s1", 0, note="viewed 3 xiaomi phones"))
    await post(client, tenant.agent, obs("s2", 5))
    r = await client.get(f"/v1/users/u/profile/{e['id']}", headers=tenant.agent)
    assert r.status_code == 403  # evidence is for operators
    r = await client.get(f"/v1/users/u/profile/{e['id']}", headers=tenant.operator)
    assert r.status_code == 200
    ev = r.json()
    assert ev["entry"]["tier"] == "candidate"
    assert [o["session_id"] for o in ev["observations"]] == ["s2", "s1"]
    assert ev["observations"][1]["note"] == "viewed 3 xiaomi phones"
    assert parts(ev["breakdown"]) == pytest.approx(ev["entry"]["score"])
    assert [(x["action"], x["rule"]) for x in ev["events"]] == [
        ("profile.changed", "second-session"),
        ("profile.created", None),
    ]
    # confirm on the user's behalf → long_term; reject → rejected
    r = await client.post(
        f"/v1/users/u/profile/{e['id']}/confirm", json={"note": "user said yes"}, headers=tenant.operator
    )
    assert r.status_code == 200 and r.json()["tier"] == "long_term"
    r = await client.post(f"/v1/users/u/profile/{e['id']}/reject", headers=tenant.agent)
    assert r.status_code == 200 and r.json()["status"] == "rejected"
    trail = (await client.get(f"/v1/users/u/profile/{e['id']}", headers=tenant.admin)).json()
    assert [(x["action"], x["rule"]) for x in trail["events"]][:2] == [
        ("profile.changed", "denial"),
        ("profile.changed", "confirmation"),
    ]
    assert trail["observations"][0]["stance"] == "contradicts" and trail["observations"][0]["confirmation"] is True


async def test_idempotent_replay_and_validation(client: httpx.AsyncClient, tenant: TenantKeys, db: Database) -> None:
    h = {**tenant.agent, "Idempotency-Key": "obs-1"}
    first = await client.post(OBS, json=obs("s1"), headers=h)
    rows = await tenant_rows(db, tenant.tenant_id)
    again = await client.post(OBS, json=obs("s1"), headers=h)
    assert again.status_code == 201 and again.content == first.content
    assert await tenant_rows(db, tenant.tenant_id) == rows
    bad = [
        obs("s1", dimension="mood"),
        obs("s1", value="x\x00"),
        obs("s1", value=""),
        obs("s1", observed_at="2026-09-01T00:00:00"),
        obs("s1", observed_at="2099-01-01T00:00:00Z"),
        obs("s1", weight=0),
        obs("s1", weight=1.5),
        obs("s1", polarity="love"),
        obs("s1", stance="maybe"),
        obs("s1", session_id="a b"),
        {k: v for k, v in obs("s1").items() if k != "session_id"},
        obs("s1", extra=1),
    ]
    for body in bad:
        r = await client.post(OBS, json=body, headers=tenant.agent)
        assert r.status_code == 422, (body, r.text)
    r = await client.post(
        OBS + "/batch", json={"observations": [obs("s1"), obs("s2", dimension="mood")]}, headers=tenant.agent
    )
    assert r.status_code == 422 and r.json()["index"] == 1
    r = await client.post(OBS, json=obs("s1"), headers=tenant.operator)
    assert r.status_code == 403
    assert await tenant_rows(db, tenant.tenant_id) == rows


async def test_tenant_isolation(client: httpx.AsyncClient, tenant: TenantKeys, other_tenant: TenantKeys) -> None:
    e = await post(client, tenant.agent, obs("s1"))
    theirs = await client.get("/v1/users/u/profile", headers=other_tenant.admin)  # a user they never wrote
    assert theirs.status_code == 200 and theirs.json()["tiers"] == {}
    for method, path in [
        ("GET", f"/v1/users/u/profile/{e['id']}"),
        ("POST", f"/v1/users/u/profile/{e['id']}/confirm"),
        ("POST", f"/v1/users/u/profile/{e['id']}/reject"),
    ]:
        r = await client.request(method, path, headers=other_tenant.admin)
        assert r.status_code == 404, (method, path, r.text)
    # the other tenant's same belief is its own entry
    mine = await client.post(OBS, json=obs("s1"), headers=other_tenant.agent)
    assert mine.json()["id"] != e["id"] and mine.json()["evidence_count"] == 1
