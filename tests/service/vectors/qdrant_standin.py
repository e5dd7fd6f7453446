"""A stand-in for a Qdrant server (none can be installed here), speaking Qdrant's REST protocol over real
HTTP to ``qdrant_client.AsyncQdrantClient``: the collection, payload-index, shard-key and point routes the
index uses, with Qdrant's rules for user-defined sharding (``sharding_method: custom``) — a write must
name an existing shard key, a read without one spans every shard, a read naming a key sees that shard only.
Responses are built from qdrant-client's own models, so the client parses them as it would a server's.

It records every request (``requests``), so a test can check what the index sent."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from qdrant_client.http import models as m
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from tests.helpers import serve_in_thread

Point = tuple[list[float], dict[str, Any]]


@dataclass
class Collection:
    dim: int
    custom: bool
    shard_number: int | None
    replication_factor: int | None
    shards: dict[Any, dict[str, Point]] = field(default_factory=dict)  # shard key (None: auto) → id → point
    payload_schema: dict[str, Any] = field(default_factory=dict)


def _ok(result: Any) -> JSONResponse:
    return JSONResponse({"result": result, "status": "ok", "time": 0.0})


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"status": {"error": message}, "time": 0.0}, status_code=status)


def _keys(selector: Any) -> list[Any] | None:
    if selector is None:
        return None
    return list(selector) if isinstance(selector, list) else [selector]


def _matches(payload: dict[str, Any], flt: dict[str, Any] | None) -> bool:
    for cond in (flt or {}).get("must", []):
        value, match = payload.get(cond["key"]), cond["match"]
        if "value" in match and value != match["value"]:
            return False
        if "any" in match and value not in match["any"]:
            return False
    return True


class QdrantStandIn:
    def __init__(self) -> None:
        self.collections: dict[str, Collection] = {}
        self.requests: list[tuple[str, str, dict[str, Any]]] = []
        self.app = Starlette(
            routes=[
                Route("/collections/{name}/exists", self.exists, methods=["GET"]),
                Route("/collections/{name}", self.collection, methods=["GET", "PUT"]),
                Route("/collections/{name}/index", self.index, methods=["PUT"]),
                Route("/collections/{name}/shards", self.shard_key, methods=["PUT"]),
                Route("/collections/{name}/points", self.upsert, methods=["PUT"]),
                Route("/collections/{name}/points/delete", self.delete, methods=["POST"]),
                Route("/collections/{name}/points/query", self.query, methods=["POST"]),
                Route("/collections/{name}/points/count", self.count, methods=["POST"]),
            ]
        )

    async def _body(self, request: Request) -> dict[str, Any]:
        body: dict[str, Any] = await request.json() if await request.body() else {}
        self.requests.append((request.method, request.url.path, body))
        return body

    def _shards(self, c: Collection, selector: Any, *, write: bool) -> list[dict[str, Point]] | JSONResponse:
        keys = _keys(selector)
        if not c.custom:
            return [c.shards.setdefault(None, {})]
        if keys is None:
            if write:
                return _error(400, "Bad request: shard key must be specified for a collection with custom sharding")
            return list(c.shards.values())
        missing = [k for k in keys if k not in c.shards]
        if missing:
            return _error(404, f"Not found: shard key {missing[0]!r} does not exist")
        return [c.shards[k] for k in keys]

    async def exists(self, request: Request) -> JSONResponse:
        await self._body(request)
        return _ok({"exists": request.path_params["name"] in self.collections})

    async def collection(self, request: Request) -> JSONResponse:
        name, body = request.path_params["name"], await self._body(request)
        if request.method == "PUT":
            if name in self.collections:
                return _error(409, f"Wrong input: Collection `{name}` already exists!")
            custom = body.get("sharding_method") == "custom"
            self.collections[name] = Collection(
                body["vectors"]["size"], custom, body.get("shard_number"), body.get("replication_factor")
            )
            return _ok(True)
        c = self.collections.get(name)
        if c is None:
            return _error(404, f"Not found: Collection `{name}` doesn't exist!")
        info = m.CollectionInfo(
            status=m.CollectionStatus.GREEN,
            optimizer_status=m.OptimizersStatusOneOf.OK,
            segments_count=1,
            points_count=sum(len(s) for s in c.shards.values()),
            config=m.CollectionConfig(
                params=m.CollectionParams(
                    vectors=m.VectorParams(size=c.dim, distance=m.Distance.COSINE),
                    shard_number=c.shard_number,
                    replication_factor=c.replication_factor,
                    sharding_method=m.ShardingMethod.CUSTOM if c.custom else None,
                ),
                hnsw_config=m.HnswConfig(m=16, ef_construct=100, full_scan_threshold=10000),
                optimizer_config=m.OptimizersConfig(default_segment_number=0, flush_interval_sec=5),
            ),
            payload_schema=c.payload_schema,
        )
        return _ok(info.model_dump(mode="json", exclude_none=True))

    async def index(self, request: Request) -> JSONResponse:
        body = await self._body(request)
        c = self.collections[request.path_params["name"]]
        c.payload_schema[body["field_name"]] = {"data_type": "keyword", "points": 0}
        return _ok({"operation_id": 0, "status": "completed"})

    async def shard_key(self, request: Request) -> JSONResponse:
        body = await self._body(request)
        c = self.collections[request.path_params["name"]]
        if not c.custom:
            return _error(400, "Bad request: shard keys need sharding_method custom")
        if body["shard_key"] in c.shards:
            return _error(400, f"Bad request: Shard key {body['shard_key']} already exists")
        c.shards[body["shard_key"]] = {}
        return _ok(True)

    async def upsert(self, request: Request) -> JSONResponse:
        body = await self._body(request)
        c = self.collections[request.path_params["name"]]
        shards = self._shards(c, body.get("shard_key"), write=True)
        if isinstance(shards, JSONResponse):
            return shards
        for p in body["points"]:
            if len(p["vector"]) != c.dim:
                return _error(400, f"Wrong input: Vector dimension error: expected dim: {c.dim}")
            for shard in shards:
                shard[str(p["id"])] = (p["vector"], p.get("payload") or {})
        return _ok({"operation_id": 0, "status": "completed"})

    async def delete(self, request: Request) -> JSONResponse:
        body = await self._body(request)
        c = self.collections[request.path_params["name"]]
        shards = self._shards(c, body.get("shard_key"), write=False)
        if isinstance(shards, JSONResponse):
            return shards
        for shard in shards:
            gone = (
                [str(i) for i in body["points"]]
                if "points" in body
                else [i for i, (_, payload) in shard.items() if _matches(payload, body.get("filter"))]
            )
            for i in gone:
                shard.pop(i, None)
        return _ok({"operation_id": 0, "status": "completed"})

    async def query(self, request: Request) -> JSONResponse:
        body = await self._body(request)
        c = self.collections[request.path_params["name"]]
        shards = self._shards(c, body.get("shard_key"), write=False)
        if isinstance(shards, JSONResponse):
            return shards
        query = body["query"]
        q = np.asarray(query["nearest"] if isinstance(query, dict) else query, dtype=float)  # NearestQuery or a vector
        q /= np.linalg.norm(q) or 1.0
        hits = []
        for shard in shards:
            for i, (vector, payload) in shard.items():
                if _matches(payload, body.get("filter")):
                    v = np.asarray(vector, dtype=float)
                    hits.append((float(v @ q / (np.linalg.norm(v) or 1.0)), i))
        hits.sort(key=lambda h: (-h[0], h[1]))
        return _ok({"points": [{"id": i, "version": 0, "score": s} for s, i in hits[: body.get("limit", 10)]]})

    async def count(self, request: Request) -> JSONResponse:
        body = await self._body(request)
        c = self.collections[request.path_params["name"]]
        shards = self._shards(c, body.get("shard_key"), write=False)
        if isinstance(shards, JSONResponse):
            return shards
        n = sum(1 for shard in shards for _, payload in shard.values() if _matches(payload, body.get("filter")))
        return _ok({"count": n})


@contextlib.contextmanager
def serve(standin: QdrantStandIn) -> Iterator[str]:
    """The stand-in on a free loopback port, in a thread of its own; yields its URL."""
    with serve_in_thread(standin.app, what="the Qdrant stand-in") as port:
        yield f"http://127.0.0.1:{port}"
