"""service/vectors/factory.py: the backend named by settings, each imported only when chosen.
(The edge default and the errors: test_index_contract.py::test_factory.)"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from service.vectors.factory import BACKENDS, build_index
from service.vectors.pgvector import PgVectorIndex
from service.vectors.qdrant_edge import DEFAULT_BUILD_THRESHOLD, QdrantEdgeIndex
from service.vectors.qdrant_server import QdrantServerIndex


async def test_every_backend_builds_the_index_it_names(tmp_path: Path) -> None:
    url = "http://qdrant.invalid:6333"
    database_url = "postgresql://nobody@127.0.0.1:1/none"  # pgvector's table lives there (not reached here)
    built = {
        b: build_index(b, dim=8, data_dir=tmp_path, url=url, api_key=None, database_url=database_url) for b in BACKENDS
    }
    try:
        assert isinstance(built["edge"], QdrantEdgeIndex)
        assert isinstance(built["pgvector"], PgVectorIndex) and built["pgvector"].name == "pgvector"
        assert {b: built[b].name for b in ("qdrant", "memory", "local")} == {
            "qdrant": "qdrant",
            "memory": "qdrant-memory",
            "local": "qdrant-local",
        }
        for b in ("qdrant", "memory", "local"):
            assert isinstance(built[b], QdrantServerIndex) and built[b].dim == 8
    finally:
        for index in built.values():
            await index.close()


def test_the_edge_build_threshold_is_the_adapters_default_unless_given(tmp_path: Path) -> None:
    default = build_index("edge", dim=8, data_dir=tmp_path, url=None, api_key=None)
    off = build_index("edge", dim=8, data_dir=tmp_path, url=None, api_key=None, build_threshold=0)
    assert isinstance(default, QdrantEdgeIndex) and isinstance(off, QdrantEdgeIndex)
    assert (default.build_threshold, off.build_threshold) == (DEFAULT_BUILD_THRESHOLD, 0)


async def test_local_mode_lives_under_the_data_dir(tmp_path: Path) -> None:
    local = build_index("local", dim=8, data_dir=tmp_path, url=None, api_key=None)
    try:
        assert isinstance(local, QdrantServerIndex)
        assert local.client.init_options["path"] == str(tmp_path / "qdrant-local")
    finally:
        await local.close()


@pytest.mark.parametrize("backend", ["off", "", "Edge"])
def test_other_names_are_refused_listing_the_known(backend: str, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="expected one of edge, pgvector, qdrant, memory, local"):
        build_index(backend, dim=8, data_dir=tmp_path, url=None, api_key=None)


def test_a_server_deployment_does_not_load_the_embedded_engine() -> None:
    code = (
        "import sys; from pathlib import Path; from service.vectors.factory import build_index; "
        "build_index('qdrant', dim=8, data_dir=Path('.'), url='http://qdrant.invalid:6333', api_key=None); "
        "print('qdrant_edge' in sys.modules, 'service.vectors.qdrant_edge' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert out.stdout.split() == ["False", "False"]
