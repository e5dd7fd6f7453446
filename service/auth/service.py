"""Key issuing and checking (docs/design.md §4); what each role may do is service/auth/principal.py."""

from __future__ import annotations

import hashlib
import re
import secrets
import uuid
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncSession

from service.auth import repository
from service.auth.cache import KeyCache
from service.auth.principal import ROLE_PERMISSIONS, Principal
from service.db.models import ApiKey
from service.errors import Unauthorized, ValidationFailed
from service.events import Operator, event, record_events
from service.ids import uuid7

KEY_PREFIX = "cmk_"
TENANT_PATTERN_MAX = 128


def hash_secret(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


@dataclass(frozen=True)
class IssuedKey:
    id: uuid.UUID
    tenant_id: str
    role: str
    secret: str
    created_at: datetime


async def create_key(
    session: AsyncSession, *, tenant_id: str, role: str, name: str | None, now: datetime, actor: str
) -> IssuedKey:
    """Create a key (and its tenant on first use). The secret is returned once and never stored."""
    if not re.fullmatch(r"[A-Za-z0-9._:@-]{1,128}", tenant_id):
        raise ValidationFailed("tenant must be 1-128 characters of [A-Za-z0-9._:@-]")
    if role not in ROLE_PERMISSIONS:
        raise ValidationFailed(f"role must be one of {', '.join(ROLE_PERMISSIONS)}")
    created = await repository.ensure_tenant(session, tenant_id, now)
    secret = KEY_PREFIX + secrets.token_urlsafe(32)
    key = ApiKey(
        id=uuid7(),
        tenant_id=tenant_id,
        role=role,
        name=name,
        secret_hash=hash_secret(secret),
        prefix=secret[: len(KEY_PREFIX) + 6],
        created_at=now,
        revoked_at=None,
    )
    await repository.insert_key(session, key)
    by = Operator(tenant_id=tenant_id, actor=actor)
    events = (
        [event(by, user_id=None, action="tenant.created", entity_type="tenant", entity_id=tenant_id, now=now)]
        if created
        else []
    )
    events.append(
        event(
            by,
            user_id=None,
            action="key.created",
            entity_type="api_key",
            entity_id=key.id,
            after={"role": role, "prefix": key.prefix, "name": name},
            now=now,
        )
    )
    await record_events(session, events)
    return IssuedKey(id=key.id, tenant_id=tenant_id, role=role, secret=secret, created_at=now)


async def authenticate(session: AsyncSession, authorization: str | None, cache: KeyCache | None = None) -> Principal:
    if not authorization:
        raise Unauthorized("send Authorization: Bearer <api key>")
    scheme, _, token = authorization.partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token:
        raise Unauthorized("the Authorization header must be 'Bearer <api key>'")
    if not token.startswith(KEY_PREFIX) or len(token) > 200:
        raise Unauthorized("unknown or revoked API key")
    secret_hash = hash_secret(token)
    if cache is not None and (known := cache.get(secret_hash)) is not None:
        return known
    key = await repository.key_by_hash(session, secret_hash)
    if key is None:
        raise Unauthorized("unknown or revoked API key")
    principal = Principal(tenant_id=key.tenant_id, key_id=key.id, role=key.role)
    if cache is not None:
        cache.put(secret_hash, principal)
    return principal
