"""SQL for tenants and API keys."""

from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy import delete, exists, func, select
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession

from service.db.models import ApiKey, ConsoleSession, EndUser, Event, Tenant

# The channel a key's revocation is announced on: its secret hash, when the revoking transaction commits.
REVOKED_CHANNEL = "ctxmem_key_revoked"


async def ensure_tenant(session: AsyncSession, tenant_id: str, now: datetime) -> bool:
    """Create the tenant if missing; True when it was created."""
    stmt = insert(Tenant).values(id=tenant_id, created_at=now).on_conflict_do_nothing().returning(Tenant.id)
    return (await session.execute(stmt)).scalar_one_or_none() is not None


async def insert_key(session: AsyncSession, key: ApiKey) -> None:
    session.add(key)
    await session.flush()


async def key_by_hash(session: AsyncSession, secret_hash: str) -> ApiKey | None:
    stmt = select(ApiKey).where(ApiKey.secret_hash == secret_hash, ApiKey.revoked_at.is_(None))  # type: ignore[union-attr]
    return (await session.execute(stmt)).scalar_one_or_none()


async def list_keys(session: AsyncSession, tenant_id: str) -> list[ApiKey]:
    stmt = select(ApiKey).where(ApiKey.tenant_id == tenant_id).order_by(ApiKey.created_at)
    return list((await session.execute(stmt)).scalars())


async def revoke_key(session: AsyncSession, tenant_id: str, key_id: uuid.UUID, now: datetime) -> ApiKey | None:
    stmt = select(ApiKey).where(ApiKey.tenant_id == tenant_id, ApiKey.id == key_id).with_for_update()
    key = (await session.execute(stmt)).scalar_one_or_none()
    if key is not None and key.revoked_at is None:
        key.revoked_at = now
        await session.flush()
        # Its console sessions end now (a session also checks its key on every request).
        await session.execute(delete(ConsoleSession).where(ConsoleSession.key_id == key_id))  # type: ignore[arg-type]
        # Every API process forgets the key when this commits (service/auth/cache.py).
        await session.execute(select(func.pg_notify(REVOKED_CHANNEL, key.secret_hash)))
    return key


async def delete_tenant(session: AsyncSession, tenant_id: str) -> None:
    """Remove a tenant whose users are all erased: its keys (by cascade) and its remaining audit events
    (the erasures' own). Refuses while a user remains, whose rows would go without their vector points."""
    remaining = await session.execute(select(exists().where(EndUser.tenant_id == tenant_id)))
    if remaining.scalar_one():
        raise ValueError(f"tenant {tenant_id!r} still has users: erase them first")
    await session.execute(delete(Event).where(Event.tenant_id == tenant_id))  # type: ignore[arg-type]
    # Its keys go with it (cascade): every API process forgets them at commit, as on revocation.
    await session.execute(
        select(func.pg_notify(REVOKED_CHANNEL, ApiKey.secret_hash)).where(ApiKey.tenant_id == tenant_id)
    )
    await session.execute(delete(Tenant).where(Tenant.id == tenant_id))  # type: ignore[arg-type]
