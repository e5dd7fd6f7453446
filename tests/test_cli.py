"""The embedded default end to end, with real processes: `ctxmem serve` on an embedded PostgreSQL,
`ctxmem keys create` from another process against the same database, and HTTP with that key."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from service.version import VERSION

ROOT = Path(__file__).resolve().parents[1]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _env(data_dir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CTXMEM_")}
    env["CTXMEM_DATA_DIR"] = str(data_dir)
    env["PYTHONPATH"] = str(ROOT)
    return env


def ctxmem(data_dir: Path, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "service.cli", *args],
        cwd=ROOT,
        env=_env(data_dir),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, Path, subprocess.Popen[str]]]:
    data_dir = tmp_path / "data"
    port = _free_port()
    proc = subprocess.Popen(
        # one worker: the embedded index of one process, which a second server is refused (below)
        [sys.executable, "-m", "service.cli", "serve", "--port", str(port), "--workers", "1"],
        cwd=ROOT,
        env=_env(data_dir),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"serve exited early: {proc.stdout.read() if proc.stdout else ''}")
        try:
            if httpx.get(base + "/readyz", timeout=1).status_code == 200:
                break
        except httpx.TransportError:
            time.sleep(0.2)
    else:
        proc.kill()
        pytest.fail("serve did not become ready in 60 s")
    yield base, data_dir, proc
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    if proc.stdout:
        proc.stdout.close()


def test_keys_create_next_to_serve_shares_the_embedded_database(
    served: tuple[str, Path, subprocess.Popen[str]],
) -> None:
    base, data_dir, proc = served
    created = ctxmem(data_dir, "keys", "create", "--tenant", "acme", "--role", "agent", "--name", "bot")
    assert created.returncode == 0, created.stderr
    secret = created.stdout.strip()
    assert secret.startswith("cmk_") and "\n" not in secret
    assert "shown once" in created.stderr

    headers = {"Authorization": f"Bearer {secret}"}
    r = httpx.post(
        base + "/v1/users/u1/items",
        json={
            "type": "constraint",
            "content": "Don't recommend Redis Cluster",
            "hard": True,
            "source": "user",
        },
        headers=headers,
    )
    assert r.status_code == 201, r.text
    r = httpx.get(base + "/v1/users/u1/items", headers=headers)
    assert [i["content"] for i in r.json()["items"]] == ["Don't recommend Redis Cluster"]

    # every other CLI command works against the same running database too
    listed = ctxmem(data_dir, "keys", "list", "--tenant", "acme")
    assert listed.returncode == 0 and " agent " in listed.stdout and secret not in listed.stdout
    migrated = ctxmem(data_dir, "migrate")
    assert migrated.returncode == 0 and "revision" in migrated.stdout
    key_id = listed.stdout.split()[0]
    revoked = ctxmem(data_dir, "keys", "revoke", "--tenant", "acme", "--id", key_id)
    assert revoked.returncode == 0, revoked.stderr
    assert httpx.get(base + "/v1/users/u1/items", headers=headers).status_code == 401
    # the CLI processes came and went; the server's database is still up
    assert httpx.get(base + "/readyz").status_code == 200
    # a second server on the same data directory says in one line who holds it, and starts nothing
    second = ctxmem(data_dir, "serve", "--port", str(_free_port()), "--workers", "1")
    assert second.returncode == 3 and second.stdout == ""
    assert second.stderr.count("\n") == 1 and f"in use by another process (pid {proc.pid}: " in second.stderr
    assert "--data-dir" in second.stderr
    assert httpx.get(base + "/readyz").status_code == 200

    proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=30) == 0
    out = proc.stdout.read() if proc.stdout else ""
    assert f"serving on {base}" in out
    assert out.startswith(f"ctxmem {VERSION} (schema ")  # the release, then the database schema it runs
    assert "keys create" in out


def test_serve_refuses_several_workers_on_an_index_of_one_process(tmp_path: Path) -> None:
    for backend in ("edge", "memory", "local"):
        env = {**_env(tmp_path / "d"), "CTXMEM_VECTOR_BACKEND": backend}
        done = subprocess.run(
            [sys.executable, "-m", "service.cli", "serve", "--port", str(_free_port()), "--workers", "2"],
            cwd=ROOT, env=env, capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
        assert done.returncode == 2 and done.stdout == "", done.stderr
        assert f"'{backend}' lives inside one process" in done.stderr and "pgvector" in done.stderr
        assert done.stderr.count("\n") == 1
    assert not (tmp_path / "d").exists()  # refused before anything started


def test_cli_errors_are_clear(tmp_path: Path) -> None:
    bad_role = ctxmem(tmp_path / "d", "keys", "create", "--tenant", "t", "--role", "root")
    assert bad_role.returncode == 2 and "invalid choice" in bad_role.stderr
    bad_tenant = ctxmem(tmp_path / "d", "keys", "create", "--tenant", "a b", "--role", "agent")
    assert bad_tenant.returncode == 2 and "tenant must be" in bad_tenant.stderr
    bad_url = ctxmem(tmp_path / "d", "migrate", "--database-url", "mysql://x")
    assert bad_url.returncode == 2 and "postgresql://" in bad_url.stderr
    assert ctxmem(tmp_path / "d", "--help").returncode == 0


def test_demo_keeps_both_constraints_verbatim_under_pressure(tmp_path: Path) -> None:
    out = ctxmem(tmp_path / "d", "demo", timeout=180)
    assert out.returncode == 0, out.stdout + out.stderr
    lines = [line for line in out.stdout.splitlines() if line.startswith("turn")]
    assert len(lines) == 16
    assert "full" in lines[0]
    assert all(("balanced" in line or "compact" in line) for line in lines[-4:])
    assert all("small-team yes, no-redis-cluster yes" in line for line in lines[1:])
    assert "levels: L0 whole" in out.stdout  # the legend of the L0..L4 codes in the lines above
    window, sliding = out.stdout.split("=== turn 16: the window ctxmem assembled")[1].split("=== turn 16: a sliding")
    # The window's full text is shown, constraints verbatim; the sliding window of the same size lost both.
    assert "  | - Don't recommend Redis Cluster." in window and "  | ## Latest input" in window
    assert "Redis Cluster" not in sliding.split("the sliding window lost:")[0]
    lost = next(line for line in out.stdout.splitlines() if line.startswith("the sliding window lost:"))
    assert "Don't recommend Redis Cluster." in lost and "(said in turn 2)" in lost
    assert "both constraints verbatim in every window since turn 2: yes" in out.stdout
    # It cleans up after itself: the tenant's keys are gone.
    tenant = out.stdout.split("tenant ", 1)[1].split(",", 1)[0]
    assert f"cleaned up: tenant {tenant} erased and removed" in out.stdout
    listed = ctxmem(tmp_path / "d", "keys", "list", "--tenant", tenant)
    assert listed.returncode == 0 and listed.stdout.strip() == ""
