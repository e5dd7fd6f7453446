"""FastAPI dependencies: one engine and session per request, the caller's principal, the clock."""

from __future__ import annotations

import logging
import uuid
from collections.abc import AsyncIterator
from typing import Annotated, Any, Literal

from fastapi import Depends, Header, Path, Query, Request, Security
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from sqlalchemy.ext.asyncio import AsyncSession

from schemas.common import DOT_SEGMENTS, ID_PATTERN
from scoring.window import HANDLE_PATTERN
from service import idempotency
from service.auth.principal import Principal
from service.auth.service import authenticate
from service.caches import app_caches
from service.clock import Clock
from service.context import RequestContext
from service.db.engine import Database
from service.db.positions import COMMIT_HEADER, LSN_PATTERN, Positions, current_position, parse_lsn, wrote
from service.db.replicas import REPLICA_ERRORS, Reads
from service.errors import ReplayedResponse, ValidationFailed
from service.jobs_api.service import JobRunner
from service.outage import reason
from service.pagination import encode_cursor
from service.settings import Settings
from service.tokenizer import Tokenizer

log = logging.getLogger("ctxmem.db")


# The dependencies that only read the app's state are ``async def``: FastAPI runs a plain ``def`` dependency
# in its thread pool, a hand-off to a thread and back for every request (visible in a py-spy profile of
# bench.window --http as the threads' Condition waits).


def database_of(request: Request) -> Database:
    db: Database = request.app.state.db
    return db


async def get_db(request: Request) -> Database:
    return database_of(request)


async def get_session(request: Request) -> AsyncIterator[AsyncSession]:
    """One transaction per request: committed after the endpoint returns and before the response is
    sent (``scope="function"``), so a client never sees a success that was not stored.

    With replicas, a transaction that wrote is followed by a read of its commit position
    (service/db/positions.py): the response's ``X-Ctxmem-Commit-Lsn``, and this process's memory of the
    user's last write, which its later reads must see. A replayed idempotent write gets the position now,
    which is past the first one's."""
    db = database_of(request)
    positions: Positions | None = getattr(request.app.state, "commit_positions", None)
    async with db.sessionmaker() as session:
        try:
            yield session
            wrote_rows = positions is not None and await wrote(session)
            await session.commit()
            request.app.state.outage.recovered()
        except ReplayedResponse:
            await session.rollback()
            if positions is not None:
                await _note_position(request, db, positions)
            raise
        except BaseException:
            await session.rollback()
            raise
        if positions is not None and wrote_rows:
            await _note_position(request, db, positions)


async def _note_position(request: Request, db: Database, positions: Positions) -> None:
    try:
        lsn = await current_position(db)
    except REPLICA_ERRORS as exc:
        # The write is stored; only its position is unknown. Not an error for the client.
        log.warning("committed, but could not read the commit position: %s", reason(exc))
        return
    request.state.commit_lsn = lsn
    principal: Principal | None = getattr(request.state, "principal", None)
    if principal is not None:
        positions.note(principal.tenant_id, request.path_params.get("user_id"), lsn)


async def get_settings_dep(request: Request) -> Settings:
    settings: Settings = request.app.state.settings
    return settings


async def get_clock(request: Request) -> Clock:
    clock: Clock = request.app.state.clock
    return clock


async def get_tokenizer(request: Request) -> Tokenizer:
    tokenizer: Tokenizer = request.app.state.tokenizer
    return tokenizer


async def get_job_runner(request: Request) -> JobRunner:
    runner: JobRunner = request.app.state.job_runner
    return runner


SessionDep = Annotated[AsyncSession, Depends(get_session, scope="function")]
SettingsDep = Annotated[Settings, Depends(get_settings_dep)]
ClockDep = Annotated[Clock, Depends(get_clock)]
TokenizerDep = Annotated[Tokenizer, Depends(get_tokenizer)]
DatabaseDep = Annotated[Database, Depends(get_db)]
JobRunnerDep = Annotated[JobRunner, Depends(get_job_runner)]


# Declares the bearer scheme in the OpenAPI document (so Swagger UI's "Authorize" sends the key); the
# header itself is read and checked by ``authenticate``, which words its own 401s.
bearer = HTTPBearer(
    auto_error=False,
    scheme_name="apiKey",
    description="An API key: `Authorization: Bearer cmk_…`. Create one with "
    "`ctxmem keys create --tenant T --role agent` (roles: agent, operator, admin).",
)


async def get_principal(
    request: Request,
    session: SessionDep,
    _scheme: Annotated[HTTPAuthorizationCredentials | None, Security(bearer)],
    authorization: Annotated[str | None, Header(include_in_schema=False)] = None,
) -> Principal:
    principal = await authenticate(session, authorization, request.app.state.key_cache)
    request.state.principal = principal  # whose writes the session's commit position is (get_session)
    return principal


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
            description="Retry-safe writes: a replay returns the first response and writes nothing. 1-255 "
            "printable ASCII characters; a key is the tenant's for 24 hours, and sending it again with another "
            "request (another route, user or body) is refused with 422 idempotency-key-reused.",
            # Checked by idempotency.begin, whose message says what a key may hold; its pattern and length are
            # published by service/app.py, which gives each operation its own example (one key shared by every
            # route would be refused as reused).
            examples=["7f9c2b1e-order-42"],
        ),
    ] = None,
) -> idempotency.Idempotency:
    return await idempotency.begin(session, request, principal.tenant_id, clock.now(), idempotency_key)


IdempotencyDep = Annotated[idempotency.Idempotency, Depends(get_idempotency)]


def _id_path(description: str, example: str) -> Any:
    """A path parameter holding one of the caller's own ids (letters, digits and . _ : @ -; up to 128)."""
    return Path(min_length=1, max_length=128, pattern=ID_PATTERN, description=description, examples=[example])


# Ids that are URL dot-segments (RFC 3986 §5.2.4): `/v1/users/../items` is `/v1/items` to every client and
# proxy that normalises paths, so nothing new is stored under them (issue #31). With the characters an id
# may hold, `.` and `..` are the only ids that differ from their URL-normalised form. Rows already stored
# under one stay reachable: reads (GET), search, deletes and erasure accept them; the routes that add data
# for the user refuse them (docs/api.md#ids).
STORED_ONLY = frozenset({"/v1/users/{user_id}/search", "/console/users/{user_id}/erase"})


def adds_data(request: Request) -> bool:
    """Whether this request adds data for the user (so a dot-segment id is refused): any POST, PUT or PATCH
    but a search and the console's erasure."""
    if request.method not in ("POST", "PUT", "PATCH"):
        return False
    route = request.scope.get("route")
    return getattr(route, "path", None) not in STORED_ONLY


def refuse_dot_segment(request: Request, name: str, value: str) -> str:
    if value in DOT_SEGMENTS and adds_data(request):
        raise ValidationFailed(
            f"{name} {value!r} is a URL dot-segment: clients and proxies that normalise paths cannot reach it, so "
            f"nothing new is stored under it; choose another id (what is already stored under {value!r} stays "
            "readable with GET, exportable and erasable)",
            errors=[{"loc": ["path", name], "msg": "dot-segment id", "type": "value_error"}],
        )
    return value


async def _user_id(
    request: Request,
    user_id: Annotated[
        str, _id_path("Your id for the user (letters, digits and . _ : @ -; up to 128 characters)", "alice@example.com")
    ],
) -> str:
    return refuse_dot_segment(request, "user_id", user_id)


async def _session_id(
    request: Request,
    session_id: Annotated[
        str, _id_path("The conversation's id, as a window's session_id (letters, digits and . _ : @ -)", "s-42")
    ],
) -> str:
    return refuse_dot_segment(request, "session_id", session_id)


UserIdPath = Annotated[str, Depends(_user_id)]
SessionIdPath = Annotated[str, Depends(_session_id)]
# The path and query parameters several routes share, described once.
EXAMPLE_ID = "0190a5c2-7d3e-7c4a-9b1e-2f6d8a4c1b00"
ItemIdPath = Annotated[
    uuid.UUID, Path(description="The item's id, from a write's response or a listing", examples=[EXAMPLE_ID])
]
ItemHandlePath = Annotated[
    str,
    Path(
        description="The item's id, or its handle: the end of its id (at least 8 hex digits) that a window shows "
        "before a shortened item",
        pattern=HANDLE_PATTERN,
        examples=[EXAMPLE_ID, EXAMPLE_ID[-8:]],
    ),
]
EntryIdPath = Annotated[uuid.UUID, Path(description="The profile entry's id, from GET /profile", examples=[EXAMPLE_ID])]
LimitQuery = Annotated[
    int | None,
    Query(
        ge=1, description="Page size (default CTXMEM_DEFAULT_PAGE_SIZE, at most CTXMEM_MAX_PAGE_SIZE)", examples=[50]
    ),
]
CursorQuery = Annotated[
    str | None,
    Query(
        max_length=512,
        description="The previous page's next_cursor, sent back unchanged (omit for the first page)",
        # A cursor this service issues, for the default order (service/app.py gives each listing its own).
        examples=[encode_cursor(uuid.UUID(EXAMPLE_ID), "desc")],
    ),
]
OrderQuery = Annotated[
    Literal["asc", "desc"], Query(description="desc: newest first (default); asc: oldest first", examples=["asc"])
]


async def get_context(
    request: Request,
    session: SessionDep,
    principal: PrincipalDep,
    settings: SettingsDep,
    tokenizer: TokenizerDep,
    clock: ClockDep,
) -> RequestContext:
    vectors = getattr(request.app.state, "vectors", None)
    caches = app_caches(request.app.state)
    return RequestContext(session, principal, settings, tokenizer, clock.now(), vectors, caches)


ContextDep = Annotated[RequestContext, Depends(get_context)]


async def get_reads(
    request: Request,
    principal: PrincipalDep,
    user_id: UserIdPath,
    commit_lsn: Annotated[
        str | None,
        Header(
            alias=COMMIT_HEADER,
            pattern=LSN_PATTERN,
            description="Read-your-writes with replicas: a write's X-Ctxmem-Commit-Lsn, sent back; the read "
            "is served only where that write is visible (docs/operations.md#read-replicas)",
            examples=["0/16B3748"],
        ),
    ] = None,
) -> Reads:
    """Where this read may be served: a replica that has replayed the later of the position the client
    sent and the last one this process wrote for the user (or its tenant), else the primary."""
    replicas = getattr(request.app.state, "replicas", None)
    primary = database_of(request)
    if replicas is None:
        return Reads(None, primary=primary)
    positions: Positions = request.app.state.commit_positions
    needed = positions.needed(principal.tenant_id, user_id)
    if commit_lsn is not None:
        needed = max(needed, parse_lsn(commit_lsn))
    return Reads(replicas, needed, request.state, primary=primary)


ReadsDep = Annotated[Reads, Depends(get_reads)]
