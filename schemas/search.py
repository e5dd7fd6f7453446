"""Search request and response: memory as a tool the agent calls (docs/api.md, "Search")."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import ConfigDict, Field, model_validator

from schemas.common import Count, DateTime, Domain, Identifier, ReadModel, StrictModel
from schemas.items import ItemRead, ItemType
from schemas.windows import LongText

# The statuses of items in force: what a search (like a window) can find. Superseded, expired and
# deleted items are history, listed by GET /v1/users/{u}/items with include_superseded and the like.
InForceStatus = Literal["available", "verified", "missing"]


class SearchRequest(StrictModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {"query": "orders replica lag", "limit": 5},
                {"query": "flight preferences", "types": ["preference", "constraint"], "budget": 300},
            ]
        }
    )

    query: LongText = Field(
        description="What to look for, in the user's words; or exactly a handle (the [4c1b0a2e] a window puts before "
        "a shortened item, with or without brackets), whose item then comes first",
        examples=["orders replica lag", "4c1b0a2e"],
    )
    limit: Count = Field(10, ge=1, le=100, description="At most this many items", examples=[5])
    budget: Count | None = Field(
        None,
        ge=1,
        le=2_000_000,
        description="At most this many tokens of content in all: items are taken best first, each whole, and an "
        "item that would not fit is skipped",
        examples=[300],
    )
    types: Annotated[list[ItemType], Field(min_length=1, max_length=16)] | None = Field(
        None, description="Only items of these types", examples=[["fact", "tool_result"]]
    )
    domains: Annotated[list[Domain], Field(min_length=1, max_length=32)] | None = Field(
        None, description="Only items in these domains", examples=[["work"]]
    )
    session_id: Identifier | None = Field(None, description="Only items written in this session", examples=["s-42"])
    task_id: Identifier | None = Field(None, description="Only items written for this task", examples=["t-trip"])
    statuses: Annotated[list[InForceStatus], Field(min_length=1, max_length=3)] | None = Field(
        None,
        description="Only items of these statuses (default: every status in force; superseded, expired and "
        "deleted items are not searched)",
        examples=[["verified"]],
    )
    observed_after: DateTime | None = Field(
        None, description="Only items observed at or after this time (RFC 3339)", examples=["2026-11-01T00:00:00Z"]
    )
    observed_before: DateTime | None = Field(
        None, description="Only items observed before this time (RFC 3339)", examples=["2026-12-01T00:00:00Z"]
    )

    @model_validator(mode="after")
    def _range(self) -> SearchRequest:
        if self.observed_after and self.observed_before and self.observed_after >= self.observed_before:
            raise ValueError("observed_after must be before observed_before: send the earlier time as observed_after")
        return self


class SearchHit(ReadModel):
    item: ItemRead
    score: float = Field(description="The relevance the window uses (0-1, 1 for the best match of this query)")
    lexical: float | None = Field(
        description="The BM25 score of the item's words against the query (null: no query word matched)"
    )
    vector: float | None = Field(
        description="The cosine of the item's embedding with the query's (null: not among the index's matches, "
        "or the index was not used)"
    )
    matched: list[str] = Field(description="The query's words found in the item (after stemming)")
    why: str = Field(description="Why the item matched, in words")


class SearchTokens(ReadModel):
    budget: int | None = Field(description="The request's budget, if any")
    used: int = Field(description="Tokens of the returned items' content")


class SearchResponse(ReadModel):
    items: list[SearchHit] = Field(description="Best first")
    tokens: SearchTokens
    warnings: list[str] = Field(description="E.g. degraded: the vector index could not be used")
