"""HTTP routes of observations and profiles."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Response

from schemas.common import Domain, Identifier
from schemas.profiles import (
    ConfirmBody,
    EntryEvidence,
    ObservationBatchCreate,
    ObservationCreate,
    ProfileEntryBatch,
    ProfileEntryRead,
    ProfileRead,
    Tier,
)
from service.deps import ContextDep, EntryIdPath, IdempotencyDep, UserIdPath
from service.errors import ERRORS
from service.profiles import service

router = APIRouter(prefix="/v1/users/{user_id}", tags=["profiles"], responses=ERRORS)


@router.post("/observations", status_code=201, response_model=ProfileEntryRead, summary="Add evidence about the user")
async def add_observation(
    user_id: UserIdPath,
    body: ObservationCreate,
    ctx: ContextDep,
    idem: IdempotencyDep,
) -> Response:
    (entry,) = await service.add_observations(ctx, user_id=user_id, observations=[body], batch=False)
    return await idem.respond(entry, 201)


@router.post(
    "/observations/batch",
    status_code=201,
    response_model=ProfileEntryBatch,
    summary="Add up to 1,000 observations at once (all or nothing)",
)
async def add_observations(
    user_id: UserIdPath,
    body: ObservationBatchCreate,
    ctx: ContextDep,
    idem: IdempotencyDep,
) -> Response:
    entries = await service.add_observations(ctx, user_id=user_id, observations=body.observations, batch=True)
    return await idem.respond(ProfileEntryBatch(items=entries), 201)


@router.get("/profile", response_model=ProfileRead, summary="Entries by tier and domain, and the effective view")
async def get_profile(
    user_id: UserIdPath,
    ctx: ContextDep,
    domain: Annotated[
        list[Domain] | None, Query(description="Repeatable; global entries always apply", examples=[["laptop"]])
    ] = None,
    session_id: Annotated[
        Identifier | None, Query(description="The session whose statements apply", examples=["s-7"])
    ] = None,
    tier: Annotated[list[Tier] | None, Query(description="Filter the per-tier listing", examples=[["current"]])] = None,
) -> ProfileRead:
    return await service.get_profile(ctx, user_id=user_id, domains=domain, session_id=session_id, tiers=tier)


@router.get(
    "/profile/{entry_id}",
    response_model=EntryEvidence,
    summary="An entry with its 4C breakdown, every observation and the events that changed it",
)
async def get_entry(user_id: UserIdPath, entry_id: EntryIdPath, ctx: ContextDep) -> EntryEvidence:
    return await service.get_evidence(ctx, user_id=user_id, entry_id=entry_id)


def _verdict(path: str, *, name: str, confirm: bool, summary: str) -> None:
    """The user's explicit word on an entry: ``confirm`` and ``reject`` are one use case (the service's
    ``confirm_or_reject``) behind two routes, declared here once. ``name`` gives the operation its id."""

    async def record_verdict(
        user_id: UserIdPath,
        entry_id: EntryIdPath,
        ctx: ContextDep,
        idem: IdempotencyDep,
        body: ConfirmBody | None = None,
    ) -> Response:
        entry = await service.confirm_or_reject(ctx, user_id=user_id, entry_id=entry_id, body=body, confirm=confirm)
        return await idem.respond(entry, 200)

    router.post(path, response_model=ProfileEntryRead, summary=summary, name=name)(record_verdict)


_verdict(
    "/profile/{entry_id}/confirm",
    name="confirm_entry",
    confirm=True,
    summary="Record the user's explicit confirmation (→ long_term at once)",
)
_verdict(
    "/profile/{entry_id}/reject",
    name="reject_entry",
    confirm=False,
    summary="Record the user's explicit denial (→ rejected until new explicit evidence)",
)
