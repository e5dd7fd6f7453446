"""The vector index in PostgreSQL itself, with the ``pgvector`` extension: one table of points beside the data,
reachable from every process that reaches the database. What ``ctxmem serve --workers N`` uses on the
embedded default (the embedded PostgreSQL 18 ships pgvector 0.8); selectable anywhere as
``CTXMEM_VECTOR_BACKEND=pgvector``.

How, and why (the figures, from ``python -m bench.vector_index``: docs/operations.md#workers):

- One table (``item_vector`` by default): the item id, the payload fields as columns, ``embedding
  vector(dim)``. The dimension is a setting (the embedder's), so the table is made here, by
  ``ensure_collection()`` under an advisory lock, as a Qdrant collection is made by its backend, not by a
  migration: the migrations then run on a server without pgvector too, and the table is derived data (the
  outbox rebuilds it), like the other backends' collections.
- A search is a filtered exact scan: the btree on ``(tenant_id, user_id)`` finds the user's points and
  PostgreSQL scores them all (``<=>``, cosine distance, in C) and keeps the top ``limit``: exact, like the
  embedded index below its HNSW threshold. PostgreSQL's own share of a search is small; end to end it is
  slower than the embedded index's scan in process (a round trip, and a core to wait for on a busy box), but
  it runs off the API process's interpreter and every worker reaches it.
- No HNSW index: PostgreSQL keeps one current on every insert, which slows the outbox's writes by orders of
  magnitude. So a user of 100,000 points costs a scan of them per search; such users are
  better served by one worker on the embedded index (graphs per large user) or by a Qdrant server.
- Writes go straight to the table, one statement per batch (``unnest`` of arrays, the vectors in pgvector's
  binary form); nothing to build, so ``maintain()`` and ``settle()`` have nothing to do.
- Its own small asyncpg pool (``POOL_SIZE`` connections), not the request's session pool: a window holds a
  session connection while it searches, and a search that waited for the same pool could wait for ever.
- The first ``ensure_collection()`` that creates the table also queues a ``sync`` of every active item in
  the outbox (same transaction), so switching an existing data directory to this backend fills it.
"""

from __future__ import annotations

import contextlib
import re
import struct
import uuid
from collections.abc import AsyncIterator, Sequence
from functools import partial
from typing import Any

import asyncpg
import numpy as np

from service.db.engine import plain_url
from service.db.models import ACTIVE_STATUSES
from service.vectors.base import VectorIndex, VectorIndexUnavailable, VectorPoint, Where, unavailable

_unavailable = partial(unavailable, "pgvector")

TABLE = "item_vector"
POOL_SIZE = 4
# Any constant works; the same in every process that creates the table.
_CREATE_LOCK = 0x63_78_70_67_76  # "cxpgv"

INSTALL_HINT = (
    "install pgvector on the PostgreSQL server (Debian/Ubuntu: apt install postgresql-<major>-pgvector; "
    "https://github.com/pgvector/pgvector#installation) and have a superuser run CREATE EXTENSION vector in "
    "the database, or choose another vector backend: CTXMEM_VECTOR_BACKEND=qdrant with CTXMEM_QDRANT_URL, "
    "edge with one worker (CTXMEM_WORKERS=1), or off"
)


class PgVectorMissing(VectorIndexUnavailable):
    """The database has no pgvector extension and this role cannot create it: a configuration error."""


class PgVectorIndex(VectorIndex):
    """Points in the table ``table`` of the database at ``url`` (cosine). Point ids are the item UUIDs.

    ``ensure_collection()`` creates the extension (if the role may), the table and its indexes when missing,
    and opens the pool; until then, and after ``close()``, every call raises ``VectorIndexUnavailable``. A
    table made for another dimension raises ``ValueError``, as does a vector of the wrong length (before any
    I/O). No pgvector on the server raises ``PgVectorMissing`` with what to install."""

    name = "pgvector"

    def __init__(
        self,
        url: str,
        *,
        dim: int,
        table: str = TABLE,
        pool_size: int = POOL_SIZE,
    ) -> None:
        if dim < 1:
            raise ValueError(f"dim must be positive, got {dim}")
        if not re.fullmatch(r"[a-z_][a-z0-9_]{0,50}", table):
            raise ValueError(f"table must be a lower-case SQL identifier, got {table!r}")
        self.url = plain_url(url)
        self.dim = dim
        self.table = table
        self.pool_size = pool_size
        self._pool: asyncpg.Pool | None = None
        self._upsert = (
            f"INSERT INTO {table} (item_id, tenant_id, user_id, type, status, domain, embedding) "
            "SELECT * FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], "
            "$7::vector[]) "
            "ON CONFLICT (item_id) DO UPDATE SET tenant_id = EXCLUDED.tenant_id, user_id = EXCLUDED.user_id, "
            "type = EXCLUDED.type, status = EXCLUDED.status, domain = EXCLUDED.domain, embedding = EXCLUDED.embedding"
        )

    # --- setup ------------------------------------------------------------------------------------------
    async def ensure_collection(self) -> None:
        if self._pool is not None:
            return
        with _unavailable("ensure_collection"):
            conn = await asyncpg.connect(self.url)
            try:
                await self._create(conn)
            finally:
                await conn.close()
            self._pool = await asyncpg.create_pool(self.url, min_size=1, max_size=self.pool_size, init=_vector_codec)

    async def _create(self, conn: asyncpg.Connection) -> None:
        t = self.table
        async with conn.transaction():
            await conn.execute("SELECT pg_advisory_xact_lock($1)", _CREATE_LOCK)
            if not await conn.fetchval("SELECT 1 FROM pg_extension WHERE extname = 'vector'"):
                available = await conn.fetchval("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'")
                if not available:
                    raise PgVectorMissing(f"the PostgreSQL server has no pgvector extension: {INSTALL_HINT}")
                try:
                    async with conn.transaction():
                        await conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
                except asyncpg.InsufficientPrivilegeError as exc:
                    raise PgVectorMissing(
                        f"pgvector is installed but this role may not create the extension ({exc}): {INSTALL_HINT}"
                    ) from exc
            have = await conn.fetchval(
                "SELECT format_type(a.atttypid, a.atttypmod) FROM pg_attribute a "
                "WHERE a.attrelid = to_regclass($1) AND a.attname = 'embedding' AND NOT a.attisdropped",
                t,
            )
            if have is None:
                await conn.execute(
                    f"CREATE TABLE {t} (item_id uuid PRIMARY KEY, tenant_id text NOT NULL, user_id text NOT NULL, "
                    f"type text, status text, domain text, embedding vector({self.dim}) NOT NULL)"
                )
                await conn.execute(f"CREATE INDEX ix_{t}_user ON {t} (tenant_id, user_id)")
                await _backfill(conn)
            elif have != f"vector({self.dim})":
                raise ValueError(
                    f"the pgvector table {t!r} holds {have}, the embedder makes vectors of {self.dim}: "
                    "rebuild the index (docs/operations.md#rebuilding-the-vector-index)"
                )

    # --- writes -----------------------------------------------------------------------------------------
    async def upsert(self, points: Sequence[VectorPoint]) -> None:
        if not points:
            return
        vectors = [_Encoded(_encode(self._vector(p.vector))) for p in points]
        columns = [[str(p.payload.get(f)) if p.payload.get(f) is not None else None for p in points]
                   for f in ("tenant_id", "user_id", "type", "status", "domain")]  # fmt: skip
        async with self._connection("upsert") as conn:
            await conn.execute(self._upsert, [p.id for p in points], *columns, vectors)

    async def delete(self, ids: Sequence[uuid.UUID]) -> None:
        if not ids:
            return
        async with self._connection("delete") as conn:
            await conn.execute(f"DELETE FROM {self.table} WHERE item_id = ANY($1::uuid[])", list(ids))

    async def delete_user(self, tenant_id: str, user_id: str) -> None:
        async with self._connection("delete_user") as conn:
            await conn.execute(f"DELETE FROM {self.table} WHERE tenant_id = $1 AND user_id = $2", tenant_id, user_id)

    # --- reads ------------------------------------------------------------------------------------------
    async def _nearest(self, vector: list[float], where: Where, limit: int) -> list[tuple[object, float]]:
        sql, args = _where(where)
        args.append(vector)
        distance = f"embedding <=> ${len(args)}::vector"
        async with self._connection("search") as conn:
            rows = await conn.fetch(
                f"SELECT item_id, {distance} AS d FROM {self.table} {sql} ORDER BY d, item_id LIMIT {limit}", *args
            )
        return [(r["item_id"], 1.0 - float(r["d"])) for r in rows]

    async def count(self, *, tenant_id: str | None = None, user_id: str | None = None) -> int:
        sql, args = _where(Where(tenant_id, user_id))
        async with self._connection("count") as conn:
            return int(await conn.fetchval(f"SELECT count(*) FROM {self.table} {sql}", *args))

    async def maintain(self) -> None:
        """Nothing to do: there is no graph to build (see the module docstring)."""

    async def settle(self) -> None:
        """Nothing to wait for (see ``maintain``)."""

    async def close(self) -> None:
        pool, self._pool = self._pool, None
        if pool is not None:
            with _unavailable("close"):
                await pool.close()

    def _vector(self, vector: Sequence[float]) -> list[float]:
        if len(vector) != self.dim:
            raise ValueError(f"vector has {len(vector)} dimensions, the pgvector table {self.table!r} has {self.dim}")
        return vector if isinstance(vector, list) else list(vector)

    @contextlib.asynccontextmanager
    async def _connection(self, operation: str) -> AsyncIterator[asyncpg.Connection]:
        pool = self._pool
        if pool is None:
            raise VectorIndexUnavailable(f"the pgvector index {self.table!r} is not open")
        with _unavailable(operation):
            async with pool.acquire() as conn:
                yield conn


async def _vector_codec(conn: asyncpg.Connection) -> None:
    """``vector`` values in pgvector's binary form (uint16 dimensions, uint16 0, float4 each, big-endian): a
    query vector then reaches PostgreSQL as a ``vector`` (a cast of a ``real[]`` parameter would run once
    per row scanned under a generic plan, costing many times the search itself; figures:
    bench/README.md#figures-behind-design-choices)."""
    await conn.execute("SET application_name = 'ctxmem-vectors'")
    await conn.set_type_codec("vector", schema="public", encoder=_encode, decoder=_decode, format="binary")


class _Encoded:
    """A vector already in binary form, as an element of a ``vector[]`` parameter (asyncpg would read a list
    of lists as a two-dimensional array)."""

    __slots__ = ("data",)

    def __init__(self, data: bytes) -> None:
        self.data = data


def _encode(vector: Sequence[float] | _Encoded) -> bytes:
    if isinstance(vector, _Encoded):
        return vector.data
    return struct.pack(">HH", len(vector), 0) + np.asarray(vector, dtype=">f4").tobytes()


def _decode(data: bytes) -> list[float]:
    (n, _) = struct.unpack_from(">HH", data)
    return np.frombuffer(data, dtype=">f4", count=n, offset=4).astype(float).tolist()


async def _backfill(conn: asyncpg.Connection) -> None:
    """Queue every active item for the new table (the outbox worker embeds and writes them)."""
    if not await conn.fetchval(
        "SELECT to_regclass('vector_outbox') IS NOT NULL AND to_regclass('context_item') IS NOT NULL"
    ):
        return  # a database without ctxmem's schema (benchmarks): nothing to fill
    await conn.execute(
        "INSERT INTO vector_outbox (tenant_id, user_id, item_id, op, created_at, next_attempt_at) "
        "SELECT tenant_id, user_id, id, 'sync', now(), now() FROM context_item WHERE status = ANY($1::text[]) "
        "ORDER BY id",
        list(ACTIVE_STATUSES),
    )


def _where(where: Where) -> tuple[str, list[Any]]:
    clauses: list[str] = []
    args: list[Any] = []
    for column, value in where.equal().items():
        args.append(value)
        clauses.append(f"{column} = ${len(args)}")
    for field, values in where.one_of().items():
        args.append(values)
        clauses.append(f"{field} = ANY(${len(args)}::text[])")
    return ("WHERE " + " AND ".join(clauses)) if clauses else "", args
