"""A user as a whole: it exists from its first write (ensure_user); streamed export and erasure everywhere."""

from __future__ import annotations

import hashlib
import json
from collections.abc import AsyncIterator, Callable
from datetime import datetime
from typing import Any

from pydantic import BaseModel

from schemas.conversations import StoredMessage
from schemas.items import ItemRead
from schemas.profiles import ObservationRead, ProfileEntryRead
from schemas.users import EraseResult, EventRead
from service.auth.principal import Permission, Principal
from service.context import RequestContext
from service.db.engine import Database
from service.db.models import ContextItem, ConversationMessage, Event, Observation, ProfileEntry
from service.errors import UserNotFound
from service.events import event, record_events
from service.idempotency import Idempotency
from service.users import repository
from service.vectors.repository import enqueue_user_delete

# Export sections: (name, table model, row → response model). Later stores add theirs here.
EXPORT_SECTIONS: list[tuple[str, Any, Callable[[Any], BaseModel]]] = [
    ("items", ContextItem, ItemRead.model_validate),
    ("profile_entries", ProfileEntry, ProfileEntryRead.model_validate),
    ("observations", Observation, ObservationRead.model_validate),
    ("events", Event, EventRead.model_validate),
    ("conversation_messages", ConversationMessage, StoredMessage.model_validate),
]


async def ensure_user(ctx: RequestContext, *, user_id: str) -> None:
    """A user exists from its first write: every write calls this first (it takes the user's lock, shared)."""
    await repository.ensure_user(ctx.session, tenant_id=ctx.principal.tenant_id, user_id=user_id, now=ctx.now)


async def export_user(ctx: RequestContext, *, db: Database, user_id: str) -> AsyncIterator[bytes]:
    """The export's body, once the caller may export (checked now, before the response starts)."""
    ctx.principal.require(Permission.USERS_EXPORT)
    return export_stream(db, principal=ctx.principal, user_id=user_id, now=ctx.now)


async def export_stream(db: Database, *, principal: Principal, user_id: str, now: datetime) -> AsyncIterator[bytes]:
    """Everything stored about the user as one JSON document, produced row by row from one
    repeatable-read snapshot so that the sections agree with each other."""
    async with db.engine.connect() as conn:
        conn = await conn.execution_options(isolation_level="REPEATABLE READ")
        await conn.begin()
        head = {"tenant_id": principal.tenant_id, "user_id": user_id, "exported_at": now.isoformat()}
        yield json.dumps(head)[:-1].encode()
        for name, model, to_schema in EXPORT_SECTIONS:
            yield f', "{name}": ['.encode()
            first = True
            async for row in repository.stream_rows(conn, model=model, tenant_id=principal.tenant_id, user_id=user_id):
                chunk = to_schema(row).model_dump_json().encode()
                yield chunk if first else b"," + chunk
                first = False
            yield b"]"
        yield b"}\n"
        await conn.rollback()


def user_fingerprint(tenant_id: str, user_id: str) -> str:
    """Identifies an erased user in the audit log without keeping the id itself."""
    return "sha256:" + hashlib.sha256(f"{tenant_id}\x1f{user_id}".encode()).hexdigest()


async def erasure_counts(ctx: RequestContext, *, user_id: str) -> dict[str, int]:
    """What erasing the user would delete now, per table (the console shows it before asking to confirm)."""
    principal = ctx.principal
    principal.require(Permission.USERS_ERASE)
    if not await repository.user_exists(ctx.session, tenant_id=principal.tenant_id, user_id=user_id):
        raise UserNotFound(f"no user {user_id!r} to erase (nothing was written for this id in this tenant)")
    return await repository.count_rows(ctx.session, tenant_id=principal.tenant_id, user_id=user_id)


async def erase_user(ctx: RequestContext, *, user_id: str, idem: Idempotency) -> EraseResult:
    """Delete every row of the user in one transaction. The erasure's own event keeps no content:
    no user id (a fingerprint instead), only the row counts; the request's own idempotency record is
    kept, with the user id taken out of its path."""
    session, principal, now = ctx.session, ctx.principal, ctx.now
    idempotency_key = idem.key
    principal.require(Permission.USERS_ERASE)
    # First, before any row of the user is touched: the lock writes and the outbox worker take too.
    await repository.lock_user(session, tenant_id=principal.tenant_id, user_id=user_id)
    if not await repository.user_exists(session, tenant_id=principal.tenant_id, user_id=user_id):
        raise UserNotFound(f"no user {user_id!r} to erase (nothing was written for this id in this tenant)")
    counts = await repository.erase_user(
        session, tenant_id=principal.tenant_id, user_id=user_id, keep_idempotency_key=idempotency_key
    )
    await enqueue_user_delete(session, principal.tenant_id, user_id, now)
    fingerprint = user_fingerprint(principal.tenant_id, user_id)
    await record_events(
        session,
        [
            event(
                principal,
                user_id=None,
                action="user.erased",
                entity_type="user",
                entity_id=fingerprint,
                reason="erasure requested",
                after={"rows": counts},
                now=now,
            )
        ],
    )
    idem.forget_user = user_id
    return EraseResult(erased=True, user_fingerprint=fingerprint, rows=counts, erased_at=now)
