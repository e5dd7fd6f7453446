"""A request context for calling a service directly, as an endpoint would: ``service.x(ctx, *, ...)``.

The principal is the real one of a key (authenticated like a request); the unit of work commits on success
and rolls back on error, as the session dependency does. Imported as ``tests.service.service_context``.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from datetime import datetime
from typing import Any

from fastapi import FastAPI

from service.auth.service import authenticate
from service.caches import app_caches
from service.clock import Clock
from service.context import RequestContext
from service.db.engine import Database, session_scope
from service.settings import Settings


@contextlib.asynccontextmanager
async def service_context(
    app: FastAPI,
    key: dict[str, str],
    *,
    now: datetime | None = None,
    vectors: Any = None,
    **settings_changes: Any,
) -> AsyncIterator[RequestContext]:
    """``key`` is a header dict as the ``tenant`` fixture gives (``tenant.agent``); ``settings_changes``
    override single settings for this call only."""
    db: Database = app.state.db
    settings: Settings = app.state.settings
    if settings_changes:
        settings = settings.replace(**settings_changes)
    async with session_scope(db) as session:
        principal = await authenticate(session, key["Authorization"])
        caches = app_caches(app.state)
        yield RequestContext(session, principal, settings, app.state.tokenizer, now or Clock().now(), vectors, caches)
