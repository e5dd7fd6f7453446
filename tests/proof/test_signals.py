"""Every way a ctxmem process ends leaves nothing behind (issue #31): real processes on the embedded
PostgreSQL, stopped by SIGTERM (systemd, ``docker stop``, Kubernetes), SIGINT (Ctrl+C) and SIGHUP (a closed
terminal). Each exits 0 and leaves no PostgreSQL process of its data directory and no pid in its
``.handle_pids.json``. A process killed outright (SIGKILL) cannot clean up: the next start finds its stale
handle, drops it, and stops the orphaned server when it leaves in turn.

PostgreSQL processes are found by the operating system (psutil), by the data directory on their command
line, not by asking the service."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Collection, Iterator
from pathlib import Path

import httpx
import psutil
import pytest

from tests.proof.live import ROOT, free_port

READY_SECONDS = 90
STOP_SECONDS = 60


def env_for(data_dir: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CTXMEM_")}
    env.update(CTXMEM_DATA_DIR=str(data_dir), CTXMEM_TOKENIZER="estimate", PYTHONPATH=str(ROOT))
    env.update(extra)
    return env


def postgres_of(data_dir: Path) -> list[psutil.Process]:
    """The PostgreSQL server processes running on ``data_dir`` (the postmaster has it in its command line)."""
    where = str(data_dir.resolve())
    found = []
    for proc in psutil.process_iter(["name", "cmdline"]):
        with contextlib.suppress(psutil.Error):
            if proc.info["name"] == "postgres" and where in " ".join(proc.info["cmdline"] or []):
                found.append(proc)
    return found


def handles(data_dir: Path) -> list[int]:
    path = data_dir / "postgres" / ".handle_pids.json"
    return [int(p) for p in json.loads(path.read_text() or "[]")] if path.exists() else []


@contextlib.contextmanager
def no_leak(data_dir: Path) -> Iterator[None]:
    """Whatever the test does, no PostgreSQL of ``data_dir`` outlives it (a failing test must not leak one)."""
    try:
        yield
    finally:
        for proc in postgres_of(data_dir):
            with contextlib.suppress(psutil.Error):
                proc.kill()


def start(data_dir: Path, *args: str, **env: str) -> tuple[subprocess.Popen[bytes], Path]:
    data_dir.mkdir(parents=True, exist_ok=True)
    log_path = data_dir.parent / f"{args[0]}-{time.monotonic_ns()}.log"
    with log_path.open("wb") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "service.cli", *args],
            cwd=ROOT,
            env=env_for(data_dir, **env),
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    return proc, log_path


def log_of(log_path: Path) -> str:
    return log_path.read_text(errors="replace")


def serve(data_dir: Path, *, workers: int = 1, **env: str) -> tuple[subprocess.Popen[bytes], Path]:
    """``ctxmem serve`` on the embedded PostgreSQL, once it answers ``/readyz``."""
    port = free_port()
    proc, log_path = start(data_dir, "serve", "--port", str(port), "--workers", str(workers), **env)
    deadline = time.monotonic() + READY_SECONDS
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"serve exited with {proc.returncode} before it was ready:\n{log_of(log_path)[-3000:]}")
        with contextlib.suppress(httpx.TransportError):
            if httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=2).status_code == 200:
                return proc, log_path
        time.sleep(0.2)
    proc.kill()
    pytest.fail(f"serve was not ready within {READY_SECONDS} s:\n{log_of(log_path)[-3000:]}")


def stop(proc: subprocess.Popen[bytes], sig: int, log_path: Path) -> int:
    proc.send_signal(sig)
    try:
        return proc.wait(timeout=STOP_SECONDS)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=10)
        pytest.fail(f"{signal.Signals(sig).name}: still running after {STOP_SECONDS} s:\n{log_of(log_path)[-3000:]}")


def assert_nothing_left(data_dir: Path, log_path: Path) -> None:
    # pg_ctl stop waits for the server to be gone before the ctxmem process exits: nothing to wait for.
    left = postgres_of(data_dir)
    assert not left, f"PostgreSQL still running (pids {[p.pid for p in left]}):\n{log_of(log_path)[-3000:]}"
    assert handles(data_dir) == [], log_of(log_path)[-3000:]


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP], ids=lambda s: s.name)
def test_serve_stopped_by_a_signal_exits_0_and_stops_its_postgres(tmp_path: Path, sig: signal.Signals) -> None:
    data_dir = tmp_path / "data"
    with no_leak(data_dir):
        proc, log_path = serve(data_dir)
        assert len(postgres_of(data_dir)) == 1 and handles(data_dir) == [proc.pid]
        assert stop(proc, sig, log_path) == 0, log_of(log_path)[-3000:]
        assert_nothing_left(data_dir, log_path)


def test_a_killed_servers_stale_handle_is_dropped_at_the_next_start(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    with no_leak(data_dir):
        first, _ = serve(data_dir)
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=10)
        orphan = postgres_of(data_dir)
        assert len(orphan) == 1  # nothing could stop it
        assert handles(data_dir) == [first.pid]  # nor give the handle back

        second, log_path = serve(data_dir)
        assert handles(data_dir) == [second.pid]  # the dead pid dropped; the orphan server attached to
        assert [p.pid for p in postgres_of(data_dir)] == [orphan[0].pid]
        assert f"no longer run (pids {first.pid})" in log_of(log_path)
        assert stop(second, signal.SIGTERM, log_path) == 0, log_of(log_path)[-3000:]
        assert_nothing_left(data_dir, log_path)


def workers_of(proc: subprocess.Popen[bytes], data_dir: Path, *, besides: Collection[int] = ()) -> list[psutil.Process]:
    """The supervisor's two workers, each holding its handle (and none of ``besides``), once they are."""
    deadline = time.monotonic() + READY_SECONDS
    while True:
        workers = []
        for child in psutil.Process(proc.pid).children():
            with contextlib.suppress(psutil.Error):  # a zombie has no command line
                if child.pid not in besides and "spawn_main" in " ".join(child.cmdline()):
                    workers.append(child)
        if (len(workers) == 2 and len(handles(data_dir)) == 3) or time.monotonic() > deadline:
            return workers
        time.sleep(0.2)


def test_serve_with_two_workers_stopped_by_sigterm_leaves_nothing(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    with no_leak(data_dir):
        # several workers share a vector index in PostgreSQL (the embedded one of one process is refused)
        proc, log_path = serve(data_dir, workers=2, CTXMEM_VECTOR_BACKEND="pgvector")
        # /readyz answers once one worker is up: wait (bounded) for the other to start and take its handle.
        workers = workers_of(proc, data_dir)
        assert len(workers) == 2
        assert sorted(handles(data_dir)) == sorted([proc.pid, *(w.pid for w in workers)])
        assert stop(proc, signal.SIGTERM, log_path) == 0, log_of(log_path)[-3000:]
        assert not any(w.is_running() and w.status() != psutil.STATUS_ZOMBIE for w in workers)
        assert_nothing_left(data_dir, log_path)


def test_one_worker_sent_sigterm_gives_its_handle_back_and_is_replaced(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    with no_leak(data_dir):
        proc, log_path = serve(data_dir, workers=2, CTXMEM_VECTOR_BACKEND="pgvector")
        first = workers_of(proc, data_dir)
        assert len(first) == 2, log_of(log_path)[-3000:]
        gone = first[0]
        gone.send_signal(signal.SIGTERM)
        # The supervisor reaps it (a zombie until then) and starts another, which takes a handle of its own.
        now = workers_of(proc, data_dir, besides={gone.pid})
        assert len(now) == 2, log_of(log_path)[-3000:]
        assert gone.pid not in handles(data_dir)
        assert sorted(handles(data_dir)) == sorted([proc.pid, *(w.pid for w in now)])
        assert len(postgres_of(data_dir)) >= 1  # the server went on: other holders remain
        assert stop(proc, signal.SIGTERM, log_path) == 0, log_of(log_path)[-3000:]
        assert_nothing_left(data_dir, log_path)


def test_scheduler_stopped_by_sigterm_leaves_nothing(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    with no_leak(data_dir):
        proc, log_path = start(data_dir, "scheduler")
        deadline = time.monotonic() + READY_SECONDS
        while "ctxmem scheduler running" not in log_of(log_path):
            assert proc.poll() is None, log_of(log_path)[-3000:]
            assert time.monotonic() < deadline, log_of(log_path)[-3000:]
            time.sleep(0.2)
        assert handles(data_dir) == [proc.pid]
        assert stop(proc, signal.SIGTERM, log_path) == 0, log_of(log_path)[-3000:]
        assert_nothing_left(data_dir, log_path)


def test_a_command_beside_a_server_leaves_it_running_and_the_server_then_stops_it(tmp_path: Path) -> None:
    """A CLI command attaches to the server's PostgreSQL and gives its handle back when done; the server,
    stopped by SIGTERM, is then the last holder and stops PostgreSQL."""
    data_dir = tmp_path / "data"
    with no_leak(data_dir):
        proc, log_path = serve(data_dir)
        created = subprocess.run(
            [sys.executable, "-m", "service.cli", "keys", "create", "--tenant", "t", "--role", "agent"],
            cwd=ROOT, env=env_for(data_dir), capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
        assert created.returncode == 0, created.stderr
        assert handles(data_dir) == [proc.pid] and len(postgres_of(data_dir)) == 1
        assert stop(proc, signal.SIGTERM, log_path) == 0, log_of(log_path)[-3000:]
        assert_nothing_left(data_dir, log_path)


@pytest.mark.parametrize("command", [("migrate",), ("keys", "create", "--tenant", "t", "--role", "agent")])
def test_a_command_stopped_by_sigterm_once_attached_leaves_nothing(tmp_path: Path, command: tuple[str, ...]) -> None:
    """A one-shot command that started the embedded PostgreSQL, stopped by SIGTERM as soon as it holds it: it
    exits 143 (128 + SIGTERM) — or 0 when it finished first — and stops the server it started."""
    data_dir = tmp_path / "data"
    with no_leak(data_dir):
        proc, log_path = start(data_dir, *command)
        deadline = time.monotonic() + READY_SECONDS
        while proc.pid not in handles(data_dir) and proc.poll() is None:
            assert time.monotonic() < deadline, log_of(log_path)[-3000:]
            time.sleep(0.02)
        assert stop(proc, signal.SIGTERM, log_path) in (0, 128 + signal.SIGTERM), log_of(log_path)[-3000:]
        assert_nothing_left(data_dir, log_path)
