"""Builds the vector index named by settings (``CTXMEM_VECTOR_BACKEND``). Each backend's package is imported
only when chosen, so a deployment that talks to a Qdrant server does not load the embedded engine."""

from __future__ import annotations

from pathlib import Path

from service.vectors.base import VectorIndex

BACKENDS = ("edge", "pgvector", "qdrant", "memory", "local")


def build_index(
    backend: str,
    *,
    dim: int,
    data_dir: Path,
    url: str | None,
    api_key: str | None,
    build_threshold: int | None = None,
    database_url: str | None = None,
    shard_by_tenant: bool = False,
    shard_number: int | None = None,
    replication_factor: int | None = None,
) -> VectorIndex:
    """``edge`` (default): Qdrant Edge, embedded, under ``data_dir/vectors``; one process at a time; HNSW
    builds in a child process once ``build_threshold`` points were written and a user has that many
    (``None``: the adapter's default, 0: never).
    ``qdrant``: a Qdrant server at ``url`` (a cluster: ``shard_by_tenant``, with ``shard_number`` shards and
    ``replication_factor`` copies per tenant's key). ``memory``: qdrant-client in memory, lost at exit (tests).
    ``pgvector``: a table in the PostgreSQL at ``database_url`` (the service's own database), with the
    pgvector extension; every process that reaches the database shares it (``ctxmem serve --workers N``).
    ``local``: qdrant-client's local mode under ``data_dir/qdrant-local``: a Python scan of every point per
    search, slow past a few thousand points; a pure-Python fallback."""
    if backend == "edge":
        from service.vectors.qdrant_edge import QdrantEdgeIndex

        if build_threshold is None:
            return QdrantEdgeIndex(data_dir / "vectors", dim=dim)
        return QdrantEdgeIndex(data_dir / "vectors", dim=dim, build_threshold=build_threshold)
    if backend == "pgvector":
        from service.vectors.pgvector import PgVectorIndex

        if not database_url:
            raise ValueError("vector backend 'pgvector' needs the database URL")
        return PgVectorIndex(database_url, dim=dim)
    if backend in ("qdrant", "memory", "local"):
        from service.vectors.qdrant_server import QdrantServerIndex

        if backend == "qdrant":
            if not url:
                raise ValueError("vector backend 'qdrant' needs a server URL (CTXMEM_QDRANT_URL)")
            return QdrantServerIndex(
                url=url,
                api_key=api_key,
                dim=dim,
                shard_by_tenant=shard_by_tenant,
                shard_number=shard_number,
                replication_factor=replication_factor,
            )
        if backend == "memory":
            return QdrantServerIndex(location=":memory:", dim=dim)
        return QdrantServerIndex(path=data_dir / "qdrant-local", dim=dim)
    raise ValueError(f"unknown vector backend {backend!r}; expected one of {', '.join(BACKENDS)}")
