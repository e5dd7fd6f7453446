"""The operator console (docs/console.md): server-rendered pages at /console, signed in with an operator or
admin key. Each page module has its own router (``rendering.console_router()``); this one includes them all.
The app factory includes ``router`` and mounts ``static`` at ``STATIC_URL``."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.staticfiles import StaticFiles

from service.console import auth
from service.console.pages import entries, erase, jobs, timeline, users, window
from service.console.rendering import STATIC_DIR, STATIC_URL, ConsoleRoute

router = APIRouter(prefix="/console", include_in_schema=False, route_class=ConsoleRoute)
router.include_router(auth.router)
router.include_router(users.router)
router.include_router(entries.router)
router.include_router(window.router)
router.include_router(timeline.router)
router.include_router(jobs.router)
router.include_router(erase.router)

static = StaticFiles(directory=STATIC_DIR)

__all__ = ["STATIC_URL", "router", "static"]
