"""sdk/python/README.md stays usable offline and true: its links resolve inside the repository, its Python
examples compile, and every error class its table names exists."""

from __future__ import annotations

import re
from pathlib import Path

import ctxmem_client

README = Path(__file__).resolve().parents[2] / "sdk" / "python" / "README.md"
ROOT = README.parents[2]


def _text() -> str:
    return README.read_text(encoding="utf-8")


def test_links_resolve_inside_the_repository() -> None:
    prose = re.sub(r"```.*?```", "", _text(), flags=re.S)
    targets = re.findall(r"\]\(([^)\s]+)\)", prose)
    assert len(targets) > 10
    headings = {
        re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-") for h in re.findall(r"^#{1,6} (.+)$", prose, re.M)
    }
    for target in targets:
        assert not re.match(r"[a-z]+:", target), target
        path, _, anchor = target.partition("#")
        dest = (README.parent / path).resolve() if path else README
        assert dest.exists() and ROOT in dest.parents, target
        if not path:
            assert anchor in headings, target


def test_python_examples_compile() -> None:
    blocks = re.findall(r"```python\n(.*?)```", _text(), flags=re.S)
    assert len(blocks) >= 5
    for block in blocks:
        compile(block, str(README), "exec")


def test_the_error_table_names_real_classes() -> None:
    table = _text().split("## Errors", 1)[1].split("\n## ", 1)[0]
    names = set(re.findall(r"`([A-Z][A-Za-z]+)`", table))
    assert len(names) > 15
    for name in names:
        assert issubclass(getattr(ctxmem_client, name), ctxmem_client.CtxmemError), name
