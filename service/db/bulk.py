"""Bulk writes with PostgreSQL COPY on the session's own connection (inside its transaction).

A batch of 1,000 items is one COPY instead of one multi-row INSERT: far less time in the database and in
the driver (figures: bench/README.md#figures-behind-design-choices). Columns a row leaves out are written as NULL;
generated columns are left to the database.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from typing import Any

import asyncpg
from sqlalchemy import Table
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.ext.asyncio import AsyncSession

from service.db.engine import driver_connection

_CLOSE_WAITS = 20  # x 10 ms: how long a failed COPY waits to see whether its connection is closing


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


async def copy_rows(session: AsyncSession, table: Table, rows: Sequence[dict[str, Any]]) -> None:
    if not rows:
        return
    columns = [c.name for c in table.columns if c.computed is None and c.identity is None]
    json_columns = {c.name for c in table.columns if isinstance(c.type, JSONB)}
    records = [
        tuple(
            (_dumps(row[c]) if row.get(c) is not None else None) if c in json_columns else row.get(c) for c in columns
        )
        for row in rows
    ]
    driver = await driver_connection(session)
    # SQLAlchemy's asyncpg dialect registers a jsonb codec that takes JSON text, hence _dumps above.
    try:
        await driver.copy_records_to_table(table.name, records=records, columns=columns)
    except (asyncpg.InternalClientError, asyncpg.InterfaceError) as exc:
        # When the server dies, its last error can reach the connection just before the socket closes, and
        # a COPY started in between fails with asyncpg's own state error ("cannot switch to state 21;
        # another operation is in progress"). If the connection closes right after, that was an outage
        # (503); otherwise it is a bug and stays one.
        for _ in range(_CLOSE_WAITS):
            if driver.is_closed():
                raise asyncpg.ConnectionDoesNotExistError("connection was closed in the middle of COPY") from exc
            await asyncio.sleep(0.01)
        raise
