"""The two interfaces of vector recall. Adapters: ``service/vectors/qdrant_server.py`` (a Qdrant server, or
qdrant-client's local mode) and ``service/vectors/qdrant_edge.py`` (Qdrant's embedded engine, the default).
Embedders: ``service/vectors/embedders.py``."""

from __future__ import annotations

import contextlib
import uuid
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

# Payload fields stored with every point; all indexed, and every search filters by tenant and user.
PAYLOAD_FIELDS = ("tenant_id", "user_id", "type", "status", "domain")
COLLECTION = "ctxmem_items"


# The values a search allows in one payload field: None allows any; an empty list allows none, so a search
# with one matches nothing (and is not sent to the index).
Allowed = Sequence[str] | None


@dataclass(frozen=True)
class Where:
    """The points a search, a count or an erasure looks at, in the backends' terms (``_filter``): one
    tenant's, one user's (None: any), and only those whose status and type are allowed."""

    tenant_id: str | None = None
    user_id: str | None = None
    statuses: Allowed = None
    types: Allowed = None

    def equal(self) -> dict[str, str]:
        """The payload fields that must have this value."""
        fields = {"tenant_id": self.tenant_id, "user_id": self.user_id}
        return {k: v for k, v in fields.items() if v is not None}

    def one_of(self) -> dict[str, list[str]]:
        """The payload fields that must have one of these values."""
        fields = {"status": self.statuses, "type": self.types}
        return {k: list(v) for k, v in fields.items() if v is not None}


def matches_nothing(limit: int, *allowed: Allowed) -> bool:
    """Whether a search can only come back empty: no room (``limit < 1``) or a field that allows no value."""
    return limit < 1 or any(a is not None and not a for a in allowed)


def point_uuid(point_id: object) -> uuid.UUID:
    """A point's id as the item id it is (the engines hand back strings or UUIDs)."""
    return point_id if isinstance(point_id, uuid.UUID) else uuid.UUID(str(point_id))


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


@contextlib.contextmanager
def unavailable(
    backend: str, operation: str, *, passes: tuple[type[Exception], ...] = (ValueError,), type_name: bool = True
) -> Iterator[None]:
    """Inside the block, any failure of ``backend`` is raised as ``VectorIndexUnavailable`` ("<backend>
    <operation> failed: …"), which callers answer by ranking with PostgreSQL alone. ``VectorIndexUnavailable``
    itself and the ``passes`` errors (a caller's bug, such as a vector of the wrong length) go through as
    they are. ``type_name`` puts the error's class in the message, which says nothing for an engine that
    raises bare ``Exception`` for everything."""
    try:
        yield
    except VectorIndexUnavailable:
        raise
    except passes:
        raise
    except Exception as exc:
        kind = f"{type(exc).__name__}: " if type_name else ""
        raise VectorIndexUnavailable(f"{backend} {operation} failed: {kind}{exc}") from exc


class VectorIndex(ABC):
    """One collection of item vectors. Implementations raise VectorIndexUnavailable on any backend failure,
    and ``ValueError`` for a vector of another dimension than ``dim``, before any I/O."""

    dim: int
    name: str

    @abstractmethod
    async def ensure_collection(self) -> None: ...

    @abstractmethod
    async def upsert(self, points: Sequence[VectorPoint]) -> None:
        """Insert or replace points by id (idempotent)."""

    @abstractmethod
    async def delete(self, ids: Sequence[uuid.UUID]) -> None:
        """Remove points by id; unknown ids are ignored (idempotent)."""

    @abstractmethod
    async def delete_user(self, tenant_id: str, user_id: str) -> None:
        """Remove every point of one user (erasure)."""

    async def search(
        self,
        vector: Sequence[float],
        *,
        tenant_id: str,
        user_id: str,
        limit: int,
        statuses: Allowed = None,
        types: Allowed = None,
    ) -> list[Hit]:
        """Top ``limit`` points of this tenant and user by cosine similarity, best first, among those whose
        status and type are allowed (see ``Allowed``)."""
        checked = self._vector(vector)  # a vector of the wrong size is refused even when nothing could match
        if matches_nothing(limit, statuses, types):
            return []
        found = await self._nearest(checked, Where(tenant_id, user_id, statuses, types), limit)
        return [Hit(point_uuid(point_id), score) for point_id, score in found]

    @abstractmethod
    async def _nearest(self, vector: list[float], where: Where, limit: int) -> list[tuple[object, float]]:
        """The backend's query behind ``search``, for a vector of the right size and a ``where`` that can
        match: (point id, score) pairs, best first."""

    @abstractmethod
    def _vector(self, vector: Sequence[float]) -> list[float]:
        """``vector`` as the backend takes it; ``ValueError`` if its size is not ``dim``."""

    @abstractmethod
    async def count(self, *, tenant_id: str | None = None, user_id: str | None = None) -> int: ...

    @abstractmethod
    async def maintain(self) -> None:
        """Start background upkeep if due (the embedded index: an HNSW build in a child process) and
        return at once; the outbox worker calls it whenever it has caught up. No-op for a server."""

    @abstractmethod
    async def settle(self) -> None:
        """Wait for upkeep that ``maintain()`` started (``OutboxWorker.drain``, tests, benchmarks)."""

    @abstractmethod
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
