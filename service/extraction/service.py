"""Extraction rules: a batch of messages goes to the extractor; its proposals are checked against the
guarantees of ``scoring/extraction.py``; what passes is written through the items' own write path (so
conflict resolution decides replaced, reinforced or superseded) and, for preferences and goals, as profile
observations — all in the caller's transaction, each rejection an event, the messages marked extracted.

Stored conversations are extracted by session (``extract_session``: the extract job, the on-demand route,
a session's end); messages sent in a request body by ``extract_messages``.
"""

from __future__ import annotations

import logging
import uuid
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

from pydantic import ValidationError

from schemas.extraction import ExtractedRecord, ExtractionResult, ExtractRequest, RejectedRecord
from schemas.items import Evidence, ItemCreate, ItemRead
from schemas.profiles import ObservationCreate, ProfileEntryRead
from scoring.extraction import Grounded, Message, Proposal, Rejected, check, message_text, normalize
from service.auth.principal import Permission, Principal
from service.context import RequestContext
from service.errors import ExtractionCapReached, ExtractionOff, ExtractorUnavailableError
from service.events import event, record_events
from service.extraction import repository
from service.extraction.base import Extractor, ExtractorUnavailable, Proposals, Usage
from service.items.service import Provenance, write_items
from service.profiles.service import add_observations
from service.users import service as users
from service.vectors.repository import enqueue_sync

log = logging.getLogger("ctxmem.extraction")

# Where a learned record applies: what the user states about themselves holds everywhere for them; a
# decision ("let's go with plan A") is the conversation's, not a standing rule for every later task.
SESSION_TYPES = frozenset({"decision"})
# Profile evidence from a request with no session_id counts as this one session (docs/extraction.md).
NO_SESSION = "extract"
# The messages of a session extracted in one transaction: a backlog is worked through in such pages.
PAGE = 200


class Metrics(Protocol):
    def observe_batch(
        self, *, written: dict[str, int], rejected: dict[str, int], reinforced: int, usage: Usage
    ) -> None: ...

    def observe_waiting(self, *, usage: Usage) -> None: ...


@dataclass(frozen=True)
class JobPrincipal(Principal):
    """The author of what a job writes: a tenant's admin with no key behind it."""

    job: str = "extract"

    @property
    def actor(self) -> str:
        return f"job:{self.job}"


def job_principal(tenant_id: str) -> JobPrincipal:
    return JobPrincipal(tenant_id=tenant_id, key_id=uuid.UUID(int=0), role="admin")


@dataclass(frozen=True)
class _Msg:
    """A message of a batch: its place in the batch, role and text, and where it is stored (if it is)."""

    index: int
    role: str
    text: str
    id: uuid.UUID | None
    session_id: str | None
    at: datetime | None


@dataclass
class _Outcome:
    records: list[ExtractedRecord] = field(default_factory=list)
    profile: list[ProfileEntryRead] = field(default_factory=list)
    rejected: list[RejectedRecord] = field(default_factory=list)

    def merge(self, other: _Outcome) -> None:
        self.records += other.records
        self.profile += other.profile
        self.rejected += other.rejected


async def extract_messages(
    ctx: RequestContext,
    *,
    user_id: str,
    body: ExtractRequest,
    extractor: Extractor | None,
    metrics: Metrics | None = None,
) -> ExtractionResult:
    """Learn from messages sent in the body (not stored); with ``dry_run``, write nothing and say what would
    be written and what was rejected."""
    ctx.principal.require(Permission.ITEMS_WRITE)
    ready = _ready(extractor)
    batch = [
        _Msg(i, m.role, message_text(m.model_dump(exclude_none=True)), None, body.session_id, None)
        for i, m in enumerate(body.messages)
    ]
    if not body.dry_run:
        await users.ensure_user(ctx, user_id=user_id)
    outcome = await _learn(ctx, user_id=user_id, batch=batch, extractor=ready, dry_run=body.dry_run, metrics=metrics)
    return _result(ready, outcome, dry_run=body.dry_run, messages=len(batch), waiting=0)


async def extract_session(
    ctx: RequestContext,
    *,
    user_id: str,
    session_id: str,
    extractor: Extractor | None,
    reextract: bool = False,
    wait: bool = True,
    metrics: Metrics | None = None,
) -> ExtractionResult | None:
    """Extract what waits in a stored session now, page by page, in the caller's transaction. Without
    ``wait``, a session another transaction is extracting is left to it (None). With ``reextract``, the
    messages an older extractor version extracted are extracted again and that version's records from them
    superseded."""
    ctx.principal.require(Permission.ITEMS_WRITE)
    ready = _ready(extractor)
    tenant_id = ctx.principal.tenant_id
    if not await repository.lock_session(
        ctx.session, tenant_id=tenant_id, user_id=user_id, session_id=session_id, wait=wait
    ):
        return None
    outcome, done, unavailable = _Outcome(), 0, None
    other_than = ready.version if reextract else None
    while True:
        rows = await repository.waiting(
            ctx.session, tenant_id=tenant_id, user_id=user_id, session_id=session_id, limit=PAGE, other_than=other_than
        )
        if not rows:
            break
        batch = [
            _Msg(i, str(r.message.get("role", "")), message_text(r.message), r.id, session_id, r.created_at)
            for i, r in enumerate(rows)
        ]
        try:
            learned = await _learn(ctx, user_id=user_id, batch=batch, extractor=ready, dry_run=False, metrics=metrics)
        except (ExtractorUnavailableError, ExtractionCapReached) as exc:
            # Stored messages simply wait: the answer says why, and what failed calls spent is kept (it counts).
            unavailable = exc.detail
            break
        outcome.merge(learned)
        await repository.mark_extracted(
            ctx.session, tenant_id=tenant_id, ids=[r.id for r in rows], version=ready.version, now=ctx.now
        )
        done += len(rows)
        if len(rows) < PAGE:
            break
    if done:
        await repository.drop_ended(ctx.session, tenant_id=tenant_id, user_id=user_id, session_id=session_id)
        await _record(
            ctx, user_id=user_id, session_id=session_id, version=ready.version, messages=done, outcome=outcome
        )
    left = await repository.count_waiting(ctx.session, tenant_id=tenant_id, user_id=user_id, session_id=session_id)
    result = _result(ready, outcome, dry_run=False, messages=done, waiting=left)
    return result.model_copy(update={"unavailable": unavailable}) if unavailable else result


def _ready(extractor: Extractor | None) -> Extractor:
    if extractor is None:
        raise ExtractionOff(
            "extraction is off on this service (CTXMEM_EXTRACTOR=off): stored messages wait until an operator "
            "sets CTXMEM_EXTRACTOR=rules or llm"
        )
    return extractor


def _result(extractor: Extractor, outcome: _Outcome, *, dry_run: bool, messages: int, waiting: int) -> ExtractionResult:
    return ExtractionResult(
        extracted_by=extractor.version,
        dry_run=dry_run,
        messages=messages,
        waiting=waiting,
        records=outcome.records,
        profile=outcome.profile,
        rejected=outcome.rejected,
    )


async def _propose(
    ctx: RequestContext, extractor: Extractor, messages: Sequence[Message], metrics: Metrics | None
) -> Proposals:
    """The extractor's proposals, within the tenant's daily token cap; what a language model spent (also on
    failed calls) is added to the tenant's day."""
    tenant_id = ctx.principal.tenant_id
    cap = ctx.settings.extraction.daily_token_cap
    today = ctx.now.astimezone(UTC).date()
    if extractor.name == "llm" and cap:
        spent = await repository.tokens_spent(ctx.session, tenant_id=tenant_id, day=today)
        if spent >= cap:
            midnight = datetime.combine(today + timedelta(days=1), datetime.min.time(), tzinfo=UTC)
            raise ExtractionCapReached(
                f"tenant {tenant_id!r} spent {spent:,} of its {cap:,} extraction tokens today (setting "
                "CTXMEM_EXTRACTOR_DAILY_TOKEN_CAP); the messages wait until the cap resets at 00:00 UTC",
                retry_after=(midnight - ctx.now).total_seconds(),
            )
    try:
        proposals = await extractor.propose(messages, tenant_id=tenant_id)
    except ExtractorUnavailable as exc:
        await _spend(ctx, exc.usage, today)
        if metrics is not None:
            metrics.observe_waiting(usage=exc.usage)
        raise ExtractorUnavailableError(f"{exc}; nothing was extracted and the messages wait", retry_after=60) from exc
    await _spend(ctx, proposals.usage, today)
    return proposals


async def _spend(ctx: RequestContext, usage: Usage, today: Any) -> None:
    if usage.calls:
        await repository.add_usage(
            ctx.session,
            tenant_id=ctx.principal.tenant_id,
            day=today,
            calls=usage.calls,
            prompt_tokens=usage.prompt_tokens,
            completion_tokens=usage.completion_tokens,
        )


async def _learn(
    ctx: RequestContext,
    *,
    user_id: str,
    batch: Sequence[_Msg],
    extractor: Extractor,
    dry_run: bool,
    metrics: Metrics | None,
) -> _Outcome:
    """One batch: propose, check, write (unless ``dry_run``)."""
    messages = [Message(m.index, m.role, m.text) for m in batch]
    proposals = await _propose(ctx, extractor, messages, metrics)
    stored = [m.id for m in batch if m.id is not None]
    if stored and not dry_run:  # only once the new version has answered: an outage retires nothing
        await _retire_older(ctx, user_id=user_id, ids=stored, version=extractor.version)
    out = _Outcome()
    out.rejected += [_rejection(None, "malformed", reason, batch) for reason in proposals.unreadable]
    accepted: list[tuple[Grounded, ItemCreate, dict[str, Any]]] = []
    seen: set[tuple[str, str]] = set()
    for p in proposals.items:
        verdict = check(p, messages)
        if isinstance(verdict, Rejected):
            out.rejected.append(_rejection(p, verdict.reason, verdict.detail, batch))
            continue
        same = (verdict.key, normalize(verdict.content).casefold())
        if same in seen:  # one statement proposed twice in a batch is one record
            continue
        try:
            item, evidence = _item(ctx, verdict, batch[_position(batch, p.message_index)])
        except (ValidationError, ValueError) as exc:
            out.rejected.append(_rejection(p, "malformed", _first_error(exc), batch))
            continue
        seen.add(same)
        accepted.append((verdict, item, evidence))
    if not dry_run:
        await _log_rejections(ctx, user_id=user_id, version=extractor.version, rejected=out.rejected, batch=batch)
    if dry_run or not accepted:
        out.records = [_record_of(g, item, ev, None, "would_write" if dry_run else "new") for g, item, ev in accepted]
        _observe(metrics, out, usage=proposals.usage, dry_run=dry_run)
        return out
    written = await write_items(
        ctx,
        user_id=user_id,
        items=[item for _, item, _ in accepted],
        batch=True,
        provenance=[Provenance(extractor.version, ev) for _, _, ev in accepted],
    )
    reads = written.read()
    for (g, item, ev), read in zip(accepted, reads, strict=True):
        outcome = read.resolution.outcome if read.resolution is not None else "new"
        out.records.append(_record_of(g, item, ev, read, outcome))
    out.profile = await _observations(ctx, user_id=user_id, version=extractor.version, accepted=accepted, batch=batch)
    _observe(metrics, out, usage=proposals.usage, dry_run=False)
    return out


def _position(batch: Sequence[_Msg], index: int) -> int:
    return next(i for i, m in enumerate(batch) if m.index == index)


def _item(ctx: RequestContext, g: Grounded, m: _Msg) -> tuple[ItemCreate, dict[str, Any]]:
    """The item a grounded record becomes: the user's words as content, authority ``inferred`` (anything
    written explicitly outranks it), observed when the message was stored."""
    p = g.proposal
    if len(g.content) > ctx.settings.limits.max_content_chars:
        raise ValueError(f"the quote is longer than CTXMEM_MAX_CONTENT_CHARS ({ctx.settings.limits.max_content_chars})")
    session_scoped = p.type in SESSION_TYPES and m.session_id is not None
    item = ItemCreate(
        type=p.type,
        content=g.content,
        key=g.key,
        value=p.value,
        source="user",
        authority="inferred",
        scope="session" if session_scoped else "user",
        session_id=m.session_id if session_scoped else None,
        hard=p.hard,
        confidence=p.confidence,
        observed_at=m.at,
    )
    evidence = Evidence(
        message_id=m.id,
        session_id=m.session_id,
        message_index=None if m.id is not None else m.index,
        span=[g.start, g.end],
        quote=g.content,
    )
    return item, evidence.model_dump(mode="json")


def _record_of(
    g: Grounded, item: ItemCreate, evidence: dict[str, Any], read: ItemRead | None, outcome: str
) -> ExtractedRecord:
    return ExtractedRecord(
        type=g.proposal.type,
        content=item.content,
        key=item.key or g.key,
        value=item.value,
        hard=item.hard,
        confidence=item.confidence if item.confidence is not None else g.proposal.confidence,
        evidence=Evidence.model_validate(evidence),
        outcome=outcome,  # type: ignore[arg-type]
        item=read,
    )


async def _observations(
    ctx: RequestContext,
    *,
    user_id: str,
    version: str,
    accepted: Sequence[tuple[Grounded, ItemCreate, dict[str, Any]]],
    batch: Sequence[_Msg],
) -> list[ProfileEntryRead]:
    """Preferences and goals the user stated, as explicit observations of their profile entries (the 4C
    model decides what they become); a hint the profile's schema refuses is left out, the item stays."""
    observations: list[ObservationCreate] = []
    provenance: list[Provenance] = []
    for g, item, evidence in accepted:
        hint = g.proposal.profile
        if hint is None:
            continue
        m = batch[_position(batch, g.proposal.message_index)]
        try:
            obs = ObservationCreate(
                domain=hint.domain,
                dimension=hint.dimension,
                key=hint.key,
                value=hint.value[:200],
                polarity=hint.polarity,
                session_id=m.session_id or NO_SESSION,
                context="conversation",
                explicit=True,
                observed_at=item.observed_at,
                source="user",
            )
        except ValidationError as exc:
            log.info("profile hint left out (%s): %s", version, _first_error(exc))
            continue
        observations.append(obs)
        provenance.append(Provenance(version, evidence))
    if not observations:
        return []
    return await add_observations(ctx, user_id=user_id, observations=observations, batch=True, provenance=provenance)


def _rejection(p: Proposal | None, reason: str, detail: str, batch: Sequence[_Msg]) -> RejectedRecord:
    m = next((m for m in batch if p is not None and m.index == p.message_index), None)
    return RejectedRecord(
        reason=reason,  # type: ignore[arg-type]
        detail=detail,
        type=str(p.type) if p is not None else None,
        quote=p.quote if p is not None and isinstance(p.quote, str) else None,
        message_index=p.message_index if p is not None and isinstance(p.message_index, int) else None,
        message_id=m.id if m is not None else None,
    )


def _first_error(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        err = exc.errors()[0]
        where = ".".join(str(x) for x in err.get("loc", ()))
        return f"{where}: {err.get('msg')}" if where else str(err.get("msg"))
    return str(exc)


async def _log_rejections(
    ctx: RequestContext, *, user_id: str, version: str, rejected: Sequence[RejectedRecord], batch: Sequence[_Msg]
) -> None:
    """One event per rejected proposal: the reason and the message, never the words (no message text goes
    into the audit log)."""
    if not rejected:
        return
    rows = [
        event(
            ctx.principal,
            user_id=user_id,
            action="extraction.rejected",
            entity_type="message",
            entity_id=r.message_id,
            rule=r.reason,
            reason=r.reason,
            now=ctx.now,
            after={"extracted_by": version, "type": r.type, "message_index": r.message_index},
        )
        for r in rejected
    ]
    await record_events(ctx.session, rows)
    log.info("extraction %s rejected %s", version, dict(Counter(r.reason for r in rejected)))


async def _retire_older(ctx: RequestContext, *, user_id: str, ids: Sequence[uuid.UUID], version: str) -> None:
    """A re-extraction: the records an older version learned from these messages are superseded, with the
    reason, before the new version's are written (deleting nothing)."""
    old = await repository.older_records(
        ctx.session, tenant_id=ctx.principal.tenant_id, user_id=user_id, message_ids=ids, version=version
    )
    if not old:
        return
    reason = f"re-extracted by {version}"
    await repository.retire(
        ctx.session, tenant_id=ctx.principal.tenant_id, ids=[o.id for o in old], reason=reason, now=ctx.now
    )
    rows = [
        event(
            ctx.principal,
            user_id=user_id,
            action="item.superseded",
            entity_type="context_item",
            entity_id=o.id,
            rule="re-extraction",
            reason=reason,
            now=ctx.now,
            before={"status": o.status, "extracted_by": o.extracted_by},
            after={"status": "superseded"},
        )
        for o in old
    ]
    await record_events(ctx.session, rows)
    await enqueue_sync(ctx.session, ctx.principal.tenant_id, user_id, [o.id for o in old], ctx.now)


async def _record(
    ctx: RequestContext, *, user_id: str, session_id: str, version: str, messages: int, outcome: _Outcome
) -> None:
    """The session's extraction event: counts only."""
    after = {
        "extracted_by": version,
        "messages": messages,
        "records": dict(Counter(r.outcome for r in outcome.records)),
        "rejected": dict(Counter(r.reason for r in outcome.rejected)),
    }
    row = event(
        ctx.principal,
        user_id=user_id,
        action="session.extracted",
        entity_type="session",
        entity_id=session_id,
        now=ctx.now,
        after=after,
    )
    await record_events(ctx.session, [row])


def _observe(metrics: Metrics | None, out: _Outcome, *, usage: Usage, dry_run: bool) -> None:
    if metrics is None or dry_run:
        return
    written = Counter(r.type for r in out.records if r.outcome != "reinforced")
    reinforced = sum(1 for r in out.records if r.outcome == "reinforced")
    metrics.observe_batch(
        written=dict(written),
        rejected=dict(Counter(r.reason for r in out.rejected)),
        reinforced=reinforced,
        usage=usage,
    )
