"""FastAPI dependencies: one engine and session per request, the caller's principal, the clock."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Annotated

from fastapi import Depends, Header, Path, Request
from sqlalchemy.ext.asyncio import AsyncSession

from schemas.common import ID_PATTERN
from service import idempotency
from service.auth.service import Principal, authenticate
from service.clock import Clock
from service.context import RequestContext
from service.db.engine import Database
from service.settings import Settings
from service.tokenizer import Tokenizer


def get_db(request: Request) -> Database:
    db: Database = request.app.state.db
    return db


async def get_session(request: Request) -> AsyncIterator[AsyncSession]:
    """One transaction per request: committed after the endpoint returns and before the response is
    sent (``scope="function"``), so a client never sees a success that was not stored."""
    async with get_db(request).sessionmaker() as session:
        try:
            yield session
            await session.commit()
        except BaseException:
            await session.rollback()
            raise


def get_settings_dep(request: Request) -> Settings:
    settings: Settings = request.app.state.settings
    return settings


def get_clock(request: Request) -> Clock:
    clock: Clock = request.app.state.clock
    return clock


def get_tokenizer(request: Request) -> Tokenizer:
    tokenizer: Tokenizer = request.app.state.tokenizer
    return tokenizer


SessionDep = Annotated[AsyncSession, Depends(get_session, scope="function")]
SettingsDep = Annotated[Settings, Depends(get_settings_dep)]
ClockDep = Annotated[Clock, Depends(get_clock)]
TokenizerDep = Annotated[Tokenizer, Depends(get_tokenizer)]
DatabaseDep = Annotated[Database, Depends(get_db)]


async def get_principal(
    session: SessionDep,
    authorization: Annotated[str | None, Header(include_in_schema=False)] = None,
) -> Principal:
    return await authenticate(session, authorization)


PrincipalDep = Annotated[Principal, Depends(get_principal)]


async def get_idempotency(
    request: Request,
    session: SessionDep,
    principal: PrincipalDep,
    clock: ClockDep,
    idempotency_key: Annotated[
        str | None,
        Header(
            alias=idempotency.HEADER,
            description="Retry-safe writes: a replay returns the first response and writes nothing.",
        ),
    ] = None,
) -> idempotency.Idempotency:
    return await idempotency.begin(session, request, principal.tenant_id, clock.now(), idempotency_key)


IdempotencyDep = Annotated[idempotency.Idempotency, Depends(get_idempotency)]

UserIdPath = Annotated[str, Path(min_length=1, max_length=128, pattern=ID_PATTERN, description="Client-chosen user id")]


async def get_context(
    request: Request,
    session: SessionDep,
    principal: PrincipalDep,
    settings: SettingsDep,
    tokenizer: TokenizerDep,
    clock: ClockDep,
) -> RequestContext:
    vectors = getattr(request.app.state, "vectors", None)
    return RequestContext(session, principal, settings, tokenizer, clock.now(), vectors)


ContextDep = Annotated[RequestContext, Depends(get_context)]
