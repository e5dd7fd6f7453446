"""The vector index on ``qdrant_client.AsyncQdrantClient``: a Qdrant server by URL (production), or the client's
local mode (``location=":memory:"`` for tests, ``path=`` on disk). Local mode is a pure-Python scan over every
point of the collection (no payload indexes, no HNSW): right for tests and tiny data sets, slow beyond a few
thousand points (see ``bench/vector_index.py``)."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from functools import partial
from pathlib import Path

from qdrant_client import AsyncQdrantClient, models

from service.vectors.base import (
    COLLECTION,
    PAYLOAD_FIELDS,
    VectorIndex,
    VectorPoint,
    Where,
    unavailable,
)

# Any error inside the client, a ValueError of its own included, means the server did not do it.
_unavailable = partial(unavailable, "qdrant", passes=())


class QdrantServerIndex(VectorIndex):
    """One collection (cosine) in Qdrant. Point ids are the item UUIDs as strings.

    Give exactly one of ``client`` (which ``close()`` then closes), ``url`` (+ ``api_key``),
    ``location=":memory:"`` or ``path``. Every client failure is raised as ``VectorIndexUnavailable``;
    a vector of the wrong length is a caller bug and raises ``ValueError`` before any I/O.

    ``shard_by_tenant`` (a distributed Qdrant cluster): the collection uses user-defined sharding and each
    tenant's points live under a shard key of their own (its tenant id, created on the tenant's first
    write), with ``shard_number`` shards per key and ``replication_factor`` copies of each. Every write
    and every read of one tenant names its key, so a search touches that tenant's shards only; a delete by
    ids and a count over all tenants span every shard.
    """

    def __init__(
        self,
        *,
        dim: int,
        client: AsyncQdrantClient | None = None,
        url: str | None = None,
        api_key: str | None = None,
        location: str | None = None,
        path: str | Path | None = None,
        collection: str = COLLECTION,
        timeout: int | None = None,
        shard_by_tenant: bool = False,
        shard_number: int | None = None,
        replication_factor: int | None = None,
    ) -> None:
        given = sum(x is not None for x in (client, url, location, path))
        if given != 1:
            raise ValueError("QdrantServerIndex needs exactly one of client, url, location or path")
        if dim < 1:
            raise ValueError(f"dim must be positive, got {dim}")
        if client is None:
            # check_compatibility would ask the server for its version from a background thread at
            # construction and warn if it is down; an unreachable index is a normal state here (the outbox
            # retries), reported by health, not a warning at start-up.
            client = AsyncQdrantClient(
                url=url,
                api_key=api_key,
                location=location,
                path=str(path) if path is not None else None,
                timeout=timeout,
                check_compatibility=False,
            )
        self.client = client
        self.dim = dim
        self.collection = collection
        self.shard_by_tenant = shard_by_tenant
        self.shard_number = shard_number
        self.replication_factor = replication_factor
        self._shard_keys: set[str] = set()  # created (or found existing) by this process
        options = client.init_options
        self.local = options.get("location") == ":memory:" or options.get("path") is not None
        if options.get("location") == ":memory:":
            self.name = "qdrant-memory"
        elif options.get("path") is not None:
            self.name = "qdrant-local"
        else:
            self.name = "qdrant"

    async def ensure_collection(self) -> None:
        """Create the collection and its keyword payload indexes if missing; an existing collection of
        another dimension raises ``ValueError`` (the embedder changed: reindex into a new collection), and so
        does one whose sharding is not what ``shard_by_tenant`` asks for."""
        if self.shard_by_tenant and self.local:
            raise ValueError("shard_by_tenant needs a Qdrant server (qdrant-client's local mode has no shard keys)")
        with _unavailable("ensure_collection"):
            exists = await self.client.collection_exists(self.collection)
            if not exists:
                try:
                    await self.client.create_collection(
                        self.collection,
                        vectors_config=models.VectorParams(size=self.dim, distance=models.Distance.COSINE),
                        sharding_method=models.ShardingMethod.CUSTOM if self.shard_by_tenant else None,
                        shard_number=self.shard_number,
                        replication_factor=self.replication_factor,
                    )
                except Exception:
                    # Another process may have created it between the check and the create.
                    if not await self.client.collection_exists(self.collection):
                        raise
            info = await self.client.get_collection(self.collection)
        vectors = info.config.params.vectors
        size = vectors.size if isinstance(vectors, models.VectorParams) else None
        if size != self.dim:
            raise ValueError(
                f"Qdrant collection {self.collection!r} holds vectors of size {size}, the embedder makes {self.dim}"
            )
        custom = info.config.params.sharding_method == models.ShardingMethod.CUSTOM
        if custom != self.shard_by_tenant:
            want, have = ("custom", "automatic") if self.shard_by_tenant else ("automatic", "custom")
            raise ValueError(
                f"Qdrant collection {self.collection!r} has {have} sharding and CTXMEM_QDRANT_SHARD_BY_TENANT asks "
                f"for {want}: reindex into a new collection (sharding cannot change in place)"
            )
        if self.local:
            # Local mode ignores payload indexes (it scans) and warns when asked for one.
            return
        with _unavailable("ensure_collection"):
            for field in PAYLOAD_FIELDS:
                if field in info.payload_schema:
                    continue
                await self.client.create_payload_index(
                    self.collection,
                    field,
                    field_schema=models.KeywordIndexParams(
                        type=models.KeywordIndexType.KEYWORD, is_tenant=field == "tenant_id"
                    ),
                )

    async def upsert(self, points: Sequence[VectorPoint]) -> None:
        if not points:
            return
        structs = [
            models.PointStruct(id=str(p.id), vector=self._vector(p.vector), payload=dict(p.payload)) for p in points
        ]
        if not self.shard_by_tenant:
            with _unavailable("upsert"):
                await self.client.upsert(self.collection, points=structs, wait=True)
            return
        by_tenant: dict[str, list[models.PointStruct]] = {}
        for p, struct in zip(points, structs, strict=True):
            by_tenant.setdefault(str(p.payload["tenant_id"]), []).append(struct)
        for tenant, group in sorted(by_tenant.items()):
            key = await self._shard_key(tenant)
            with _unavailable("upsert"):
                await self.client.upsert(self.collection, points=group, wait=True, shard_key_selector=key)

    async def delete(self, ids: Sequence[uuid.UUID]) -> None:
        if not ids:
            return
        with _unavailable("delete"):
            await self.client.delete(
                self.collection, points_selector=models.PointIdsList(points=[str(i) for i in ids]), wait=True
            )

    async def delete_user(self, tenant_id: str, user_id: str) -> None:
        selector = models.FilterSelector(filter=_filter(Where(tenant_id, user_id)))
        key = await self._shard_key(tenant_id) if self.shard_by_tenant else None
        with _unavailable("delete_user"):
            await self.client.delete(self.collection, points_selector=selector, wait=True, shard_key_selector=key)

    async def _nearest(self, vector: list[float], where: Where, limit: int) -> list[tuple[object, float]]:
        flt = _filter(where)
        key = await self._shard_key(where.tenant_id) if self.shard_by_tenant and where.tenant_id else None
        with _unavailable("search"):
            response = await self.client.query_points(
                self.collection,
                query=vector,
                query_filter=flt,
                limit=limit,
                with_payload=False,
                with_vectors=False,
                shard_key_selector=key,
            )
        return [(p.id, p.score) for p in response.points]

    async def count(self, *, tenant_id: str | None = None, user_id: str | None = None) -> int:
        flt = _filter(Where(tenant_id, user_id))
        key = await self._shard_key(tenant_id) if self.shard_by_tenant and tenant_id else None
        with _unavailable("count"):
            result = await self.client.count(self.collection, count_filter=flt, exact=True, shard_key_selector=key)
        return result.count

    async def _shard_key(self, tenant_id: str) -> str:
        """The tenant's shard key, created on first use (by this process or another: an existing key is fine)."""
        if tenant_id not in self._shard_keys:
            with _unavailable("create_shard_key"):
                try:
                    await self.client.create_shard_key(
                        self.collection,
                        tenant_id,
                        shards_number=self.shard_number,
                        replication_factor=self.replication_factor,
                    )
                except Exception as exc:
                    if "already exists" not in str(exc):
                        raise
            self._shard_keys.add(tenant_id)
        return tenant_id

    async def maintain(self) -> None:
        """Nothing to do: the server's optimizer builds its indexes in the background."""

    async def settle(self) -> None:
        """Nothing to wait for (see ``maintain``)."""

    async def close(self) -> None:
        with _unavailable("close"):
            await self.client.close()

    def _vector(self, vector: Sequence[float]) -> list[float]:
        if len(vector) != self.dim:
            raise ValueError(f"vector has {len(vector)} dimensions, the index {self.collection!r} has {self.dim}")
        return [float(x) for x in vector]


def _filter(where: Where) -> models.Filter | None:
    must: list[models.Condition] = [
        models.FieldCondition(key=k, match=models.MatchValue(value=v)) for k, v in where.equal().items()
    ]
    must += [models.FieldCondition(key=k, match=models.MatchAny(any=v)) for k, v in where.one_of().items()]
    return models.Filter(must=must) if must else None
