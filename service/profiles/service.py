"""Profile rules: observations find or create their entry, append evidence, rescore it with the 4C model
and apply the immediate tier/status changes — all in the request's transaction, each change an event."""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
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
from scoring.profile import (
    EntryState,
    ProfileEntry,
    Standing,
    after_evidence,
    effective_profile,
    out_of_order,
    replay,
    transition,
    with_job_changes,
)
from service.auth.principal import Permission
from service.context import RequestContext
from service.db.rows import from_row
from service.errors import BatchItemInvalid, EntryNotFound, ValidationFailed
from service.events import event, record_events
from service.ids import uuid7
from service.items.service import Provenance
from service.limits import check_batch
from service.profiles import repository
from service.users import service as users


def identity(obs: ObservationCreate) -> tuple[str, str, str, str, str]:
    return (obs.domain or "", obs.dimension, obs.key, obs.value, obs.polarity)


def to_evidence(o: Mapping[str, Any]) -> Evidence:
    return from_row(Evidence, o, id=str(o["id"]), supports=o["stance"] == "supports")


async def add_observations(
    ctx: RequestContext,
    *,
    user_id: str,
    observations: Sequence[ObservationCreate],
    batch: bool,
    permission: Permission = Permission.PROFILE_WRITE,
    provenance: Sequence[Provenance] | None = None,
) -> list[ProfileEntryRead]:
    """Record observations as evidence on the entries of their beliefs, in the request's transaction: each
    finds or creates its entry, which is rescored (4C) and stepped to its new tier and status — or, given
    evidence older than what it has, replayed from all of it. Every change is an event."""
    ctx.principal.require(permission)
    _check_observations(ctx, observations=observations, batch=batch)
    await users.ensure_user(ctx, user_id=user_id)
    w = _Write(ctx, user_id, ctx.settings.profiles.fourc.weights())
    entries, created = await _locked_entries(w, observations)
    by_id = {e["id"]: e for e in entries.values()}
    rows = [_observation_row(w, obs, entries[identity(obs)]["id"]) for obs in observations]
    if provenance is not None:
        for row, learned in zip(rows, provenance, strict=True):
            row["extracted_by"], row["evidence"] = learned.extracted_by, learned.evidence
    await repository.insert_observations(ctx.session, rows=rows)
    prior, evidence_ids = await _evidence(w, entry_ids=list(by_id), new_ids={r["id"] for r in rows})
    late = out_of_order(prior, [(r["entry_id"], r["observed_at"]) for r in rows])
    start = {eid: _state(by_id[eid]) for eid in late}

    events = [_created_event(w, e) for e in entries.values() if e["id"] in created]
    for row in rows:
        entry = by_id[row["entry_id"]]
        events += _add_evidence(w, entry, row, prior[entry["id"]], step=entry["id"] not in late)
    for eid in sorted(late):
        events += _replay(w, by_id[eid], prior[eid], start=start[eid])
    await repository.update_entries(
        ctx.session, tenant_id=ctx.principal.tenant_id, rows=[_updatable(e) for e in entries.values()]
    )
    await record_events(ctx.session, events)
    return [_read(by_id[r["entry_id"]], evidence_ids[r["entry_id"]]) for r in rows]


@dataclass(frozen=True)
class _Write:
    """One request's observations: its context, the user they are about, the 4C weights they are scored by."""

    ctx: RequestContext
    user_id: str
    weights: FourCWeights

    def event(self, action: str, entity_type: str, entity_id: Any, **fields: Any) -> dict[str, Any]:
        """An event of this write: by its principal, about its user, at its time."""
        by, now = self.ctx.principal, self.ctx.now
        return event(
            by, user_id=self.user_id, action=action, entity_type=entity_type, entity_id=entity_id, now=now, **fields
        )


def _check_observations(ctx: RequestContext, *, observations: Sequence[ObservationCreate], batch: bool) -> None:
    """What the schema cannot check: the batch size (CTXMEM_MAX_BATCH_ITEMS) and an ``observed_at`` not in
    the future (``scoring.items.from_the_future``); in a batch the first bad observation is named."""
    settings = ctx.settings
    check_batch(len(observations), limit=settings.limits.max_batch_items, of="observations")
    for i, obs in enumerate(observations):
        if from_the_future(obs.observed_at, now=ctx.now):
            if batch:
                raise BatchItemInvalid(f"observations[{i}]: observed_at is in the future", index=i)
            raise ValidationFailed("observed_at is in the future")


async def _locked_entries(
    w: _Write, observations: Sequence[ObservationCreate]
) -> tuple[dict[tuple[str, ...], dict[str, Any]], set[uuid.UUID]]:
    """The entry of each observation's belief (its identity: domain, dimension, key, value, polarity),
    created where missing — current, active, scored 0 — then all row-locked in id order, so that concurrent
    writers cannot deadlock. Returns them by identity, and the ids of those this write created."""
    fresh: dict[tuple[str, ...], dict[str, Any]] = {}
    for obs in observations:
        if identity(obs) not in fresh:
            fresh[identity(obs)] = _new_entry(w, obs)
    session, tenant_id = w.ctx.session, w.ctx.principal.tenant_id
    created = await repository.create_missing_entries(session, rows=sorted(fresh.values(), key=lambda r: r["id"]))
    locked = await repository.lock_entries(session, tenant_id=tenant_id, user_id=w.user_id, identities=list(fresh))
    return {tuple(r[c] for c in repository.IDENTITY): dict(r) for r in locked}, created


def _new_entry(w: _Write, obs: ObservationCreate) -> dict[str, Any]:
    now = w.ctx.now
    at = obs.observed_at or now
    return {
        "id": uuid7(),
        "tenant_id": w.ctx.principal.tenant_id,
        "user_id": w.user_id,
        "domain": obs.domain,
        "domain_key": identity(obs)[0],
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


def _observation_row(w: _Write, obs: ObservationCreate, entry_id: uuid.UUID) -> dict[str, Any]:
    """The stored observation: a confirmation is explicit, and ``observed_at`` defaults to now."""
    now = w.ctx.now
    return {
        "id": uuid7(),
        "tenant_id": w.ctx.principal.tenant_id,
        "user_id": w.user_id,
        "entry_id": entry_id,
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
        "extracted_by": None,
        "evidence": None,
    }


async def _evidence(
    w: _Write, *, entry_ids: Sequence[uuid.UUID], new_ids: set[uuid.UUID]
) -> tuple[dict[uuid.UUID, list[Evidence]], dict[uuid.UUID, list[uuid.UUID]]]:
    """Each entry's evidence in observed_at order: as the scorer sees it, what the entry had before this
    write (whose observations ``new_ids`` are added one at a time), and the ids of all of it."""
    prior: dict[uuid.UUID, list[Evidence]] = defaultdict(list)
    all_ids: dict[uuid.UUID, list[uuid.UUID]] = defaultdict(list)
    for o in await repository.observations_for(w.ctx.session, tenant_id=w.ctx.principal.tenant_id, entry_ids=entry_ids):
        all_ids[o["entry_id"]].append(o["id"])
        if o["id"] not in new_ids:
            prior[o["entry_id"]].append(to_evidence(o))
    return prior, all_ids


def _add_evidence(
    w: _Write, entry: dict[str, Any], row: Mapping[str, Any], evidence: list[Evidence], *, step: bool
) -> list[dict[str, Any]]:
    """One observation added to its entry's ``evidence``: the entry is rescored with it (``score_4c``) and,
    when ``step`` (its evidence arrives in order), moved to the tier and status ``transition`` gives and the
    standing ``after_evidence`` gives. Returns the observation's event and, if the state moved by a rule,
    the entry's."""
    now = w.ctx.now
    ev = to_evidence(row)
    evidence.append(ev)
    scored = score_4c(evidence, now=now, weights=w.weights)
    entry["score"], entry["breakdown"] = scored.score, scored.breakdown()
    entry["evidence_count"] = len(evidence)
    entry["first_evidence_at"] = min(entry["first_evidence_at"], ev.observed_at)
    entry["last_evidence_at"] = max(entry["last_evidence_at"], ev.observed_at)
    entry["updated_at"] = now
    events = [_observation_event(w, row, entry, scored.score)]
    if not step:
        return events
    before = _state(entry)
    state = EntryState(entry["tier"], entry["status"])
    moved = transition(state, ev, scored, candidate_min_sessions=w.ctx.settings.profiles.candidate_min_sessions)
    entry["tier"], entry["status"] = moved.tier, moved.status
    standing = after_evidence(from_row(Standing, entry, confirmed=entry["confirmed_at"] is not None), ev)
    entry["explicit"] = standing.explicit
    entry["current_session_id"] = standing.current_session_id
    entry["last_supported_at"] = standing.last_supported_at
    if not standing.confirmed:
        entry["confirmed_at"] = None
    elif ev.supports and ev.confirmation:
        entry["confirmed_at"] = now  # a confirmation dates it, a repeated one again
    if moved.rule is not None and _state(entry) != before:
        events.append(_changed_event(w, entry, moved.rule, moved.reason, before))
    return events


def _replay(
    w: _Write, entry: dict[str, Any], evidence: Sequence[Evidence], *, start: dict[str, Any]
) -> list[dict[str, Any]]:
    """An entry that got evidence out of order: its tier, status and standing re-derived from all its
    evidence (``replay``), the jobs' changes to its ``start`` state kept unless the evidence overturns them
    (``with_job_changes``). Returns its event if its state moved."""
    replayed = replay(evidence, candidate_min_sessions=w.ctx.settings.profiles.candidate_min_sessions)
    stored = EntryState(start["tier"], start["status"])
    state = with_job_changes(replayed, stored, decayed_at=entry.get("decayed_at"))
    entry["tier"], entry["status"] = state.tier, state.status
    entry["explicit"] = replayed.explicit
    entry["current_session_id"] = replayed.current_session_id
    entry["last_supported_at"] = replayed.last_supported_at
    if not replayed.confirmed:
        entry["confirmed_at"] = None
    elif entry["confirmed_at"] is None:
        entry["confirmed_at"] = w.ctx.now
    if _state(entry) == start:
        return []
    reason = "evidence older than the entry's latest: its state replayed in observed_at order"
    return [_changed_event(w, entry, "evidence-order", reason, start)]


def _created_event(w: _Write, entry: Mapping[str, Any]) -> dict[str, Any]:
    return w.event("profile.created", "profile_entry", entry["id"], after=_state(entry))


def _changed_event(w: _Write, entry: Mapping[str, Any], rule: str, reason: str, before: Any) -> dict[str, Any]:
    """An entry's tier or status moved from ``before`` to what it is now, by ``rule``."""
    after = _state(entry)
    return w.event(
        "profile.changed", "profile_entry", entry["id"], rule=rule, reason=reason, before=before, after=after
    )


def _observation_event(w: _Write, row: Mapping[str, Any], entry: Mapping[str, Any], score: float) -> dict[str, Any]:
    after = {
        "entry_id": str(entry["id"]),
        "stance": row["stance"],
        "explicit": row["explicit"],
        "confirmation": row["confirmation"],
        "session_id": row["session_id"],
        "context": row["context"],
        "score": score,
    }
    return w.event("observation.added", "observation", row["id"], reason=row["note"], after=after)


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


def pure_entry(e: Mapping[str, Any]) -> ProfileEntry:
    """A profile entry row as ``scoring.profile``'s value: what the effective profile of reads and windows is
    computed from."""
    return from_row(ProfileEntry, e, id=str(e["id"]), confirmed=e["confirmed_at"] is not None)


def effective_for(
    rows: Sequence[Mapping[str, Any]], *, session_id: str | None, domains: Sequence[str] | None
) -> EffectiveProfileRead:
    by_id = {str(r["id"]): r for r in rows}
    eff = effective_profile([pure_entry(r) for r in rows], session_id=session_id, domains=domains)

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
    rows = await repository.user_entries(
        ctx.session, tenant_id=principal.tenant_id, user_id=user_id, tiers=None, domains=domains
    )
    grouped: dict[str, dict[str, list[ProfileEntryRead]]] = {}
    for r in rows:
        if tiers and r["tier"] not in tiers:
            continue
        grouped.setdefault(r["tier"], {}).setdefault(r["domain"] or "global", []).append(_read(r))
    return ProfileRead(tiers=grouped, effective=effective_for(rows, session_id=session_id, domains=domains))


async def get_evidence(ctx: RequestContext, *, user_id: str, entry_id: uuid.UUID) -> EntryEvidence:
    session, principal = ctx.session, ctx.principal
    principal.require(Permission.EVIDENCE_READ)
    row = await repository.entry(session, tenant_id=principal.tenant_id, user_id=user_id, entry_id=entry_id)
    if row is None:
        raise EntryNotFound(f"no profile entry {entry_id} for user {user_id!r}")
    observations = await repository.observations_for(session, tenant_id=principal.tenant_id, entry_ids=[entry_id])
    events = await repository.entry_events(session, tenant_id=principal.tenant_id, entity_ids=[str(entry_id)])
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
    row = await repository.entry(ctx.session, tenant_id=ctx.principal.tenant_id, user_id=user_id, entry_id=entry_id)
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
