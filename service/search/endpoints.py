"""HTTP route of search."""

from __future__ import annotations

from fastapi import APIRouter

from schemas.search import SearchRequest, SearchResponse
from service.deps import ContextDep, ReadsDep, UserIdPath
from service.errors import ERRORS
from service.search import service

router = APIRouter(prefix="/v1/users/{user_id}", tags=["search"], responses=ERRORS)


@router.post("/search", response_model=SearchResponse, summary="Search the user's memory: ranked items and why")
async def search(user_id: UserIdPath, body: SearchRequest, ctx: ContextDep, reads: ReadsDep) -> SearchResponse:
    return await service.search(ctx, user_id=user_id, req=body, reads=reads)
