"""``POST …/search``: the user's items in force ranked for a query (schemas/search.py on the server)."""

from datetime import datetime
from typing import Literal, Required

from pydantic import TypeAdapter
from typing_extensions import TypedDict

from ctxmem_client.models.base import FORBID, Model
from ctxmem_client.models.items import Item, ItemType


class SearchRequest(TypedDict, total=False):
    __pydantic_config__ = FORBID  # type: ignore[misc]
    query: Required[str]
    limit: int
    budget: int
    types: list[ItemType]
    domains: list[str]
    session_id: str
    task_id: str
    statuses: list[Literal["available", "verified", "missing"]]
    observed_after: datetime
    observed_before: datetime


SEARCH_REQUEST: TypeAdapter[SearchRequest] = TypeAdapter(SearchRequest)


class SearchHit(Model):
    item: Item
    score: float
    lexical: float | None
    vector: float | None
    matched: list[str]
    why: str


class SearchTokens(Model):
    budget: int | None
    used: int


class SearchResults(Model):
    items: list[SearchHit]
    tokens: SearchTokens
    warnings: list[str]
