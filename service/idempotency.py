"""Idempotency-Key handling: a replay returns the first response byte for byte and writes nothing.

The key is claimed by inserting its record inside the request's own transaction. A concurrent request
with the same key blocks on that insert until the first transaction ends: if it committed, the second
finds the stored response and replays it; if it rolled back (an error), the second runs for real. So
exactly one of any number of racing requests writes, without a separate lock service.
Only successful responses are stored: a failed request changed nothing and may be retried as is.
"""

from __future__ import annotations

import hashlib
from datetime import datetime
from typing import Any

import pydantic_core
from fastapi import Request, Response
from pydantic import BaseModel
from sqlalchemy import select, update
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession

from service.db.models import IdempotencyRecord
from service.errors import IdempotencyInProgress, IdempotencyKeyReused, ReplayedResponse, ValidationFailed

HEADER = "Idempotency-Key"
MAX_KEY_LENGTH = 255
# What ``_check_key`` accepts, as the OpenAPI document states it: printable ASCII (space to tilde), and no
# space at either end (HTTP strips it from a header's value).
KEY_PATTERN = r"^[!-~]([ -~]*[!-~])?$"


class Idempotency:
    """Handed to write endpoints; ``respond`` serialises the result once and stores it under the key."""

    def __init__(self, session: AsyncSession, tenant_id: str, key: str | None, *, path: str = "") -> None:
        self.session = session
        self.tenant_id = tenant_id
        self.key = key
        self.path = path
        # Set by an erasure: its own record survives for replays, naming the user nowhere.
        self.forget_user: str | None = None

    async def respond(self, model: BaseModel, status_code: int = 200) -> Response:
        return await self.respond_bytes(model.model_dump_json().encode(), status_code)

    async def respond_data(self, data: Any, status_code: int = 200) -> Response:
        """Plain data (dicts, lists, UUIDs, datetimes) serialised in one pass, for hot paths."""
        return await self.respond_bytes(pydantic_core.to_json(data), status_code)

    async def respond_bytes(self, body: bytes, status_code: int) -> Response:
        if self.key is not None:
            values: dict[str, Any] = {"status_code": status_code, "response_body": body}
            if self.forget_user is not None:
                values["user_id"] = None
                values["path"] = forget_user_in_path(self.path, self.forget_user)
            await self.session.execute(
                update(IdempotencyRecord)
                .where(IdempotencyRecord.tenant_id == self.tenant_id, IdempotencyRecord.key == self.key)
                .values(**values)
            )
        return Response(body, status_code=status_code, media_type="application/json")


def forget_user_in_path(path: str, user_id: str) -> str:
    """``/v1/users/<id>/...`` as its route template, ``/v1/users/{user_id}/...``: what an erased user's
    records may keep (the request hash, a SHA-256 like the erasure's user fingerprint, still tells a replay
    from a different request)."""
    prefix = f"/v1/users/{user_id}"
    if path == prefix or path.startswith(prefix + "/"):
        return "/v1/users/{user_id}" + path[len(prefix) :]
    return path


def _check_key(key: str) -> str:
    if not 1 <= len(key) <= MAX_KEY_LENGTH or not key.isascii() or not key.isprintable():
        raise ValidationFailed(f"{HEADER} must be 1-{MAX_KEY_LENGTH} printable ASCII characters")
    return key


async def begin(session: AsyncSession, request: Request, tenant_id: str, now: datetime, raw: str | None) -> Idempotency:
    if raw is None:
        return Idempotency(session, tenant_id, None)
    key = _check_key(raw)
    body = await request.body()
    digest = hashlib.sha256()
    for part in (request.method.encode(), request.url.path.encode(), request.url.query.encode(), body):
        digest.update(len(part).to_bytes(8, "big"))
        digest.update(part)
    request_hash = digest.hexdigest()
    user_id = request.path_params.get("user_id")
    claim = (
        insert(IdempotencyRecord)
        .values(
            tenant_id=tenant_id,
            key=key,
            user_id=user_id,
            method=request.method,
            path=request.url.path,
            request_hash=request_hash,
            created_at=now,
        )
        .on_conflict_do_nothing()
        .returning(IdempotencyRecord.key)
    )
    if (await session.execute(claim)).scalar_one_or_none() is not None:
        return Idempotency(session, tenant_id, key, path=request.url.path)
    stored = (
        await session.execute(
            select(IdempotencyRecord).where(IdempotencyRecord.tenant_id == tenant_id, IdempotencyRecord.key == key)
        )
    ).scalar_one()
    if stored.request_hash != request_hash:
        raise IdempotencyKeyReused(
            f"{HEADER} {key!r} was first used for {stored.method} {stored.path} with a different body"
        )
    if stored.status_code is None or stored.response_body is None:
        raise IdempotencyInProgress()
    raise ReplayedResponse(stored.status_code, stored.response_body)
