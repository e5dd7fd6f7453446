"""A Citus cluster on loopback: a coordinator and two workers, each a PostgreSQL of the Citus build
(``tests/citus/build.py``) run as an unprivileged user when the tests run as root (PostgreSQL refuses root).

Citus does not create a database on the workers: :meth:`Cluster.create_database` creates it on every node,
with the extension, and registers the workers in it on the coordinator.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass, field
from pathlib import Path

import asyncpg
from sqlalchemy.engine import make_url

from tests.proof.pgserver import PgServer, new_server

HOST = "127.0.0.1"
# Citus's own settings for a test cluster: its library loaded at start; no background rebalancer or
# statistics collection to compete with the tests for two cores.
OPTIONS = {
    "shared_preload_libraries": "citus",
    "max_connections": "200",
    "citus.enable_statistics_collection": "off",
    "fsync": "off",
    "synchronous_commit": "off",
    "full_page_writes": "off",
}


@dataclass
class Cluster:
    coordinator: PgServer
    workers: list[PgServer] = field(default_factory=list)

    @property
    def nodes(self) -> list[PgServer]:
        return [self.coordinator, *self.workers]

    def url(self, database: str = "postgres") -> str:
        return self.coordinator.url(database)

    async def create_database(self, name: str) -> str:
        """Database ``name`` on every node with Citus in it, the workers registered; its coordinator URL."""
        for node in self.nodes:
            conn = await asyncpg.connect(node.url())
            try:
                await conn.execute(f'CREATE DATABASE "{name}"')
            finally:
                await conn.close()
            conn = await asyncpg.connect(node.url(name))
            try:
                await conn.execute("CREATE EXTENSION citus")
            finally:
                await conn.close()
        conn = await asyncpg.connect(self.url(name))
        try:
            await conn.execute("SELECT citus_set_coordinator_host($1, $2)", HOST, self.coordinator.port)
            for worker in self.workers:
                await conn.execute("SELECT citus_add_node($1, $2)", HOST, worker.port)
        finally:
            await conn.close()
        return self.url(name)

    async def drop_database(self, url: str) -> None:
        name = make_url(url).database
        for node in self.nodes:
            with contextlib.suppress(OSError, asyncpg.PostgresError):
                conn = await asyncpg.connect(node.url())
                try:
                    await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
                finally:
                    await conn.close()

    def stop(self) -> None:
        for node in self.nodes:
            node.cleanup()


async def start_cluster(bin_dir: Path, *, workers: int = 2) -> Cluster:
    nodes = [new_server("ctxmem-citus-", bin_dir=bin_dir, options=dict(OPTIONS)) for _ in range(workers + 1)]
    cluster = Cluster(nodes[0], nodes[1:])
    try:
        for node in nodes:
            await asyncio.to_thread(node.init)
            node.start()
        for node in nodes:
            await node.wait_ready()
    except BaseException:
        cluster.stop()
        raise
    return cluster
