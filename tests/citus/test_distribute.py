"""``ctxmem citus distribute`` on a real cluster: every table placed as docs/citus.md says, idempotent."""

from __future__ import annotations

import asyncpg

from service.db import citus
from service.db.engine import Database, plain_url
from service.settings import Settings


async def test_every_table_is_placed(db: Database, settings: Settings) -> None:
    conn = await asyncpg.connect(plain_url(settings.database.url))
    try:
        state = await citus.read_state(conn)
        again = await citus.distribute(conn)
    finally:
        await conn.close()
    assert state.reference == set(citus.REFERENCE_TABLES)
    assert state.distributed == set(citus.DISTRIBUTED_TABLES) - set(citus.OPTIONAL_TABLES)
    assert again.statements == [], again.statements
