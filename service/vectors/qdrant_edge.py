"""The vector index on Qdrant Edge (``qdrant-edge-py``): Qdrant's Rust storage and search engine in process,
one shard in a directory, no server. The default backend.

How it is used, and why (the figures behind these choices, with the commands that produced them:
bench/README.md#figures-behind-design-choices):

- Reads run inline on the event loop: a filtered search, or an exact filtered count, of a user's points is
  far cheaper than a hand-off to a thread, and the engine holds the interpreter lock while it searches, so a
  thread would buy nothing.
- Writes run in a worker thread (``asyncio.to_thread``): an upsert's cost grows with its points, so an
  outbox batch would hold the loop for longer than a window takes, and erasing a user is a filtered delete
  that costs more.
- Durability: the shard writes every update to its write-ahead log before returning, so a crash loses
  nothing acknowledged; ``close()`` flushes the segments so the next start need not replay the WAL.
- New points land in one appendable segment, searched exactly through the keyword payload indexes. That is
  right for a user of a few thousand points and wrong for a large one: the exact scan grows with the user's
  points, and for a user of 100,000 it is most of a window's time.
- HNSW, built off the API process. ``optimize()`` builds the graphs, but holds the interpreter lock from
  start to end (the loop gets no turn for the whole build), and the engine runs no optimizer of its own. So
  a build copies the shard (writes held for the copy; reads go on), a child
  process (``python -m service.vectors.qdrant_edge build``, nice 10, one indexing thread so the API keeps
  the other core) optimises the copy, the API process opens the result and replays the writes it
  acknowledged meanwhile (kept in memory, bounded: a build that falls 200,000 points behind is dropped),
  then, with writes held for the last of that replay, names it the live generation (``<collection>.live``,
  written and fsynced before the switch) and closes and removes the old one. Until the switch every write,
  delete and erasure is applied to the live shard (and so visible at once) as well as journaled for the
  build; a crash before it leaves the old generation live with everything in its WAL, after it the new one,
  and leftovers of either kind are removed at the next open. ``close()`` kills a running child and drops
  its copy. One process per index: ``<collection>.lock`` is flocked while open, whatever the generation.
  What the loop still waits for, once per build (the engine holds the interpreter lock in these too): the
  flush before the copy, opening the built shard, closing the old one and each replayed batch (as long as
  its write took); the copy itself releases it. The flush stays: a copy without it is consistent too (the
  child's open replays the WAL copied along), but the old shard's close then flushes instead, for longer.
- What is built: no global graph (``m=0``) but one per large user (``payload_m=16`` on ``user_id``, the only
  field with ``enable_hnsw``, so no graph is built per tenant, status or type value; ``is_tenant`` groups a
  user's points on disk). Users below the full-scan threshold (10,000 KB: ~6,600 points of 384-d) get no
  graph, cost the build nothing and are still scored exactly, no slower after a build than before.
  ``ef_construct=100`` (Qdrant's default, what the server backend builds): with the child's one thread a
  lower one saves little build time, and a much cheaper graph (``m=8, ef_construct=32``) loses most of the
  recall. A global graph as well would lengthen the build and no search would use it (every search filters
  by user).
- Searched at ``hnsw_ef=200`` (the engine takes at least the limit), the balance of recall against time
  on texts hard for a graph (``bench.window``'s, of a 29-word vocabulary: every text is close to
  every other): a lower ef loses much of the recall, and each doubling above costs more time for less
  recall gained, though all stay far below an exact scan of a large user. ``m=32, ef_construct=128``
  bought the same recall for the same time and built slower. Real text embeds less uniformly; Qdrant's
  server backend builds the same kind of graph.
- Not chosen: int8 scalar quantisation of the exact scan, and binary quantisation (which also loses most of
  the recall): neither gets near a graph's search time, and both also need an optimised segment.
- When: ``maintain()``, called by the outbox worker whenever it has caught up (so a bulk import is built
  once, after it; never on a request), starts a build once ``build_threshold`` points
  (``CTXMEM_VECTOR_BUILD_THRESHOLD``, 20,000) were written since the last and the largest user (a facet over
  ``user_id``) has that many, so a shard of small users is never rebuilt. The next build indexes what
  arrived since (the optimiser merges segments as it sees fit).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import fcntl
import json
import logging
import os
import re
import shutil
import sys
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from qdrant_edge import (
    CountRequest,
    Distance,
    EdgeConfig,
    EdgeOptimizersConfig,
    EdgeShard,
    EdgeVectorParams,
    FacetRequest,
    FieldCondition,
    Filter,
    HnswIndexConfig,
    KeywordIndexParams,
    MatchAny,
    MatchValue,
    Point,
    Query,
    QueryRequest,
    SearchParams,
    UpdateOperation,
)

from service.vectors.base import (
    COLLECTION,
    PAYLOAD_FIELDS,
    VectorIndex,
    VectorIndexUnavailable,
    VectorPoint,
    Where,
    unavailable,
)

# The engine raises bare Exception ("Service runtime error: …") for everything: its class says nothing.
_unavailable = partial(unavailable, "qdrant-edge", type_name=False)

log = logging.getLogger("ctxmem.vectors")

# The HNSW build (the module docstring gives the reasons for these numbers; the figures:
# bench/README.md#figures-behind-design-choices).
HNSW_M = 16  # edges per node of each large user's graph (payload_m); no global graph (m=0)
HNSW_EF_CONSTRUCT = 100  # Qdrant's default, what the server backend builds
# Candidates a graph search keeps (the engine uses at least the limit): the balance of recall against search time.
HNSW_EF_SEARCH = 200
# Below this much vector data (KB) a filter's points are scored exactly through the payload index rather
# than through a graph, and no graph is built for a user with fewer points: 10,000 KB is ~6,600 points of
# 384 dimensions (float32), few enough that an exact scan is about as fast as a graph search, and exact.
FULL_SCAN_KB = 10_000
BUILD_THREADS = 1  # the child leaves the other core to the API process
BUILD_NICE = 10
DEFAULT_BUILD_THRESHOLD = 20_000
# Writes kept for the replay into a build while it runs; a build that falls further behind is dropped.
JOURNAL_MAX_POINTS = 200_000


_SEARCH_PARAMS = SearchParams(hnsw_ef=HNSW_EF_SEARCH)  # ignored where points are scored exactly


def _field_params(field: str) -> KeywordIndexParams:
    """The payload index of each field: the user is what a graph is built per (``enable_hnsw``) and what
    points are grouped by on disk (``is_tenant``); tenant, type, status and domain only filter."""
    return KeywordIndexParams(is_tenant=field == "user_id", enable_hnsw=field == "user_id")


@dataclass(frozen=True)
class BuildParams:
    """What a build gives the shard (defaults: the module's constants)."""

    m: int = HNSW_M
    ef_construct: int = HNSW_EF_CONSTRUCT
    full_scan_kb: int = FULL_SCAN_KB
    threads: int = BUILD_THREADS

    def args(self) -> list[str]:
        return ["--m", str(self.m), "--ef-construct", str(self.ef_construct), "--full-scan-kb",
                str(self.full_scan_kb), "--threads", str(self.threads)]  # fmt: skip


def _config(dim: int, build: BuildParams | None = None) -> EdgeConfig:
    vectors = EdgeVectorParams(size=dim, distance=Distance.Cosine)
    if build is None:
        return EdgeConfig(vectors=vectors)
    hnsw = HnswIndexConfig(
        m=0,
        ef_construct=build.ef_construct,
        full_scan_threshold=build.full_scan_kb,
        max_indexing_threads=build.threads,
        payload_m=build.m,
    )
    optimizers = EdgeOptimizersConfig(indexing_threshold=build.full_scan_kb)
    return EdgeConfig(vectors=vectors, hnsw_config=hnsw, optimizers=optimizers)


def holder(home: Path, collection: str = COLLECTION) -> str | None:
    """The process holding the index under ``home`` open ("pid 1234: ctxmem serve …"), or None when no
    process does (the lock is free: taken and released at once)."""
    path = home / f"{collection}.lock"
    if not path.exists():
        return None
    fd = os.open(path, os.O_RDONLY)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            pid, _, command = os.pread(fd, 400, 0).decode(errors="replace").strip().partition(" ")
            if not pid:
                return "another process"
            return f"pid {pid}: {command}" if command else f"pid {pid}"
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


def in_use_message(home: Path, collection: str = COLLECTION) -> str:
    who = holder(home, collection) or "another process"
    return (
        f"the vector index in {home} is open in another process ({who}); the embedded index serves one "
        "process at a time: stop that process, or give this one its own data directory (--data-dir or "
        "CTXMEM_DATA_DIR)"
    )


class QdrantEdgeIndex(VectorIndex):
    """One Qdrant Edge shard (cosine) under ``path``, named ``collection``. Point ids are the item UUIDs.

    ``ensure_collection()`` opens (or creates) the shard; until then, and after ``close()``, every call raises
    ``VectorIndexUnavailable``. A vector of the wrong length raises ``ValueError`` before any I/O, and so does
    opening a shard made for another dimension.

    On disk: ``path/collection`` is the first generation of the shard; ``path/collection.<n>`` are later ones,
    written by HNSW builds, and ``path/collection.live`` names the generation in use (absent: the first).
    ``path/collection.lock`` is held while the index is open.

    ``maintain()`` (the outbox worker calls it when it has caught up) starts an HNSW build in a child process
    when at least ``build_threshold`` points were written since the last one and some user has that many
    points; 0 turns builds off. ``settle()`` waits for a running build, ``build()`` runs one now.
    """

    name = "qdrant-edge"

    def __init__(
        self,
        path: str | Path,
        *,
        dim: int,
        collection: str = COLLECTION,
        build_threshold: int = DEFAULT_BUILD_THRESHOLD,
        build_params: BuildParams | None = None,
    ) -> None:
        if dim < 1:
            raise ValueError(f"dim must be positive, got {dim}")
        if build_threshold < 0:
            raise ValueError(f"build_threshold must not be negative, got {build_threshold}")
        self.dim = dim
        self.collection = collection
        self.home = Path(path)
        self.path = self.home / collection  # the first generation; ``live_path`` is the one in use
        self.live_path = self.path
        self.build_threshold = build_threshold
        self.build_params = build_params or BuildParams()
        self.builds = 0  # builds swapped in by this object
        self._shard: EdgeShard | None = None
        self._lockfile: int | None = None
        # Serialises writes, opening, closing and the swap of a build, so close() never runs under a write
        # in its thread and no write is missed by a build's replay.
        self._lock = asyncio.Lock()
        self._journal: list[tuple[UpdateOperation, int]] | None = None  # writes since a build's copy
        self._journal_points = 0
        self._build_task: asyncio.Task[bool] | None = None
        self._build_process: asyncio.subprocess.Process | None = None
        self._closing = False
        self._written = 0  # points written since the live generation was built (or opened, unbuilt)
        self._next_check = 0  # ``_written`` at which maintain() next asks whether a user is large

    async def ensure_collection(self) -> None:
        async with self._lock:
            if self._shard is None:
                self._shard = await asyncio.to_thread(self._open)
                self._closing = False

    def _open(self) -> EdgeShard:
        with _unavailable(f"open {self.path}"):
            self.home.mkdir(parents=True, exist_ok=True)
            lockfile = os.open(self.home / f"{self.collection}.lock", os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(lockfile, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError as exc:
                os.close(lockfile)
                raise VectorIndexUnavailable(in_use_message(self.home, self.collection)) from exc
            # Who holds it, for the message another process gets (see holder()).
            os.ftruncate(lockfile, 0)
            os.pwrite(lockfile, f"{os.getpid()} {' '.join(sys.argv)[:300]}\n".encode(), 0)
            try:
                self.live_path = self._live_generation()
                self._remove_stale_generations()
                shard = self._load(self.live_path)
                try:
                    info = shard.info()
                    indexed = set(info.payload_schema)
                    for field in PAYLOAD_FIELDS:
                        if field not in indexed:
                            shard.update(UpdateOperation.create_field_index(field, _field_params(field)))
                    self._written = max(0, info.points_count - info.indexed_vectors_count)
                    self._next_check = 0
                except BaseException:
                    shard.close()
                    raise
            except BaseException:
                os.close(lockfile)
                raise
        self._lockfile = lockfile
        return shard

    def _load(self, directory: Path) -> EdgeShard:
        config = _config(self.dim)
        try:
            if (directory / "edge_config.json").exists() or (directory / "segments").exists():
                # With a config, load checks it against the stored segments (vector size, distance).
                return EdgeShard.load(str(directory), config)
            directory.mkdir(parents=True, exist_ok=True)
            return EdgeShard.create(str(directory), config)
        except Exception as exc:
            text = str(exc)
            if "ncompatible" in text:
                raise ValueError(f"the vector index at {directory} was made for another dimension: {text}") from exc
            if "WAL" in text and "WouldBlock" in text:
                raise VectorIndexUnavailable(
                    f"the vector index at {directory} is open in another process (Qdrant Edge allows one)"
                ) from exc
            raise

    def _pointer(self) -> Path:
        return self.home / f"{self.collection}.live"

    def _live_generation(self) -> Path:
        pointer = self._pointer()
        if not pointer.exists():
            return self.path
        name = pointer.read_text().strip()
        if not re.fullmatch(re.escape(self.collection) + r"(\.\d+)?", name) or not (self.home / name).is_dir():
            raise VectorIndexUnavailable(f"{pointer} names {name!r}, which is not a generation of the index")
        return self.home / name

    def _generations(self) -> list[Path]:
        pattern = re.compile(re.escape(self.collection) + r"\.\d+")
        found = [p for p in self.home.iterdir() if p.is_dir() and pattern.fullmatch(p.name)]
        if self.path.is_dir():
            found.append(self.path)
        return found

    def _remove_stale_generations(self) -> None:
        """Generations other than the live one: an unfinished build, or the one a build replaced."""
        for directory in self._generations():
            if directory != self.live_path:
                shutil.rmtree(directory, ignore_errors=True)

    def _next_generation(self) -> Path:
        numbers = [int(p.name.rsplit(".", 1)[1]) for p in self._generations() if p != self.path]
        return self.home / f"{self.collection}.{max(numbers, default=0) + 1}"

    async def upsert(self, points: Sequence[VectorPoint]) -> None:
        if not points:
            return
        batch = [Point(str(p.id), self._vector(p.vector), dict(p.payload)) for p in points]
        await self._write("upsert", UpdateOperation.upsert_points(batch), len(batch))

    async def delete(self, ids: Sequence[uuid.UUID]) -> None:
        if not ids:
            return
        await self._write("delete", UpdateOperation.delete_points([str(i) for i in ids]), len(ids))

    async def delete_user(self, tenant_id: str, user_id: str) -> None:
        flt = _filter(Where(tenant_id, user_id))
        assert flt is not None
        await self._write("delete_user", UpdateOperation.delete_points_by_filter(flt), 1)

    async def _nearest(self, vector: list[float], where: Where, limit: int) -> list[tuple[object, float]]:
        flt = _filter(where)
        request = QueryRequest(
            limit=limit,
            query=Query.Nearest(vector),
            filter=flt,
            with_payload=False,
            with_vector=False,
            params=_SEARCH_PARAMS,
        )
        with _unavailable("search"):
            points = self._open_shard().query(request)
        return [(p.id, p.score) for p in points]

    async def count(self, *, tenant_id: str | None = None, user_id: str | None = None) -> int:
        request = CountRequest(exact=True, filter=_filter(Where(tenant_id, user_id)))
        with _unavailable("count"):
            return self._open_shard().count(request)

    async def maintain(self) -> None:
        """Start an HNSW build in the background if one is due (see the class); returns at once."""
        if self._due():
            self._start_build()

    async def settle(self) -> None:
        """Wait until no build runs or is due (each swapped in or given up); raises nothing."""
        while True:
            task = self._build_task
            if task is not None and not task.done():
                with contextlib.suppress(Exception, asyncio.CancelledError):
                    await asyncio.shield(task)
            elif self._due():
                self._start_build()
            else:
                return

    async def build(self) -> bool:
        """Build the HNSW graphs now and swap them in; False if the build failed or was given up."""
        while self._building():
            await self.settle()
        task = self._start_build()
        return await asyncio.shield(task)

    def _due(self) -> bool:
        if self._shard is None or self._closing or self.build_threshold == 0 or self._building():
            return False
        if self._written < max(self.build_threshold, self._next_check):
            return False
        # Whether some user is large enough to get a graph: a facet over the user_id index (~ms); asked
        # again only after another quarter of the threshold was written.
        self._next_check = self._written + max(1, self.build_threshold // 4)
        try:
            top = self._shard.facet(FacetRequest(key="user_id", limit=1, exact=False))
        except Exception:
            return False
        return bool(top.hits) and top.hits[0].count >= self.build_threshold

    def _start_build(self) -> asyncio.Task[bool]:
        task = asyncio.create_task(self._run_build(), name=f"vector index build {self.path}")
        self._build_task = task
        return task

    def _building(self) -> bool:
        return self._build_task is not None and not self._build_task.done()

    async def _run_build(self) -> bool:
        t0 = time.perf_counter()
        try:
            result = await self._build()
        except Exception as exc:
            if self._closing:
                log.info("vector index build given up: the index is closing")
            else:
                log.error("vector index build failed; the index stays as it was: %s", exc, exc_info=exc)
                self._next_check = self._written + self.build_threshold  # not again before as much is written
            return False
        finally:
            self._journal = None
            self._journal_points = 0
        if result:
            log.info("vector index build swapped in after %.1f s", time.perf_counter() - t0)
            if self._due():  # as much was written during the build as starts one
                self._start_build()
        return result

    async def _build(self) -> bool:
        """Copy the shard (writes held for the copy), build the copy's graphs in a child process (the engine
        holds the interpreter lock while it builds), open the result, replay the writes made meanwhile, and
        make it the live generation (writes held for the last of the replay and the switch)."""
        t0 = time.perf_counter()
        async with self._lock:
            shard = self._open_shard()
            target = self._next_generation()
            source = self.live_path
            await asyncio.to_thread(shutil.rmtree, target, True)
            # Flushed first: the copy then needs no WAL replay. Skipping it moves no work off the loop: the
            # old shard's close() flushes what is dirty anyway, and takes longer to do it than this flush.
            await asyncio.to_thread(shard.flush)
            await asyncio.to_thread(shutil.copytree, source, target)
            self._journal = []
            written_at_copy = self._written
        t_copy = time.perf_counter()
        new: EdgeShard | None = None
        try:
            proc = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "service.vectors.qdrant_edge", "build", str(target), "--dim", str(self.dim),
                *self.build_params.args(),
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            )  # fmt: skip
            self._build_process = proc
            try:
                out, err = await proc.communicate()
            except BaseException:
                if proc.returncode is None:
                    proc.kill()
                    await proc.wait()
                raise
            finally:
                self._build_process = None
            if self._closing:
                raise RuntimeError("given up: the index is closing")
            if proc.returncode != 0:
                raise RuntimeError(f"the build process exited with {proc.returncode}: {err.decode()[-2000:]}")
            t_child = time.perf_counter()
            new = await asyncio.to_thread(self._load, target)
            t_open = time.perf_counter()
            done = 0
            while not self._closing and self._journal is not None and len(self._journal) - done > 8:
                for operation, _ in self._journal[done:]:
                    await asyncio.to_thread(new.update, operation)
                    done += 1
            async with self._lock:
                journal = self._journal
                if journal is None or self._shard is None or self._closing:
                    raise RuntimeError("given up: the index was closed or the build fell too far behind")
                for operation, _ in journal[done:]:
                    await asyncio.to_thread(new.update, operation)
                await asyncio.to_thread(self._switch_to, target)
                old, self._shard, new = self._shard, new, None
                self._written -= written_at_copy
                self._next_check = 0
                self._journal = None
                self.builds += 1
            await asyncio.to_thread(old.close)  # dropped: no flush of our own (close flushes what is dirty)
            await asyncio.to_thread(shutil.rmtree, source, True)
            log.info(
                "vector index build %s: copy %.1f s, child %.1f s (%s), open %.2f s, %d writes replayed in %.1f s",
                target.name, t_copy - t0, t_child - t_copy, out.decode().strip(), t_open - t_child, len(journal),
                time.perf_counter() - t_open,
            )  # fmt: skip
            return True
        except BaseException:
            if new is not None:
                with contextlib.suppress(Exception):
                    await asyncio.to_thread(new.close)
            if self.live_path != target:
                await asyncio.to_thread(shutil.rmtree, target, True)
            raise

    def _switch_to(self, target: Path) -> None:
        """Name ``target`` the live generation, durably (then a restart opens it)."""
        pointer = self._pointer()
        tmp = pointer.with_suffix(".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            os.write(fd, target.name.encode())
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, pointer)
        dir_fd = os.open(self.home, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
        self.live_path = target

    async def close(self) -> None:
        # A running build gives up: its child is killed (the one process this object started), and the
        # build is awaited rather than cancelled, so that no step of it is left running in a thread.
        self._closing = True
        proc = self._build_process
        if proc is not None and proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
        await self.settle()
        self._build_task = None
        async with self._lock:
            shard, self._shard = self._shard, None
            lockfile, self._lockfile = self._lockfile, None
            try:
                if shard is not None:
                    with _unavailable("close"):
                        await asyncio.to_thread(_flush_and_close, shard)
            finally:
                if lockfile is not None:
                    os.close(lockfile)

    async def _write(self, operation: str, update: UpdateOperation, points: int) -> None:
        async with self._lock:
            with _unavailable(operation):
                await asyncio.to_thread(self._open_shard().update, update)
            self._written += points
            if self._journal is not None:
                self._journal.append((update, points))
                self._journal_points += points
                if self._journal_points > JOURNAL_MAX_POINTS:
                    self._journal = None  # the build gives up at its next look

    def _open_shard(self) -> EdgeShard:
        if self._shard is None:
            raise VectorIndexUnavailable(f"the vector index at {self.path} is not open")
        return self._shard

    def _vector(self, vector: Sequence[float]) -> list[float]:
        if len(vector) != self.dim:
            raise ValueError(f"vector has {len(vector)} dimensions, the index at {self.path} has {self.dim}")
        # The engine converts the numbers itself (any real number); a float() per element here would double
        # the Python-side cost of an upsert.
        return vector if isinstance(vector, list) else list(vector)


def build_graphs(directory: str | Path, *, dim: int, params: BuildParams) -> dict[str, Any]:
    """The child process's work: the shard copy at ``directory`` (not open elsewhere) gets its payload
    indexes' parameters and its HNSW graphs (``optimize()``), and is flushed and closed."""
    t0 = time.perf_counter()
    shard = EdgeShard.load(str(directory), _config(dim, params))
    try:
        schema = shard.info().payload_schema
        for field in PAYLOAD_FIELDS:
            want = _field_params(field)
            have = schema[field].params if field in schema else None
            if not isinstance(have, KeywordIndexParams) or (have.is_tenant, have.enable_hnsw) != (
                want.is_tenant,
                want.enable_hnsw,
            ):
                if field in schema:
                    shard.update(UpdateOperation.delete_field_index(field))
                shard.update(UpdateOperation.create_field_index(field, want))
        changed = shard.optimize()
        info = shard.info()
        shard.flush()
    finally:
        shard.close()
    return {
        "optimized": changed,
        "points": info.points_count,
        "indexed": info.indexed_vectors_count,
        "segments": info.segments_count,
        "seconds": round(time.perf_counter() - t0, 1),
    }


def _flush_and_close(shard: EdgeShard) -> None:
    try:
        shard.flush()
    finally:
        shard.close()


def _filter(where: Where) -> Filter | None:
    must = [FieldCondition(key=k, match=MatchValue(v)) for k, v in where.equal().items()]
    must += [FieldCondition(key=k, match=MatchAny(v)) for k, v in where.one_of().items()]
    return Filter(must=must) if must else None


def _main(argv: Sequence[str] | None = None) -> int:
    """``python -m service.vectors.qdrant_edge build DIR --dim N``: the build child (see ``_build``)."""
    parser = argparse.ArgumentParser(prog="python -m service.vectors.qdrant_edge")
    parser.add_argument("command", choices=["build"])
    parser.add_argument("directory")
    parser.add_argument("--dim", type=int, required=True)
    parser.add_argument("--m", type=int, default=HNSW_M)
    parser.add_argument("--ef-construct", type=int, default=HNSW_EF_CONSTRUCT)
    parser.add_argument("--full-scan-kb", type=int, default=FULL_SCAN_KB)
    parser.add_argument("--threads", type=int, default=BUILD_THREADS)
    args = parser.parse_args(argv)
    params = BuildParams(args.m, args.ef_construct, args.full_scan_kb, args.threads)
    with contextlib.suppress(OSError):
        os.nice(BUILD_NICE)
    print(json.dumps(build_graphs(args.directory, dim=args.dim, params=params)))
    return 0


if __name__ == "__main__":
    sys.exit(_main())
