"""Small helpers shared by tests (imported as ``tests.helpers``)."""

from __future__ import annotations

from sqlalchemy import text

from service.db.engine import Database

USER_TABLES = ("observation", "profile_entry", "context_item", "event", "idempotency_record", "end_user")


async def count_rows(db: Database, tenant_id: str, table: str, user_id: str | None = None) -> int:
    sql = f"SELECT count(*) FROM {table} WHERE tenant_id = :t"  # table names are constants
    params = {"t": tenant_id}
    if user_id is not None:
        sql += " AND user_id = :u"
        params["u"] = user_id
    async with db.engine.connect() as conn:
        return int((await conn.execute(text(sql), params)).scalar_one())


async def tenant_rows(db: Database, tenant_id: str) -> dict[str, int]:
    return {t: await count_rows(db, tenant_id, t) for t in USER_TABLES}
