"""Settings that decide which parts run (docs/design.md §5): URLs mean servers, unless told otherwise."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from service.settings import Settings


def test_a_qdrant_url_means_the_qdrant_server(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CTXMEM_VECTOR_BACKEND", raising=False)
    monkeypatch.delenv("CTXMEM_QDRANT_URL", raising=False)
    assert Settings().vector_backend == "edge"  # embedded by default
    assert Settings(qdrant_url="http://qdrant:6333").vector_backend == "qdrant"
    monkeypatch.setenv("CTXMEM_QDRANT_URL", "http://qdrant:6333")
    assert Settings().vector_backend == "qdrant"  # as compose and Kubernetes set it
    monkeypatch.setenv("CTXMEM_VECTOR_BACKEND", "off")
    assert Settings().vector_backend == "off"  # a named backend wins
    assert Settings(vector_backend="edge").vector_backend == "edge"


@pytest.mark.parametrize(
    ("field", "value"),
    [("fusion", "sum"), ("fusion_lexical_weight", 1.5), ("recall_limit", -1), ("vector_min_score", 2.0),
     ("outbox_max_attempts", 0), ("recall_mode", "both")],
)  # fmt: skip
def test_recall_settings_are_checked(field: str, value: object) -> None:
    with pytest.raises(ValidationError, match=field):
        Settings(**{field: value})
