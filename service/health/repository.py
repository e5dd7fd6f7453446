"""The one SQL statement of readiness: the database's migration revision."""

from __future__ import annotations

from sqlalchemy import text

from service.db.engine import Database


async def database_revision(db: Database) -> str | None:
    """The revision Alembic recorded (None on a database never migrated); raises if the database is unreachable."""
    async with db.engine.connect() as conn:
        revision: str | None = (
            await conn.execute(text("SELECT version_num FROM alembic_version"))
        ).scalar_one_or_none()
    return revision
