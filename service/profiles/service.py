"""Profile rules: observations find or create their entry, append evidence, rescore it with the 4C model
and apply the immediate tier/status changes — all in the request's transaction, each change an event."""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from schemas.profiles import (
    ConfirmBody,
    EffectiveEntryRead,
    EffectiveProfileRead,
    EntryEvidence,
    ObservationCreate,
    ObservationRead,
    OverriddenRead,
    ProfileEntryRead,
    ProfileRead,
)
from schemas.users import EventRead
from scoring.fourc import Evidence, FourCWeights, score_4c
from scoring.items import from_the_future
from scoring.profile import EntryState, ProfileEntry, effective_profile, replay, transition, with_job_changes
from service.auth.service import Permission
from service.context import RequestContext
from service.errors import BatchItemInvalid, BatchTooLarge, EntryNotFound, ValidationFailed
from service.events import event, record_events
from service.ids import uuid7
from service.profiles import repository
from service.settings import Settings
from service.users import service as users


def weights(settings: Settings) -> FourCWeights:
    return FourCWeights(**settings.fourc.model_dump())


def identity(obs: ObservationCreate) -> tuple[str, str, str, str, str]:
    return (obs.domain or "", obs.dimension, obs.key, obs.value, obs.polarity)


def to_evidence(o: Mapping[str, Any]) -> Evidence:
    return Evidence(
        id=str(o["id"]),
        session_id=o["session_id"],
        context=o["context"],
        explicit=o["explicit"],
        supports=o["stance"] == "supports",
        confirmation=o["confirmation"],
        observed_at=o["observed_at"],
        weight=o["weight"],
    )


async def add_observations(
    ctx: RequestContext,
    *,
    user_id: str,
    observations: Sequence[ObservationCreate],
    batch: bool,
    permission: Permission = Permission.PROFILE_WRITE,
) -> list[ProfileEntryRead]:
    principal, settings, now = ctx.principal, ctx.settings, ctx.now
    principal.require(permission)
    if len(observations) > settings.max_batch_items:
        raise BatchTooLarge(
            f"a batch holds at most {settings.max_batch_items:,} observations (setting CTXMEM_MAX_BATCH_ITEMS), "
            f"got {len(observations):,}: split it"
        )
    for i, obs in enumerate(observations):
        if from_the_future(obs.observed_at, now=now):
            if batch:
                raise BatchItemInvalid(f"observations[{i}]: observed_at is in the future", index=i)
            raise ValidationFailed("observed_at is in the future")
    tenant_id = principal.tenant_id
    await users.ensure_user(ctx, user_id=user_id)

    # Find or create each belief, then lock them all (in id order).
    fresh: dict[tuple[str, ...], dict[str, Any]] = {}
    for obs in observations:
        ident = identity(obs)
        if ident not in fresh:
            at = obs.observed_at or now
            fresh[ident] = {
                "id": uuid7(),
                "tenant_id": tenant_id,
                "user_id": user_id,
                "domain": obs.domain,
                "domain_key": ident[0],
                "dimension": obs.dimension,
                "key": obs.key,
                "value": obs.value,
                "polarity": obs.polarity,
                "tier": "current",
                "status": "active",
                "score": 0.0,
                "breakdown": {},
                "explicit": False,
                "evidence_count": 0,
                "current_session_id": obs.session_id,
                "confirmed_at": None,
                "first_evidence_at": at,
                "last_evidence_at": at,
                "last_supported_at": None,
                "expires_at": None,
                "created_at": now,
                "updated_at": now,
            }
    created = await repository.create_missing_entries(ctx.session, sorted(fresh.values(), key=lambda r: r["id"]))
    locked = await repository.lock_entries(ctx.session, tenant_id, user_id, list(fresh))
    entries = {tuple(r[c] for c in repository.IDENTITY): dict(r) for r in locked}
    by_id = {e["id"]: e for e in entries.values()}

    obs_rows = []
    for obs in observations:
        entry = entries[identity(obs)]
        obs_rows.append(
            {
                "id": uuid7(),
                "tenant_id": tenant_id,
                "user_id": user_id,
                "entry_id": entry["id"],
                "session_id": obs.session_id,
                "context": obs.context,
                "explicit": obs.explicit or obs.confirmation,
                "stance": obs.stance,
                "confirmation": obs.confirmation,
                "observed_at": obs.observed_at or now,
                "source": obs.source,
                "note": obs.note,
                "weight": obs.weight,
                "created_at": now,
            }
        )
    await repository.insert_observations(ctx.session, obs_rows)

    new_ids = {r["id"] for r in obs_rows}
    prior: dict[uuid.UUID, list[Evidence]] = defaultdict(list)
    all_ids: dict[uuid.UUID, list[uuid.UUID]] = defaultdict(list)
    for o in await repository.observations_for(ctx.session, tenant_id, [e["id"] for e in entries.values()]):
        all_ids[o["entry_id"]].append(o["id"])
        if o["id"] not in new_ids:
            prior[o["entry_id"]].append(to_evidence(o))

    # Entries that get evidence older than evidence they already have (or than an earlier one of this
    # request): their state is replayed from all evidence in observed_at order below, not stepped.
    late: set[uuid.UUID] = set()
    newest = {eid: max(e.observed_at for e in evs) for eid, evs in prior.items() if evs}
    for row in obs_rows:
        eid, at = row["entry_id"], row["observed_at"]
        if eid in newest and at < newest[eid]:
            late.add(eid)
        newest[eid] = max(newest.get(eid, at), at)
    start = {eid: _state(by_id[eid]) for eid in late}

    w = weights(settings)
    events: list[dict[str, Any]] = [
        event(
            ctx.principal,
            user_id=user_id,
            action="profile.created",
            entity_type="profile_entry",
            entity_id=e["id"],
            after=_state(e),
            now=ctx.now,
        )
        for e in entries.values()
        if e["id"] in created
    ]
    for row in obs_rows:
        entry = by_id[row["entry_id"]]
        ev = to_evidence(row)
        evidence = prior[entry["id"]]
        evidence.append(ev)
        scored = score_4c(evidence, now=now, weights=w)
        entry["score"], entry["breakdown"] = scored.score, scored.breakdown()
        entry["evidence_count"] = len(evidence)
        entry["first_evidence_at"] = min(entry["first_evidence_at"], ev.observed_at)
        entry["last_evidence_at"] = max(entry["last_evidence_at"], ev.observed_at)
        entry["updated_at"] = now
        events.append(_observation_event(ctx, user_id, row, entry, scored.score))
        if entry["id"] in late:
            continue
        before = _state(entry)
        step = transition(
            EntryState(entry["tier"], entry["status"]),
            ev,
            scored,
            candidate_min_sessions=settings.candidate_min_sessions,
        )
        entry["tier"], entry["status"] = step.tier, step.status
        if ev.supports:
            last = entry["last_supported_at"]
            entry["last_supported_at"] = ev.observed_at if last is None else max(last, ev.observed_at)
            if ev.explicit:
                entry["explicit"] = True
                entry["current_session_id"] = ev.session_id
            if ev.confirmation:
                entry["confirmed_at"] = now
        elif ev.explicit:
            entry["confirmed_at"] = None  # a denial withdraws an earlier confirmation
        if step.rule is not None and _state(entry) != before:
            events.append(
                event(
                    ctx.principal,
                    user_id=user_id,
                    action="profile.changed",
                    entity_type="profile_entry",
                    entity_id=entry["id"],
                    now=ctx.now,
                    rule=step.rule,
                    reason=step.reason,
                    before=before,
                    after=_state(entry),
                )
            )
    for eid in sorted(late):
        entry = by_id[eid]
        replayed = replay(prior[eid], candidate_min_sessions=settings.candidate_min_sessions)
        stored = EntryState(start[eid]["tier"], start[eid]["status"])
        state = with_job_changes(replayed, stored, decayed_at=entry.get("decayed_at"))
        entry["tier"], entry["status"] = state.tier, state.status
        entry["explicit"] = replayed.explicit
        entry["current_session_id"] = replayed.current_session_id
        entry["last_supported_at"] = replayed.last_supported_at
        if not replayed.confirmed:
            entry["confirmed_at"] = None
        elif entry["confirmed_at"] is None:
            entry["confirmed_at"] = now
        if _state(entry) != start[eid]:
            events.append(
                event(
                    ctx.principal,
                    user_id=user_id,
                    action="profile.changed",
                    entity_type="profile_entry",
                    entity_id=eid,
                    now=ctx.now,
                    rule="evidence-order",
                    reason="evidence older than the entry's latest: its state replayed in observed_at order",
                    before=start[eid],
                    after=_state(entry),
                )
            )
    await repository.update_entries(ctx.session, [_updatable(e) for e in entries.values()])
    await record_events(ctx.session, events)
    out = []
    for row in obs_rows:
        entry = by_id[row["entry_id"]]
        out.append(_read(entry, all_ids[entry["id"]]))
    return out


def _observation_event(
    ctx: RequestContext, user_id: str, row: Mapping[str, Any], entry: Mapping[str, Any], score: float
) -> dict[str, Any]:
    return event(
        ctx.principal,
        user_id=user_id,
        action="observation.added",
        entity_type="observation",
        entity_id=row["id"],
        now=ctx.now,
        reason=row["note"],
        after={
            "entry_id": str(entry["id"]),
            "stance": row["stance"],
            "explicit": row["explicit"],
            "confirmation": row["confirmation"],
            "session_id": row["session_id"],
            "context": row["context"],
            "score": score,
        },
    )


def _state(e: Mapping[str, Any]) -> dict[str, Any]:
    return {"tier": e["tier"], "status": e["status"]}


_UPDATABLE = (
    "tier",
    "status",
    "score",
    "breakdown",
    "explicit",
    "evidence_count",
    "current_session_id",
    "confirmed_at",
    "first_evidence_at",
    "last_evidence_at",
    "last_supported_at",
    "updated_at",
)


def _updatable(e: Mapping[str, Any]) -> dict[str, Any]:
    return {"id": e["id"], **{c: e[c] for c in _UPDATABLE}}


def _read(e: Mapping[str, Any], evidence_ids: Sequence[uuid.UUID] | None = None) -> ProfileEntryRead:
    """An entry as read; ``evidence_ids`` where the caller has them (writes, the entry's own page), else null:
    listings give ``evidence_count`` only."""
    ids = list(evidence_ids) if evidence_ids is not None else None
    return ProfileEntryRead.model_validate({**e, "evidence_ids": ids})


def _pure(e: Mapping[str, Any]) -> ProfileEntry:
    return ProfileEntry(
        id=str(e["id"]),
        domain=e["domain"],
        dimension=e["dimension"],
        key=e["key"],
        value=e["value"],
        polarity=e["polarity"],
        tier=e["tier"],
        status=e["status"],
        score=e["score"],
        explicit=e["explicit"],
        confirmed=e["confirmed_at"] is not None,
        current_session_id=e["current_session_id"],
        last_evidence_at=e["last_evidence_at"],
    )


def effective_for(
    rows: Sequence[Mapping[str, Any]], *, session_id: str | None, domains: Sequence[str] | None
) -> EffectiveProfileRead:
    by_id = {str(r["id"]): r for r in rows}
    eff = effective_profile([_pure(r) for r in rows], session_id=session_id, domains=domains)

    def entry(e: Any) -> EffectiveEntryRead:
        return EffectiveEntryRead(
            entry=_read(by_id[e.entry.id]), why=e.why, overrides=[uuid.UUID(o) for o in e.overrides]
        )

    return EffectiveProfileRead(
        session_id=session_id,
        domains=list(domains) if domains else None,
        entries=[entry(e) for e in eff.entries],
        constraints=[entry(e) for e in eff.constraints],
        hints=[_read(by_id[h.id]) for h in eff.hints],
        overridden=[OverriddenRead(id=uuid.UUID(a), by=uuid.UUID(b)) for a, b in eff.overridden],
    )


async def get_profile(
    ctx: RequestContext,
    *,
    user_id: str,
    domains: Sequence[str] | None,
    session_id: str | None,
    tiers: Sequence[str] | None,
) -> ProfileRead:
    principal = ctx.principal
    principal.require(Permission.ITEMS_READ)
    rows = await repository.user_entries(ctx.session, principal.tenant_id, user_id, tiers=None, domains=domains)
    grouped: dict[str, dict[str, list[ProfileEntryRead]]] = {}
    for r in rows:
        if tiers and r["tier"] not in tiers:
            continue
        grouped.setdefault(r["tier"], {}).setdefault(r["domain"] or "global", []).append(_read(r))
    return ProfileRead(tiers=grouped, effective=effective_for(rows, session_id=session_id, domains=domains))


async def get_evidence(ctx: RequestContext, *, user_id: str, entry_id: uuid.UUID) -> EntryEvidence:
    session, principal = ctx.session, ctx.principal
    principal.require(Permission.EVIDENCE_READ)
    row = await repository.entry(session, principal.tenant_id, user_id, entry_id)
    if row is None:
        raise EntryNotFound(f"no profile entry {entry_id} for user {user_id!r}")
    observations = await repository.observations_for(session, principal.tenant_id, [entry_id])
    events = await repository.entry_events(session, principal.tenant_id, [str(entry_id)])
    return EntryEvidence(
        entry=_read(row, [o["id"] for o in observations]),
        breakdown=row["breakdown"],
        observations=[ObservationRead.model_validate(o) for o in reversed(observations)],
        events=[EventRead.model_validate(e) for e in events],
    )


async def confirm_or_reject(
    ctx: RequestContext, *, user_id: str, entry_id: uuid.UUID, body: ConfirmBody | None, confirm: bool
) -> ProfileEntryRead:
    """Record the user's yes/no as an explicit confirmation observation on the entry (no body: no note,
    no session)."""
    body = body or ConfirmBody()
    ctx.principal.require(Permission.PROFILE_CONFIRM)
    row = await repository.entry(ctx.session, ctx.principal.tenant_id, user_id, entry_id)
    if row is None:
        raise EntryNotFound(f"no profile entry {entry_id} for user {user_id!r}")
    obs = ObservationCreate(
        domain=row["domain"],
        dimension=row["dimension"],
        key=row["key"],
        value=row["value"],
        polarity=row["polarity"],
        session_id=body.session_id,
        context=body.context,
        explicit=True,
        stance="supports" if confirm else "contradicts",
        confirmation=True,
        source="user",
        note=body.note or f"{'confirmed' if confirm else 'rejected'} by {ctx.principal.role} on the user's behalf",
    )
    (entry,) = await add_observations(
        ctx, user_id=user_id, observations=[obs], batch=False, permission=Permission.PROFILE_CONFIRM
    )
    return entry
