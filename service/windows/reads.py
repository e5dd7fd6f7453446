"""Which database serves a window: a streaming replica when the window writes nothing, else the primary
(service/db/replicas.py decides which replica, and whether one has the user's writes yet).

A window writes when it archives history: a stored session's turns that fall out (a key that may write
items, ``CTXMEM_WINDOW_ARCHIVE_SESSION_TURNS`` on) or the request's own with ``archive_dropped``. Such a
window reads where it writes, in one transaction, as it always has."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from schemas.windows import WindowRequest
from service.auth.principal import Permission
from service.context import RequestContext
from service.db.replicas import Reads
from service.windows import service
from service.windows.metrics import WindowStats


def may_write(ctx: RequestContext, req: WindowRequest) -> bool:
    """Whether building this window may archive history (build_window's two ways of doing it)."""
    if req.archive_dropped:
        return True
    stored_history = req.session_id is not None and not req.messages
    return stored_history and ctx.settings.window.archive_session_turns and ctx.principal.can(Permission.ITEMS_WRITE)


async def window(
    ctx: RequestContext,
    *,
    user_id: str,
    req: WindowRequest,
    reads: Reads,
    observe: Callable[[WindowStats], None] | None = None,
) -> dict[str, Any]:
    """``service.build_window`` on a replica when it writes nothing and one is fit, else on the primary."""

    async def build(c: RequestContext) -> dict[str, Any]:
        return await service.build_window(c, user_id=user_id, req=req, observe=observe)

    if may_write(ctx, req):
        return await reads.on_primary(ctx, build)
    return await reads.run(ctx, build)
