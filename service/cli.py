"""The ``ctxmem`` command line. Flags override ``CTXMEM_*`` settings.

Every command resolves the database the same way the server does: with no ``CTXMEM_DATABASE_URL`` it
starts or attaches to the embedded PostgreSQL under the data directory, so ``ctxmem keys create`` run
next to a live ``ctxmem serve`` writes into the same database.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from schemas.jobs import JOB_NAMES
from service.settings import Settings

ROLES = ("agent", "operator", "admin")
# Exit codes (docs/operations.md, "Stopping"). 0 also when serve or scheduler is stopped by SIGTERM, SIGINT
# or SIGHUP; a one-shot command cut short by signal N exits 128 + N, after cleaning up like any other way out.
EXIT_FAILED = 1  # an error: at start-up (port taken, database unreachable, the app did not start) or later
EXIT_USAGE = 2  # invalid flags or settings
EXIT_IN_USE = 3  # ctxmem serve: the data directory's embedded vector index is held by another process
ONE_PROCESS_BACKENDS = ("edge", "memory", "local")  # vector backends one worker of several could not share


class Stopped(SystemExit):
    """SIGTERM or SIGHUP turned into an exception: the process unwinds — every ``finally``, the embedded
    PostgreSQL handle given back, exit handlers — instead of dying by the signal with all of it left behind.
    A SystemExit, so that asyncio re-raises it from whichever task it lands in."""

    def __init__(self, signum: int) -> None:
        super().__init__(128 + signum)
        self.signum = signum


def _on_stop_signal(signum: int, frame: object) -> None:
    _quiet_signals()
    raise Stopped(signum)


def _on_hangup(signum: int, frame: object) -> None:
    # A hangup stops ctxmem as SIGTERM does: while uvicorn serves, its SIGTERM handler shuts it down
    # gracefully (it knows only SIGINT and SIGTERM); otherwise ours unwinds.
    signal.raise_signal(signal.SIGTERM)


def _ignore_signal(signum: int, frame: object) -> None:
    return None


def _install_stop_handlers() -> None:
    signal.signal(signal.SIGTERM, _on_stop_signal)
    signal.signal(signal.SIGHUP, _on_hangup)


def _quiet_signals() -> None:
    """On the way out: a second signal must not cut the clean-up short (SIGKILL still does)."""
    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(sig, _ignore_signal)


def _settings(args: argparse.Namespace) -> Settings:
    overrides: dict[str, Any] = {}
    for name in ("data_dir", "database_url", "host", "port", "workers"):
        value = getattr(args, name, None)
        if value is not None:
            overrides[name] = value
    return Settings(**overrides)


async def _with_db(settings: Settings, work: Callable[[Any], Awaitable[int]], *, migrate_first: bool) -> int:
    from service.db import migrate
    from service.db.embedded import resolve_database_url
    from service.db.engine import create_database

    url, _server = await resolve_database_url(settings)
    db = create_database(url, settings)
    try:
        if migrate_first:
            await migrate.upgrade(db.engine)
        return await work(db)
    finally:
        await db.dispose()


def cmd_serve(args: argparse.Namespace) -> int:
    import uvicorn

    from service.app import create_app
    from service.db import migrate
    from service.http_server import uvicorn_options
    from service.logs import log_config
    from service.version import VERSION

    settings = _settings(args)
    if settings.server.processes > 1 and settings.vectors.backend in ONE_PROCESS_BACKENDS:
        print(
            f"error: {settings.server.processes} workers need a vector index every worker reaches, and "
            f"'{settings.vectors.backend}' lives inside one process: choose CTXMEM_VECTOR_BACKEND=pgvector (or "
            "qdrant with CTXMEM_QDRANT_URL, or off), or run one worker (--workers 1)",
            file=sys.stderr,
        )
        return 2
    if settings.vectors.backend == "edge":
        from service.vectors.qdrant_edge import holder

        # One process per embedded index: say so in one line, before anything starts, rather than fail
        # during the app's startup with a traceback.
        who = holder(settings.server.data_dir / "vectors")
        if who is not None:
            print(
                f"error: the data directory {settings.server.data_dir.resolve()} is in use by another process ({who}); "
                "stop it, or give this server its own directory with --data-dir or CTXMEM_DATA_DIR",
                file=sys.stderr,
            )
            return EXIT_IN_USE

    async def prepare(db: Any) -> int:
        if settings.vectors.backend != "pgvector":
            return 0
        # The shared index's table (and the pgvector extension) made once, here, before any worker starts;
        # a server without pgvector is one line saying what to install, not N workers' tracebacks.
        from service.vectors.factory import build_index
        from service.vectors.pgvector import PgVectorMissing

        index = build_index(
            "pgvector", dim=settings.vectors.embedding_dim, data_dir=settings.server.data_dir, url=None,
            api_key=None, database_url=db.url,
        )  # fmt: skip
        try:
            await index.ensure_collection()
        except PgVectorMissing as exc:
            print(f"error: vector backend pgvector: {exc}", file=sys.stderr)
            return 2
        finally:
            await index.close()
        return 0

    status = asyncio.run(_with_db(settings, prepare, migrate_first=settings.database.auto_migrate))
    if status:
        return status
    workers = settings.server.processes
    where = (
        f"embedded PostgreSQL under {settings.postgres_dir.resolve()}"
        if settings.database.embedded
        else "CTXMEM_DATABASE_URL"
    )
    exe = sys.argv[0] if sys.argv and sys.argv[0] else "ctxmem"
    print(
        f"ctxmem {VERSION} (schema {migrate.head_revision()}) serving on "
        f"http://{settings.server.host}:{settings.server.port} ({where}; "
        f"{workers} worker{'s' if workers > 1 else ''}, vector index {settings.vectors.backend})",
        flush=True,
    )
    print(f"  API docs:   http://{settings.server.host}:{settings.server.port}/docs", flush=True)
    print(f"  console:    http://{settings.server.host}:{settings.server.port}/console", flush=True)
    print(f"  create key: {exe} keys create --tenant demo --role agent   (in another terminal)", flush=True)
    common: dict[str, Any] = {
        "host": settings.server.host,
        "port": settings.server.port,
        "log_level": settings.server.log_level,
        "log_config": log_config(level=settings.server.log_level, fmt=settings.server.log_format),
        **uvicorn_options(settings),
    }
    if workers == 1:
        try:
            # SIGINT and SIGTERM (SIGHUP is made a SIGTERM) shut uvicorn down gracefully; it then re-raises the
            # signal, which our handler turns into Stopped (SIGINT: a KeyboardInterrupt uvicorn swallows).
            uvicorn.run(create_app(settings), **common)
        except Stopped:
            raise
        except SystemExit as exc:  # uvicorn's start-up failure (port taken, the app's start-up raised)
            if exc.code in (0, None):
                return 0
            print("error: ctxmem serve could not start (the log above says why)", file=sys.stderr)
            return EXIT_FAILED
        return 0
    from service.http_server import Supervisor
    from service.workers import export_settings

    # uvicorn spawns each worker as a fresh interpreter: the app and the protocol by import string, the
    # settings in the environment. This process supervises them (a worker that dies is replaced) and holds
    # the embedded PostgreSQL open until the last one has stopped.
    export_settings(settings)
    common["http"] = "service.workers:Protocol"
    shared = None
    if settings.database.replica_urls:
        # Read-your-writes across the workers: each notes a write's commit position where the others read
        # it (service/db/positions.py), so a user's read waits for the user's write whichever worker took it.
        from service.db.positions import SHARED_POSITIONS_ENV, SharedCommitPositions

        shared = SharedCommitPositions.create()
        os.environ[SHARED_POSITIONS_ENV] = str(shared)
    try:
        config = uvicorn.Config("service.workers:create_worker_app", factory=True, workers=workers, **common)
        try:
            sockets = [config.bind_socket()]
        except SystemExit:  # uvicorn has logged why (the port is taken, the address is not ours)
            print("error: ctxmem serve could not listen (the log above says why)", file=sys.stderr)
            return EXIT_FAILED
        supervisor = Supervisor(config, sockets=sockets)
        supervisor.run()
    finally:
        if shared is not None:
            shared.unlink(missing_ok=True)
    if supervisor.stopped_by is None:  # not stopped by a signal: a worker could not start
        print("error: ctxmem serve's workers could not start (the log above says why)", file=sys.stderr)
        return EXIT_FAILED
    return 0


def cmd_migrate(args: argparse.Namespace) -> int:
    from service.db import migrate

    settings = _settings(args)

    async def work(db: Any) -> int:
        await migrate.upgrade(db.engine)
        print(f"database at revision {await migrate.current_revision(db.engine)}")
        return 0

    return asyncio.run(_with_db(settings, work, migrate_first=False))


def cmd_citus_distribute(args: argparse.Namespace) -> int:
    """Distribute the tables on the Citus coordinator the database URL names (docs/citus.md)."""
    from service.db import citus

    if args.print_sql:
        print(citus.distribution_sql(), end="")
        return 0
    settings = _settings(args)
    if settings.database.embedded:
        print("error: needs --database-url (CTXMEM_DATABASE_URL): the Citus coordinator's database", file=sys.stderr)
        return EXIT_USAGE

    async def work(db: Any) -> int:
        import asyncpg

        from service.db.engine import plain_url

        conn = await asyncpg.connect(plain_url(db.url))
        try:
            done = await citus.distribute(conn, dry_run=args.dry_run)
        except citus.CitusError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return EXIT_FAILED
        finally:
            await conn.close()
        for sql in done.statements:
            print(sql)
        for table, why in done.skipped.items():
            print(f"-- {table} not distributed: it does not exist yet ({why}); run this command again then")
        verb = "would run" if args.dry_run else "ran"
        print(f"-- {verb} {len(done.statements)} statements" if done.statements else "-- nothing to do: distributed")
        return 0

    return asyncio.run(_with_db(settings, work, migrate_first=False))


def cmd_keys_create(args: argparse.Namespace) -> int:
    from service.auth.service import create_key
    from service.clock import Clock
    from service.db.engine import session_scope
    from service.errors import ServiceError

    settings = _settings(args)

    async def work(db: Any) -> int:
        try:
            async with session_scope(db) as session:
                issued = await create_key(
                    session,
                    tenant_id=args.tenant,
                    role=args.role,
                    name=args.name,
                    now=Clock().now(),
                    actor="cli",
                )
        except ServiceError as exc:
            print(f"error: {exc.detail}", file=sys.stderr)
            return 2
        print(issued.secret)
        print(
            f"# key {issued.id} (role {issued.role}, tenant {issued.tenant_id}) — shown once, stored hashed",
            file=sys.stderr,
        )
        return 0

    return asyncio.run(_with_db(settings, work, migrate_first=settings.database.auto_migrate))


def cmd_keys_list(args: argparse.Namespace) -> int:
    from service.auth import repository
    from service.db.engine import session_scope

    settings = _settings(args)

    async def work(db: Any) -> int:
        async with session_scope(db) as session:
            keys = await repository.list_keys(session, args.tenant)
        for k in keys:
            state = f"revoked {k.revoked_at.isoformat()}" if k.revoked_at else "active"
            print(f"{k.id}  {k.role:<8}  {k.prefix}…  {k.created_at.isoformat()}  {state}  {k.name or ''}")
        return 0

    return asyncio.run(_with_db(settings, work, migrate_first=settings.database.auto_migrate))


def cmd_keys_revoke(args: argparse.Namespace) -> int:
    from service.auth import repository
    from service.clock import Clock
    from service.db.engine import session_scope
    from service.events import Operator, event, record_events

    settings = _settings(args)
    try:
        key_id = uuid.UUID(args.id)
    except ValueError:
        print(f"error: {args.id!r} is not a key id", file=sys.stderr)
        return 2

    async def work(db: Any) -> int:
        now = Clock().now()
        async with session_scope(db) as session:
            key = await repository.revoke_key(session, args.tenant, key_id, now)
            if key is None:
                print(f"error: no key {key_id} in tenant {args.tenant!r}", file=sys.stderr)
                return 1
            by = Operator(tenant_id=args.tenant, actor="cli")
            await record_events(
                session,
                [event(by, user_id=None, action="key.revoked", entity_type="api_key", entity_id=key_id, now=now)],
            )
        print(f"revoked {key_id}")
        return 0

    return asyncio.run(_with_db(settings, work, migrate_first=settings.database.auto_migrate))


def cmd_demo(args: argparse.Namespace) -> int:
    from service.demo import run_demo

    settings = _settings(args)

    async def work(db: Any) -> int:
        return await run_demo(settings, db, turns=args.turns, budget=args.budget, keep=args.keep)

    return asyncio.run(_with_db(settings, work, migrate_first=settings.database.auto_migrate))


class ProgressBar:
    """A one-line progress bar on a terminal (stderr); silent when stderr is not a terminal."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.enabled = sys.stderr.isatty()

    def __call__(self, kind: str, done: int, total: int) -> None:
        if not self.enabled:
            return
        width = 30
        share = min(1.0, done / total) if total else 1.0
        bar = "#" * int(share * width) + "-" * (width - int(share * width))
        sys.stderr.write(f"\r{self.name} {kind:<22} [{bar}] {done}/{total or '?'}")
        sys.stderr.flush()

    def close(self) -> None:
        if self.enabled:
            sys.stderr.write("\n")


def cmd_jobs_run(args: argparse.Namespace) -> int:
    from datetime import datetime

    from jobs.runner import run_job
    from service.clock import Clock, FixedClock

    settings = _settings(args)
    clock: Clock = Clock()
    if args.now:
        try:
            at = datetime.fromisoformat(args.now.replace("Z", "+00:00"))
            clock = FixedClock(at)
        except ValueError:
            print(
                f"error: --now must be an ISO 8601 time with a zone, e.g. 2027-03-01T00:00:00Z (got {args.now!r})",
                file=sys.stderr,
            )
            return 2

    async def work(db: Any) -> int:
        bar = ProgressBar(args.name)
        try:
            result = await run_job(
                args.name, db=db, settings=settings, clock=clock, tenant_id=args.tenant, trigger="cli", progress=bar
            )
        finally:
            bar.close()
        rows = ", ".join(f"{k}={v}" for k, v in result.rows.items()) or "no changes"
        scope = f"tenant {args.tenant}" if args.tenant else "all tenants"
        if result.status == "skipped":
            print(f"{args.name}: skipped ({result.reason})")
            return 3
        print(f"{args.name} {result.status} as of {result.as_of.isoformat()} ({scope}), run {result.run_id}: {rows}")
        if result.error:
            print(f"error: {result.error}", file=sys.stderr)
        return 0 if result.status == "succeeded" else 1

    return asyncio.run(_with_db(settings, work, migrate_first=settings.database.auto_migrate))


def cmd_jobs_runs(args: argparse.Namespace) -> int:
    from service.db.engine import session_scope
    from service.jobs_api import repository

    settings = _settings(args)

    async def work(db: Any) -> int:
        async with session_scope(db) as session:
            rows = await repository.list_runs(session, tenant_id=None, name=args.name, limit=args.limit)
        for r in rows:
            changed = ", ".join(f"{k}={v}" for k, v in (r["rows"] or {}).items())
            print(
                f"{r['id']}  {r['name']:<8} {r['status']:<11} as of {r['as_of'].isoformat()}  "
                f"{r['trigger']:<9} {r['tenant_id'] or 'all'}  {changed}"
            )
        return 0

    return asyncio.run(_with_db(settings, work, migrate_first=settings.database.auto_migrate))


def cmd_scheduler(args: argparse.Namespace) -> int:
    import logging.config

    from jobs.scheduler import run_scheduler
    from service.logs import log_config

    settings = _settings(args)
    logging.config.dictConfig(log_config(level=settings.server.log_level, fmt=settings.server.log_format))

    async def work(db: Any) -> int:
        await run_scheduler(db, settings)
        return 0

    return asyncio.run(_with_db(settings, work, migrate_first=settings.database.auto_migrate))


def cmd_mcp(args: argparse.Namespace) -> int:
    # The MCP server lives in the SDK's distribution (ctxmem-client[mcp]), which the service does not need:
    # its options are the SDK's, passed through as they are.
    try:
        import mcp  # noqa: F401
        from ctxmem_client.mcp_cli import main as mcp_main
    except ImportError:
        print(
            "error: ctxmem mcp needs the MCP extra: pip install './sdk/python[mcp]' (ctxmem-client[mcp])",
            file=sys.stderr,
        )
        return 2
    return mcp_main(args.mcp_args, prog="ctxmem mcp")


def build_parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--data-dir", type=Path, help="data directory (CTXMEM_DATA_DIR, default ./.ctxmem)")
    common.add_argument("--database-url", help="postgresql:// URL (CTXMEM_DATABASE_URL; empty = embedded)")

    parser = argparse.ArgumentParser(prog="ctxmem", description="ctxmem: memory service for LLM agents")
    sub = parser.add_subparsers(dest="command", required=True)

    serve = sub.add_parser("serve", parents=[common], help="run the HTTP API")
    serve.add_argument("--host", help="bind address (CTXMEM_HOST, default 127.0.0.1)")
    serve.add_argument("--port", type=int, help="port (CTXMEM_PORT, default 8080)")
    serve.add_argument(
        "--workers", type=int, help="API processes (CTXMEM_WORKERS, default: the machine's cores; docs/operations.md)"
    )
    serve.set_defaults(func=cmd_serve, service=True)

    mig = sub.add_parser("migrate", parents=[common], help="apply database migrations")
    mig.set_defaults(func=cmd_migrate)

    citus_cmd = sub.add_parser("citus", help="run on a Citus cluster (docs/citus.md)")
    citus_sub = citus_cmd.add_subparsers(dest="citus_command", required=True)
    dist = citus_sub.add_parser(
        "distribute", parents=[common], help="distribute the tables by tenant on the coordinator (idempotent)"
    )
    dist.add_argument("--dry-run", action="store_true", help="print what it would run, run nothing")
    dist.add_argument("--print-sql", action="store_true", help="print the whole distribution script and exit")
    dist.set_defaults(func=cmd_citus_distribute)

    keys = sub.add_parser("keys", help="manage API keys")
    keys_sub = keys.add_subparsers(dest="keys_command", required=True)
    create = keys_sub.add_parser("create", parents=[common], help="create a key; prints the secret once")
    create.add_argument("--tenant", required=True)
    create.add_argument("--role", required=True, choices=ROLES)
    create.add_argument("--name", help="a label for the key")
    create.set_defaults(func=cmd_keys_create)
    lst = keys_sub.add_parser("list", parents=[common], help="list a tenant's keys (no secrets)")
    lst.add_argument("--tenant", required=True)
    lst.set_defaults(func=cmd_keys_list)
    rev = keys_sub.add_parser("revoke", parents=[common], help="revoke a key")
    rev.add_argument("--tenant", required=True)
    rev.add_argument("--id", required=True)
    rev.set_defaults(func=cmd_keys_revoke)
    jobs = sub.add_parser("jobs", help="scheduled jobs: run one now, list runs")
    jobs_sub = jobs.add_subparsers(dest="jobs_command", required=True)
    jrun = jobs_sub.add_parser("run", parents=[common], help="run a job now (once across replicas)")
    jrun.add_argument("name", choices=JOB_NAMES)
    jrun.add_argument("--now", help="run as of this ISO 8601 time, e.g. 2027-03-01T00:00:00Z")
    jrun.add_argument("--tenant", help="only this tenant (default: all)")
    jrun.set_defaults(func=cmd_jobs_run)
    jruns = jobs_sub.add_parser("runs", parents=[common], help="list recent job runs")
    jruns.add_argument("--name", choices=JOB_NAMES)
    jruns.add_argument("--limit", type=int, default=20)
    jruns.set_defaults(func=cmd_jobs_runs)

    sched = sub.add_parser("scheduler", parents=[common], help="run the job scheduler (any number of replicas)")
    sched.set_defaults(func=cmd_scheduler, service=True)

    demo = sub.add_parser("demo", parents=[common], help="run a scripted multi-turn session and show each window")
    demo.add_argument("--turns", type=int, default=16)
    demo.add_argument("--budget", type=int, default=1000, help="max_tokens of every window")
    demo.add_argument("--keep", action="store_true", help="keep the demo's tenant and data (default: removed)")
    demo.set_defaults(func=cmd_demo)

    # prefix_chars="+": every argument after "mcp", --help included, reaches the MCP server's own parser.
    mcp_cmd = sub.add_parser("mcp", add_help=False, prefix_chars="+", help="run the MCP server (stdio or HTTP)")
    mcp_cmd.add_argument("mcp_args", nargs=argparse.REMAINDER, help="ctxmem mcp --help lists them")
    mcp_cmd.set_defaults(func=cmd_mcp, attaches=False)  # an SDK client: no database, its own signals
    return parser


def main(argv: list[str] | None = None) -> int:
    """Runs a command; whichever way it ends (done, an error, SIGTERM, SIGINT, SIGHUP) this process's handle
    on the embedded PostgreSQL is given back — the last holder stops the server — before it exits."""
    args = build_parser().parse_args(argv)
    service = getattr(args, "service", False)  # serve, scheduler: a stop signal is how they end: exit 0
    attaches = getattr(args, "attaches", True)
    if attaches:
        _install_stop_handlers()
    try:
        return int(args.func(args))
    except Stopped as stop:
        return 0 if service else int(stop.code or 0)
    except ValidationError as exc:
        print(f"error: invalid settings: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 0 if service else 128 + signal.SIGINT
    finally:
        if attaches:
            _quiet_signals()
            from service.db.embedded import release_embedded

            release_embedded()


if __name__ == "__main__":
    sys.exit(main())
