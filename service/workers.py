"""What each process of ``ctxmem serve --workers N`` imports (uvicorn starts its workers by spawning fresh
interpreters, so the app and the HTTP protocol are named by import strings, not handed over as objects).

The parent resolves the settings once — flags, environment, the backend the worker count implies — and
passes them to every worker whole, as JSON in ``WORKER_SETTINGS_ENV``: a worker reads no flag and does not
resolve anything differently from its parent. The parent has already started (or attached to) the embedded
PostgreSQL and migrated it, so the workers only attach.

A worker is stopped by its parent with SIGTERM: uvicorn shuts it down gracefully, then re-raises the signal
and the worker dies by it, exit handlers not run. So the worker gives its handle on the embedded PostgreSQL
back itself, once its app has stopped (else its pid would stay in the handle list and no process would
ever be the last one out to stop the server)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import threading
from collections.abc import AsyncIterator
from functools import lru_cache
from typing import Any

from fastapi import FastAPI

from service.settings import Settings

WORKER_SETTINGS_ENV = "CTXMEM_SERVE_WORKER_SETTINGS"


def export_settings(settings: Settings) -> None:
    """Hand ``settings`` to the workers the parent is about to spawn (they inherit its environment)."""
    os.environ[WORKER_SETTINGS_ENV] = settings.replace(auto_migrate=False).model_dump_json()


@lru_cache(maxsize=1)
def worker_settings() -> Settings:
    raw = os.environ.get(WORKER_SETTINGS_ENV)
    if not raw:
        raise RuntimeError(f"{WORKER_SETTINGS_ENV} is not set: service.workers is imported by ctxmem serve's workers")
    return Settings.model_validate_json(raw)


def _hangup_is_term(signum: int, frame: object) -> None:
    signal.raise_signal(signal.SIGTERM)  # uvicorn's graceful shutdown (it handles only SIGINT and SIGTERM)


def create_worker_app() -> FastAPI:
    """uvicorn's app factory in each worker."""
    from service.app import create_app
    from service.db.embedded import release_embedded

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGHUP, _hangup_is_term)
    app = create_app(worker_settings())
    inner = app.router.lifespan_context

    @contextlib.asynccontextmanager
    async def lifespan(app: Any) -> AsyncIterator[Any]:
        try:
            async with inner(app) as state:
                yield state
        finally:
            await asyncio.to_thread(release_embedded)

    app.router.lifespan_context = lifespan
    return app


def __getattr__(name: str) -> Any:
    # ``Protocol``: the HTTP protocol with the settings' limits, built in the worker (a class made at run
    # time cannot be pickled over to a spawned process).
    if name == "Protocol":
        from service.http_server import protocol_class

        return protocol_class(worker_settings())
    raise AttributeError(name)
