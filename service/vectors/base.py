"""The two interfaces of vector recall. Adapters: ``service/vectors/qdrant_server.py`` (a Qdrant server, or
qdrant-client's local mode) and ``service/vectors/qdrant_edge.py`` (Qdrant's embedded engine, the default).
Embedders: ``service/vectors/embedders.py``."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

# Payload fields stored with every point; all indexed, and every search filters by tenant and user.
PAYLOAD_FIELDS = ("tenant_id", "user_id", "type", "status", "domain")
COLLECTION = "ctxmem_items"


@dataclass(frozen=True)
class VectorPoint:
    id: uuid.UUID  # the context item's id
    vector: Sequence[float]
    payload: dict[str, Any] = field(default_factory=dict)  # PAYLOAD_FIELDS


@dataclass(frozen=True)
class Hit:
    id: uuid.UUID
    score: float  # higher is more similar (cosine)


class VectorIndexUnavailable(Exception):
    """The index cannot be reached or failed; callers fall back to PostgreSQL-only ranking."""


class VectorIndex(Protocol):
    """One collection of item vectors. Implementations raise VectorIndexUnavailable on any backend failure."""

    dim: int
    name: str

    async def ensure_collection(self) -> None: ...

    async def upsert(self, points: Sequence[VectorPoint]) -> None:
        """Insert or replace points by id (idempotent)."""

    async def delete(self, ids: Sequence[uuid.UUID]) -> None:
        """Remove points by id; unknown ids are ignored (idempotent)."""

    async def delete_user(self, tenant_id: str, user_id: str) -> None:
        """Remove every point of one user (erasure)."""

    async def search(
        self,
        vector: Sequence[float],
        *,
        tenant_id: str,
        user_id: str,
        limit: int,
        statuses: Sequence[str] | None = None,
        types: Sequence[str] | None = None,
    ) -> list[Hit]:
        """Top ``limit`` points of this tenant and user by cosine similarity, best first."""

    async def count(self, *, tenant_id: str | None = None, user_id: str | None = None) -> int: ...

    async def maintain(self) -> None:
        """Start background upkeep if due (the embedded index: an HNSW build in a child process) and
        return at once; the outbox worker calls it whenever it has caught up. No-op for a server."""

    async def settle(self) -> None:
        """Wait for upkeep that ``maintain()`` started (``OutboxWorker.drain``, tests, benchmarks)."""

    async def close(self) -> None: ...


class Embedder(Protocol):
    name: str
    dim: int
    # Cosine similarity below which a hit says nothing for this embedder (unrelated texts still score a
    # little above 0); the window ignores such hits. Overridden by the ``vector_min_score`` setting.
    min_score: float
    # The lexical ranking's weight when the two rankings are fused (convex), unless the
    # ``fusion_lexical_weight`` setting says otherwise: how much full-text search should lead this embedder.
    lexical_weight: float

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One unit-length vector per text, in order."""

    async def close(self) -> None: ...
