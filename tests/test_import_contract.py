"""scoring/ is pure policy: it must not import anything that does I/O (CONVENTIONS §2)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FORBIDDEN = {
    "fastapi",
    "starlette",
    "sqlalchemy",
    "sqlmodel",
    "asyncpg",
    "alembic",
    "qdrant_client",
    "qdrant_edge",
    "httpx",
    "requests",
    "aiohttp",
    "uvicorn",
    "tiktoken",
    "socket",
    "service",
    "jobs",
}


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


def test_scoring_sources_import_no_io_library() -> None:
    files = sorted((ROOT / "scoring").rglob("*.py"))
    assert files, "scoring/ has no modules"
    offenders = {str(f.relative_to(ROOT)): sorted(_imports(f) & FORBIDDEN) for f in files}
    assert {f: bad for f, bad in offenders.items() if bad} == {}


def test_importing_scoring_loads_no_io_library() -> None:
    """The transitive check: import every scoring module in a fresh interpreter and look at sys.modules."""
    modules = [
        "scoring." + ".".join(p.relative_to(ROOT / "scoring").with_suffix("").parts)
        for p in sorted((ROOT / "scoring").rglob("*.py"))
        if p.name != "__init__.py"
    ]
    code = (
        "import importlib, sys\n"
        f"for m in {modules!r}: importlib.import_module(m)\n"
        "print(' '.join(sorted({n.split('.')[0] for n in sys.modules})))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    loaded = set(out.stdout.split())
    assert loaded & FORBIDDEN == set()


def test_the_check_catches_a_violation(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("import sqlalchemy\nfrom fastapi import FastAPI\nfrom .x import y\n")
    assert _imports(bad) & FORBIDDEN == {"sqlalchemy", "fastapi"}
