"""The scheduled jobs on a real PostgreSQL with a simulated clock (docs/design.md §3.5)."""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from sqlalchemy import text

from jobs.runner import run_job
from scoring.fourc import Evidence, FourCWeights, promotable, score_4c
from scoring.profile import (
    DECAYING_STATUSES,
    TIER_ORDER,
    EntryState,
    decay_period_days,
    decay_period_days_sql,
    decay_step,
    decayed_score,
)
from service.clock import FixedClock
from service.console.session import sign_in as console_sign_in
from service.db.engine import Database, session_scope
from service.settings import FourCSettings, Settings
from tests.conftest import TenantKeys

T0 = datetime(2026, 6, 1, tzinfo=UTC)


def obs(session: str, day: float, **kw: Any) -> dict[str, Any]:
    body = {
        "dimension": "preference",
        "key": "brand",
        "value": "xiaomi",
        "domain": "phone",
        "session_id": session,
        "context": "buy_phone",
        "observed_at": (T0 + timedelta(days=day)).isoformat(),
    }
    body.update(kw)
    return {k: v for k, v in body.items() if v is not None}


async def add(
    client: httpx.AsyncClient, tenant: TenantKeys, items: list[dict[str, Any]], user: str = "j"
) -> list[dict[str, Any]]:
    r = await client.post(f"/v1/users/{user}/observations/batch", json={"observations": items}, headers=tenant.agent)
    assert r.status_code == 201, r.text
    return list(r.json()["items"])


async def entry(client: httpx.AsyncClient, tenant: TenantKeys, entry_id: str, user: str = "j") -> dict[str, Any]:
    r = await client.get(f"/v1/users/{user}/profile/{entry_id}", headers=tenant.operator)
    return dict(r.json()["entry"])


async def run(name: str, db: Database, settings: Settings, tenant: TenantKeys, at: datetime, **kw: Any) -> Any:
    result = await run_job(name, db=db, settings=settings, clock=FixedClock(at), tenant_id=tenant.tenant_id, **kw)
    assert result.status == "succeeded", result
    return result


async def test_promotes_case4_not_case1(
    client: httpx.AsyncClient, tenant: TenantKeys, db: Database, settings: Settings
) -> None:
    ctx = ["buy_phone", "compare", "repair"]
    case4 = (await add(client, tenant, [obs(f"a{i}", i * 20, context=ctx[i % 3]) for i in range(6)]))[-1]
    case1 = (await add(client, tenant, [obs(f"b{i}", i * 7, value="oppo") for i in range(3)]))[-1]
    assert case4["tier"] == case1["tier"] == "candidate"
    result = await run("promote", db, settings, tenant, T0 + timedelta(days=120))
    assert result.rows == {"entries_promoted": 1, "candidates_examined": 2}
    promoted = await entry(client, tenant, case4["id"])
    assert promoted["tier"] == "long_term" and promoted["score"] >= 60
    assert promoted["breakdown"]["sessions"] == 6 and len(promoted["breakdown"]["evidence_ids"]) == 6
    assert (await entry(client, tenant, case1["id"]))["tier"] == "candidate"
    # the event names the rule and the run
    async with db.engine.connect() as conn:
        ev = (
            await conn.execute(
                text("SELECT rule, run_id, actor FROM event WHERE entity_id = :e AND rule = 'promotion'"),
                {"e": case4["id"]},
            )
        ).one()
    assert ev.run_id == result.run_id and ev.actor == "job:promote"
    again = await run("promote", db, settings, tenant, T0 + timedelta(days=120))
    assert again.rows["entries_promoted"] == 0


async def test_decay_after_90_silent_days_not_89(
    client: httpx.AsyncClient, tenant: TenantKeys, db: Database, settings: Settings
) -> None:
    (e,) = await add(client, tenant, [obs("s1", 0, explicit=True, confirmation=True)])
    assert (e["tier"], e["status"]) == ("long_term", "active")
    r89 = await run("decay", db, settings, tenant, T0 + timedelta(days=89))
    assert r89.rows == {"entries_decayed": 0}
    r90 = await run("decay", db, settings, tenant, T0 + timedelta(days=90))
    assert r90.rows == {"entries_decayed": 1}
    after = await entry(client, tenant, e["id"])
    assert (after["tier"], after["status"]) == ("long_term", "weakened")
    assert after["score"] == pytest.approx(e["score"] * 0.5, abs=0.01)
    # a rerun as of the same time changes nothing; the next step needs another silent period
    assert (await run("decay", db, settings, tenant, T0 + timedelta(days=90))).rows == {"entries_decayed": 0}
    assert (await run("decay", db, settings, tenant, T0 + timedelta(days=179))).rows == {"entries_decayed": 0}
    await run("decay", db, settings, tenant, T0 + timedelta(days=180))
    assert ((x := await entry(client, tenant, e["id"]))["tier"], x["status"]) == ("candidate", "active")
    await run("decay", db, settings, tenant, T0 + timedelta(days=270))
    assert (await entry(client, tenant, e["id"]))["status"] == "expired"
    assert (await run("decay", db, settings, tenant, T0 + timedelta(days=999))).rows == {"entries_decayed": 0}


@pytest.mark.parametrize("factor", [0.5, 0.37])
async def test_sql_decay_matches_the_python_step(
    client: httpx.AsyncClient, tenant: TenantKeys, db: Database, settings: Settings, factor: float
) -> None:
    """The decay job moves entries in SQL; every (tier, status) must land where scoring.profile.decay_step
    and decayed_score put it (statuses that do not decay stay as they are)."""
    states = [(tier, status) for tier in TIER_ORDER for status in ("active", "weakened", "expired", "rejected")]
    ids = {}
    for n, state in enumerate(states):
        (e,) = await add(client, tenant, [obs("s1", 0, key=f"k{n}")], user="decay-parity")
        ids[state] = e["id"]
    async with db.engine.begin() as conn:
        for (tier, status), entry_id in ids.items():
            await conn.execute(
                text("UPDATE profile_entry SET tier = :t, status = :s, score = 47.35 WHERE id = :i"),
                {"t": tier, "s": status, "i": entry_id},
            )
    custom = settings.replace(decay_score_factor=factor)
    result = await run("decay", db, custom, tenant, T0 + timedelta(days=custom.profiles.decay_days))
    decaying = [state for state in states if state[1] in DECAYING_STATUSES]
    assert result.rows == {"entries_decayed": len(decaying)} and len(decaying) == 6
    for state, entry_id in ids.items():
        got = await entry(client, tenant, entry_id, user="decay-parity")
        step = decay_step(EntryState(*state))
        assert (got["tier"], got["status"]) == (step.tier, step.status), state
        moved = state in decaying
        assert got["score"] == (decayed_score(47.35, factor=factor) if moved else 47.35), state


async def test_only_the_stale_domain_decays(
    client: httpx.AsyncClient, tenant: TenantKeys, db: Database, settings: Settings
) -> None:
    (fin,) = await add(client, tenant, [obs("s1", 0, domain="finance", key="risk", value="low", confirmation=True)])
    (code,) = await add(client, tenant, [obs("s1", 0, domain="coding", key="lang", value="rust", confirmation=True)])
    await add(client, tenant, [obs("s2", 60, domain="coding", key="lang", value="rust")])
    await run("decay", db, settings, tenant, T0 + timedelta(days=100))
    assert (await entry(client, tenant, fin["id"]))["status"] == "weakened"
    assert (await entry(client, tenant, code["id"]))["status"] == "active"
    # per-domain periods: coding may stay silent for a year
    custom = settings.replace(decay_days_overrides={"coding": 365, "finance.preference": 30})
    await run("decay", db, custom, tenant, T0 + timedelta(days=200))
    assert (await entry(client, tenant, code["id"]))["status"] == "active"


async def test_sql_decay_period_matches_the_python_lookup(db: Database) -> None:
    """The decay job's period lookup is rendered from scoring.profile.decay_period_days; both give each entry the
    same days, whichever keys the overrides name."""
    overrides = {"finance.preference": 30, "finance": 60, "preference": 120, ".ability": 7}
    pairs = [(d, m) for d in ("finance", "coding", "") for m in ("preference", "ability", "fact")]
    expr = decay_period_days_sql(
        columns={"domain_key": "e.domain_key", "dimension": "e.dimension"},
        overrides="CAST(:periods AS jsonb)",
        default_days="CAST(:default_days AS int)",
    )
    values = ", ".join(f"('{d}', '{m}')" for d, m in pairs)
    async with db.engine.connect() as conn:
        rows = await conn.execute(
            text(f"SELECT e.domain_key, e.dimension, {expr} FROM (VALUES {values}) AS e(domain_key, dimension)"),
            {"periods": json.dumps(overrides), "default_days": 90},
        )
        got = {(d, m): days for d, m, days in rows}
    assert got == {
        (d, m): decay_period_days(domain_key=d, dimension=m, overrides=overrides, default_days=90) for d, m in pairs
    }
    assert set(got.values()) == {30, 60, 120, 7, 90}


async def test_expire_tool_result_after_ttl(
    client: httpx.AsyncClient, tenant: TenantKeys, db: Database, settings: Settings
) -> None:
    r = await client.post(
        "/v1/users/j/items", json={"type": "tool_result", "content": "QPS 50k", "source": "tool"}, headers=tenant.agent
    )
    item = r.json()
    written = datetime.fromisoformat(item["observed_at"].replace("Z", "+00:00"))
    early = await run("expire", db, settings, tenant, written + timedelta(minutes=29))
    assert early.rows["items_expired"] == 0
    late = await run("expire", db, settings, tenant, written + timedelta(minutes=31))
    assert late.rows["items_expired"] == 1
    got = (await client.get(f"/v1/users/j/items/{item['id']}", headers=tenant.agent)).json()
    assert got["status"] == "expired"
    assert (await run("expire", db, settings, tenant, written + timedelta(minutes=31))).rows["items_expired"] == 0
    async with db.engine.connect() as conn:
        ev = (
            await conn.execute(
                text("SELECT rule, run_id FROM event WHERE entity_id = :e AND action = 'item.expired'"),
                {"e": item["id"]},
            )
        ).all()
    assert [(e.rule, e.run_id) for e in ev] == [("expiry", late.run_id)]


async def test_purge_tombstones_past_retention(
    client: httpx.AsyncClient, tenant: TenantKeys, db: Database, settings: Settings
) -> None:
    item = (await client.post("/v1/users/j/items", json={"type": "fact", "content": "x"}, headers=tenant.agent)).json()
    await client.delete(f"/v1/users/j/items/{item['id']}", headers=tenant.agent)
    now = datetime.now(UTC)
    assert (await run("purge", db, settings, tenant, now + timedelta(days=29))).rows["items_purged"] == 0
    assert (await run("purge", db, settings, tenant, now + timedelta(days=31))).rows["items_purged"] == 1
    r = await client.get(f"/v1/users/j/items/{item['id']}", headers=tenant.agent)
    assert r.status_code == 404


async def test_purge_deletes_console_sessions_idle_past_their_expiry(
    tenant: TenantKeys, other_tenant: TenantKeys, db: Database, settings: Settings
) -> None:
    signed_in = datetime(2026, 9, 1, tzinfo=UTC)
    idle = settings.console.idle_minutes
    async with session_scope(db) as s:
        for keys in (tenant, other_tenant):
            secret = keys.operator["Authorization"].removeprefix("Bearer ")
            await console_sign_in(s, api_key=secret, now=signed_in, idle_minutes=idle)

    async def sessions() -> dict[str, int]:
        async with db.engine.connect() as conn:
            rows = await conn.execute(
                text("SELECT tenant_id, count(*) FROM console_session WHERE tenant_id = ANY(:t) GROUP BY tenant_id"),
                {"t": [tenant.tenant_id, other_tenant.tenant_id]},
            )
            return {r[0]: r[1] for r in rows}

    early = await run("purge", db, settings, tenant, signed_in + timedelta(minutes=idle - 1))
    assert early.rows["console_sessions_purged"] == 0
    late = await run("purge", db, settings, tenant, signed_in + timedelta(minutes=idle + 1))
    assert late.rows["console_sessions_purged"] == 1
    assert await sessions() == {other_tenant.tenant_id: 1}  # the run was the tenant's own


async def test_jobs_stay_inside_the_tenant(
    client: httpx.AsyncClient, tenant: TenantKeys, other_tenant: TenantKeys, db: Database, settings: Settings
) -> None:
    (mine,) = await add(client, tenant, [obs("s1", 0, confirmation=True)])
    (theirs,) = await add(client, other_tenant, [obs("s1", 0, confirmation=True)])
    await run("decay", db, settings, tenant, T0 + timedelta(days=100))
    assert (await entry(client, tenant, mine["id"]))["status"] == "weakened"
    assert (await entry(client, other_tenant, theirs["id"]))["status"] == "active"


PARITY_SETTINGS = [
    pytest.param({}, id="defaults"),
    pytest.param(
        {
            "fourc": FourCSettings(
                count_points=40,
                count_saturation_sessions=4,
                continuity_points=20,
                continuity_saturation_days=30,
                cross_context_points=10,
                cross_context_saturation=2,
                confirmation_points=30,
                explicit_points=25,
                inferred_points=7,
                inferred_saturation_sessions=2,
                contradiction_penalty=9,
                explicit_contradiction_penalty=33,
            ),
            "candidate_min_sessions": 3,
        },
        id="other-weights-and-sessions",
    ),
]


@pytest.mark.parametrize("changes", PARITY_SETTINGS)
async def test_sql_4c_matches_the_python_scorer(
    client: httpx.AsyncClient, tenant: TenantKeys, db: Database, settings: Settings, changes: dict[str, Any]
) -> None:
    """The promotion job scores in SQL; it must agree with scoring/fourc.py part by part (to the rounding of a
    part) and promote exactly the entries ``promotable`` names, under the default weights and others."""
    rnd = random.Random(5)
    entries = []
    for n in range(16):
        batch = [
            obs(
                f"s{rnd.randint(1, 6)}",
                rnd.uniform(0, 150),
                value=f"v{n}",
                context=rnd.choice(["a", "b", "c", "d"]),
                explicit=rnd.random() < 0.2,
                stance="contradicts" if rnd.random() < 0.15 else "supports",
                weight=rnd.choice([1.0, 0.5, 0.8]),
            )
            for _ in range(rnd.randint(2, 9))
        ]
        entries.append((await add(client, tenant, batch, user="parity"))[-1])
    now = T0 + timedelta(days=200)
    # Half of the candidates reach the threshold, so the threshold itself is tested too.
    cut = settings.replace(long_term_threshold=0.0, **changes)
    weights = FourCWeights(**cut.profiles.fourc.model_dump())
    scored = {}
    async with db.engine.connect() as conn:
        for e in entries:
            evidence = (
                (await conn.execute(text("SELECT * FROM observation WHERE entry_id = :i"), {"i": e["id"]}))
                .mappings()
                .all()
            )
            scored[e["id"]] = score_4c(
                [
                    Evidence(
                        str(o["id"]),
                        o["session_id"],
                        o["context"],
                        o["explicit"],
                        o["stance"] == "supports",
                        o["confirmation"],
                        o["observed_at"],
                        o["weight"],
                    )
                    for o in evidence
                ],
                now=now,
                weights=weights,
            )
    candidates = [e for e in entries if (e["tier"], e["status"]) == ("candidate", "active")]
    threshold = sorted(scored[e["id"]].score for e in candidates)[len(candidates) // 2]
    cut = cut.replace(long_term_threshold=threshold)
    result = await run("promote", db, cut, tenant, now)

    expected = {
        e["id"]
        for e in candidates
        if promotable(scored[e["id"]], threshold=threshold, min_sessions=cut.profiles.candidate_min_sessions)
    }
    promoted = set()
    async with db.engine.connect() as conn:
        for e in candidates:
            row = (
                await conn.execute(
                    text("SELECT tier, score, breakdown FROM profile_entry WHERE id = :i"), {"i": e["id"]}
                )
            ).one()
            if row.tier != "long_term":
                continue
            promoted.add(e["id"])
            py = scored[e["id"]].breakdown()
            assert row.score == pytest.approx(py["score"], abs=0.05), (e["id"], row.breakdown, py)
            for part in ("count", "continuity", "cross_context", "confirmation", "penalty", "span_days"):
                assert row.breakdown[part] == pytest.approx(py[part], abs=0.011), (part, row.breakdown, py)
            for exact in ("sessions", "contexts", "contradicting_sessions", "evidence_ids"):
                assert row.breakdown[exact] == py[exact], (exact, row.breakdown, py)
    assert promoted == expected
    assert result.rows == {"entries_promoted": len(expected), "candidates_examined": len(candidates)}
    # Both sides of both rules are exercised: promoted, below the threshold, short of sessions.
    assert len(expected) >= 3
    assert any(scored[e["id"]].score < threshold for e in candidates)
    if changes:
        assert any(
            scored[e["id"]].score >= threshold and scored[e["id"]].sessions < cut.profiles.candidate_min_sessions
            for e in candidates
        )
