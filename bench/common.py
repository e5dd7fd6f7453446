"""What the benchmarks share: a database for one run."""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path

from service.db.embedded import ensure_database, start_embedded


@contextlib.asynccontextmanager
async def bench_database(prefix: str, database_url: str = "") -> AsyncIterator[tuple[str, Path]]:
    """(database URL, temporary directory) for one benchmark run: ``database_url`` if given, else an
    embedded PostgreSQL in the new temporary directory with a database ``ctxmem_bench``. The directory
    (and the embedded server) are removed at the end."""
    tmp = Path(tempfile.mkdtemp(prefix=prefix))
    server = None
    try:
        if database_url:
            url = database_url
        else:
            server = start_embedded(tmp / "pg")
            await ensure_database(server.get_uri(), "ctxmem_bench")
            url = server.get_uri("ctxmem_bench")
        yield url, tmp
    finally:
        if server is not None:
            server.cleanup()
        shutil.rmtree(tmp, ignore_errors=True)
