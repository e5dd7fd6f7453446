"""service/vectors/qdrant_edge.py: what the embedded index refuses at construction, who holds it, opening and
closing it again, and the build child's command line. (The VectorIndex contract on every backend:
test_index_contract.py; HNSW builds and generations: test_edge_build.py.)"""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path

import pytest

from service.vectors.base import VectorIndexUnavailable, VectorPoint
from service.vectors.qdrant_edge import (
    BUILD_NICE,
    BUILD_THREADS,
    FULL_SCAN_KB,
    HNSW_EF_CONSTRUCT,
    HNSW_M,
    BuildParams,
    QdrantEdgeIndex,
    _main,
    holder,
    in_use_message,
)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [({"dim": 0}, "dim must be positive, got 0"), ({"dim": 4, "build_threshold": -1}, "must not be negative")],
)
def test_construction_refuses_nonsense(tmp_path: Path, kwargs: dict[str, int], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        QdrantEdgeIndex(tmp_path, **kwargs)


def test_construction_does_no_io(tmp_path: Path) -> None:
    index = QdrantEdgeIndex(tmp_path / "vectors", dim=4)
    assert not (tmp_path / "vectors").exists()
    assert index.path == index.live_path == tmp_path / "vectors" / "ctxmem_items"
    assert index.name == "qdrant-edge"


def test_nobody_holds_an_index_that_was_never_opened_or_whose_lock_is_free(tmp_path: Path) -> None:
    assert holder(tmp_path) is None
    (tmp_path / "ctxmem_items.lock").write_text("123 ctxmem serve\n")
    assert holder(tmp_path) is None  # the file is there, the flock is not


def test_the_in_use_message_says_how_to_get_out(tmp_path: Path) -> None:
    message = in_use_message(tmp_path)
    assert str(tmp_path) in message and "another process" in message
    assert "--data-dir or CTXMEM_DATA_DIR" in message


async def test_open_names_this_process_as_holder_and_close_releases_it(tmp_path: Path) -> None:
    index = QdrantEdgeIndex(tmp_path, dim=4)
    await index.ensure_collection()
    await index.ensure_collection()  # a second call keeps the open shard
    try:
        lock = (tmp_path / "ctxmem_items.lock").read_text()
        assert lock.split()[0] == str(os.getpid())
        await index.upsert([])  # nothing to write: no call
        await index.delete([])
        point = VectorPoint(uuid.uuid4(), [1, 0, 0, 0], {"tenant_id": "t", "user_id": "u"})
        await index.upsert([point])
        assert await index.count(tenant_id="t") == 1
    finally:
        await index.close()
    assert holder(tmp_path) is None
    with pytest.raises(VectorIndexUnavailable, match="is not open"):
        await index.count()
    await index.close()  # closing twice is harmless
    again = QdrantEdgeIndex(tmp_path, dim=4)
    await again.ensure_collection()
    try:
        assert await again.count(tenant_id="t", user_id="u") == 1  # what was written survived the close
    finally:
        await again.close()


def test_build_params_default_to_the_module_constants() -> None:
    assert BuildParams() == BuildParams(HNSW_M, HNSW_EF_CONSTRUCT, FULL_SCAN_KB, BUILD_THREADS)
    assert BuildParams(m=8, threads=2).args() == [
        "--m",
        "8",
        "--ef-construct",
        str(HNSW_EF_CONSTRUCT),
        "--full-scan-kb",
        str(FULL_SCAN_KB),
        "--threads",
        "2",
    ]


async def test_the_build_child_reads_the_arguments_the_parent_writes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The child lowers its own priority; here it runs in the test process, which must keep its own.
    niced: list[int] = []
    monkeypatch.setattr(os, "nice", lambda n: niced.append(n) or 0)
    index = QdrantEdgeIndex(tmp_path, dim=4)
    await index.ensure_collection()
    points = [VectorPoint(uuid.uuid4(), [1, i, 0, 0], {"tenant_id": "t", "user_id": "u"}) for i in range(5)]
    await index.upsert(points)
    await index.close()
    params = BuildParams(m=4, ef_construct=16, full_scan_kb=1, threads=1)
    assert _main(["build", str(index.path), "--dim", "4", *params.args()]) == 0
    assert niced == [BUILD_NICE]
    report = json.loads(capsys.readouterr().out)
    assert report["points"] == 5
    assert set(report) == {"optimized", "points", "indexed", "segments", "seconds"}
