"""A real ``ctxmem serve`` in a child process on loopback, for the tests that need the whole HTTP stack,
the outbox worker running beside requests, or real parallelism (the proof tests of issue #12)."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def child_env(database_url: str, data_dir: Path, **extra: str) -> dict[str, str]:
    """The parent's environment without its CTXMEM_* settings, pointed at ``database_url``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CTXMEM_")}
    env.update(
        CTXMEM_DATABASE_URL=database_url,
        CTXMEM_DATA_DIR=str(data_dir),
        CTXMEM_AUTO_MIGRATE="false",
        CTXMEM_LOG_LEVEL="warning",
        PYTHONPATH=str(ROOT),
    )
    env.update(extra)
    return env


@dataclass
class LiveServer:
    proc: subprocess.Popen[bytes]
    base_url: str
    log_path: Path

    def log_tail(self, lines: int = 40) -> str:
        with contextlib.suppress(OSError):
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        return ""

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        return self.proc.returncode


def start_server(
    database_url: str, data_dir: Path, *, ready_timeout: float = 90.0, workers: int = 1, **env: str
) -> LiveServer:
    """Start ``ctxmem serve`` against an already migrated database and wait until ``/healthz`` answers.
    ``workers``: ``--workers`` (1, one process, unless a test asks for more; the default of serve itself is
    the machine's cores)."""
    data_dir.mkdir(parents=True, exist_ok=True)
    port = free_port()
    log_path = data_dir / "serve.log"
    cmd = [sys.executable, "-m", "service.cli", "serve", "--host", "127.0.0.1", "--port", str(port)]
    cmd += ["--workers", str(workers)]
    with log_path.open("wb") as log:
        proc = subprocess.Popen(
            cmd, cwd=ROOT, env=child_env(database_url, data_dir, **env), stdout=log, stderr=subprocess.STDOUT
        )
    server = LiveServer(proc, f"http://127.0.0.1:{port}", log_path)
    deadline = time.monotonic() + ready_timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"ctxmem serve exited with {proc.returncode}:\n{server.log_tail()}")
        with contextlib.suppress(httpx.TransportError):
            if httpx.get(server.base_url + "/healthz", timeout=2).status_code == 200:
                return server
        time.sleep(0.1)
    server.stop()
    raise RuntimeError(f"ctxmem serve did not answer /healthz within {ready_timeout} s:\n{server.log_tail()}")
