"""A real PostgreSQL primary and a real streaming replica on loopback, for the replica read path's tests
and bench: Debian's PostgreSQL server (``apt-get install -y postgresql`` on first use, as root), two data
directories, ``pg_basebackup -R`` for the replica, both started with ``pg_ctl`` on free ports.

initdb refuses to run as root, so as root the servers run as the ``postgres`` OS user the package creates.
The service connects as an ordinary role (``ctxmem``, owner of the database), as in production: what the
replica check reads must work without superuser rights."""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

BIN_ROOT = Path("/usr/lib/postgresql")
OS_USER = "postgres"
DATABASE = "ctxmem"
ROLE = "ctxmem"
REPLICATION_ROLE = "replicator"


class Unavailable(Exception):
    """PostgreSQL's server binaries are missing and cannot be installed here (not root, no apt-get)."""


def server_bin() -> Path:
    """The newest installed ``/usr/lib/postgresql/<major>/bin`` with initdb, installing Debian's server
    package first when none is there (root only)."""
    found = _installed()
    if found is not None:
        return found
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        raise Unavailable("the replica tests need PostgreSQL's server: run `sudo apt-get install -y postgresql`")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    install = ["apt-get", "-o", "DPkg::Lock::Timeout=600", "install", "-y", "-q", "--no-install-recommends"]
    install.append("postgresql")
    if subprocess.run(install, env=env, capture_output=True, timeout=900).returncode != 0:
        # A fresh image may have no package lists yet.
        subprocess.run(["apt-get", "-o", "DPkg::Lock::Timeout=600", "update", "-q"], env=env, check=True, timeout=600)
        subprocess.run(install, env=env, check=True, capture_output=True, timeout=900)
    found = _installed()
    if found is None:
        raise Unavailable("apt-get installed postgresql but no /usr/lib/postgresql/*/bin/initdb is there")
    return found


def _installed() -> Path | None:
    majors = sorted(
        (p for p in BIN_ROOT.glob("*/bin") if (p / "initdb").exists() and p.parent.name.isdigit()),
        key=lambda p: int(p.parent.name),
    )
    return majors[-1] if majors else None


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Server:
    bin: Path
    data: Path
    port: int
    run_as: str | None

    def url(self, user: str = ROLE, database: str = DATABASE) -> str:
        return f"postgresql://{user}@127.0.0.1:{self.port}/{database}"

    def run(self, tool: str, *args: str, check: bool = True, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        return _run([str(self.bin / tool), *args], run_as=self.run_as, check=check, timeout=timeout)

    def start(self) -> None:
        self.run("pg_ctl", "-D", str(self.data), "-l", str(self.data / "server.log"), "-w", "-t", "60", "start")

    def stop(self, mode: str = "fast") -> None:
        self.run("pg_ctl", "-D", str(self.data), "-m", mode, "-w", "-t", "60", "stop", check=False)

    def sql(self, statement: str, *, user: str = OS_USER, database: str = "postgres") -> str:
        """One statement through psql as ``user``; its output, unaligned and without headers."""
        done = self.run("psql", "-X", "-At", "-v", "ON_ERROR_STOP=1", "-c", statement, self.url(user, database))
        return done.stdout.strip()

    def log_tail(self, lines: int = 30) -> str:
        with contextlib.suppress(OSError):
            return "\n".join((self.data / "server.log").read_text(errors="replace").splitlines()[-lines:])
        return ""


@dataclass
class Cluster:
    primary: Server
    replica: Server
    root: Path

    def pause_replay(self) -> None:
        self.replica.sql("SELECT pg_wal_replay_pause()")

    def resume_replay(self) -> None:
        self.replica.sql("SELECT pg_wal_replay_resume()")

    def wait_caught_up(self, timeout: float = 30) -> None:
        """Until the replica has replayed everything the primary had written when this was called."""
        target = self.primary.sql("SELECT pg_current_wal_insert_lsn()")
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.replica.sql(f"SELECT pg_last_wal_replay_lsn() >= '{target}'::pg_lsn") == "t":
                return
            time.sleep(0.02)
        raise TimeoutError(f"the replica did not reach {target} in {timeout} s:\n{self.replica.log_tail()}")

    def wait_received(self, timeout: float = 30) -> None:
        """Until the replica has received WAL it has not replayed (its replay being paused)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.replica.sql("SELECT pg_last_wal_receive_lsn() > pg_last_wal_replay_lsn()") == "t":
                return
            time.sleep(0.01)
        raise TimeoutError(f"the replica received nothing new in {timeout} s")


def _run(cmd: list[str], *, run_as: str | None, check: bool, timeout: float) -> subprocess.CompletedProcess[str]:
    kwargs: dict[str, Any] = {"user": run_as} if run_as else {}
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd="/", **kwargs)
    if check and done.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited with {done.returncode}:\n{done.stdout}\n{done.stderr}")
    return done


_PRIMARY_CONF = """
listen_addresses = '127.0.0.1'
port = {port}
unix_socket_directories = ''
wal_level = replica
max_wal_senders = 4
wal_keep_size = '256MB'
hot_standby = on
fsync = off
synchronous_commit = on
full_page_writes = off
shared_buffers = '64MB'
max_connections = 60
"""
_HBA = f"""
local all all trust
host all all 127.0.0.1/32 trust
host replication {REPLICATION_ROLE} 127.0.0.1/32 trust
"""


@contextlib.contextmanager
def cluster() -> Iterator[Cluster]:
    """A primary with the ``ctxmem`` database and role, and a replica streaming from it; both stopped and
    removed at the end."""
    bin_dir = server_bin()
    run_as = OS_USER if os.geteuid() == 0 else None
    root = Path(tempfile.mkdtemp(prefix="ctxmem-replication-"))
    if run_as is not None:
        pw = pwd.getpwnam(run_as)
        os.chown(root, pw.pw_uid, pw.pw_gid)
    primary = Server(bin_dir, root / "primary", free_port(), run_as)
    replica = Server(bin_dir, root / "replica", free_port(), run_as)
    started: list[Server] = []
    try:
        primary.run("initdb", "-D", str(primary.data), "-U", OS_USER, "--auth=trust", "-E", "UTF8", "--locale=C.UTF-8")
        with (primary.data / "postgresql.conf").open("a") as conf:
            conf.write(_PRIMARY_CONF.format(port=primary.port))
        (primary.data / "pg_hba.conf").write_text(_HBA)
        primary.start()
        started.append(primary)
        primary.sql(f"CREATE ROLE {REPLICATION_ROLE} WITH REPLICATION LOGIN")
        primary.sql(f"CREATE ROLE {ROLE} WITH LOGIN")
        primary.sql(f"CREATE DATABASE {DATABASE} OWNER {ROLE}")
        primary.run(
            "pg_basebackup", "-D", str(replica.data), "-R", "-X", "stream", "-c", "fast",
            "-d", f"host=127.0.0.1 port={primary.port} user={REPLICATION_ROLE}",
        )  # fmt: skip
        with (replica.data / "postgresql.conf").open("a") as conf:
            conf.write(f"port = {replica.port}\n")
        replica.start()
        started.append(replica)
        yield Cluster(primary, replica, root)
    finally:
        for server in reversed(started):
            server.stop("immediate")
        shutil.rmtree(root, ignore_errors=True)
