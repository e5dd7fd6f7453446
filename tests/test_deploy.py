"""The deployment files configure what production needs (no container engine here: checked statically).
Each file's CTXMEM_* environment is loaded into Settings as the containers would see it."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from service.settings import Settings

DEPLOY = Path(__file__).resolve().parents[1] / "deploy"


def _expand(value: Any) -> str:
    """``${VAR:-default}`` as compose expands it with VAR unset."""
    return re.sub(r"\$\{[A-Z_]+:-([^}]*)\}", r"\1", str(value))


def _settings(env: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> Settings:
    for name in [n for n in os.environ if n.startswith("CTXMEM_")]:
        monkeypatch.delenv(name)
    for name, value in env.items():
        monkeypatch.setenv(name, _expand(value))
    return Settings()


def test_compose_runs_on_the_servers(monkeypatch: pytest.MonkeyPatch) -> None:
    compose = yaml.safe_load((DEPLOY / "compose.yaml").read_text())
    for service in ("api", "scheduler", "migrate"):
        env = compose["services"][service]["environment"]
        s = _settings(env, monkeypatch)
        assert not s.database.embedded, service  # PostgreSQL server
        assert s.vectors.backend == "qdrant" and s.vectors.qdrant_url == "http://qdrant:6333", service
        assert s.database.auto_migrate is False, service


def test_kubernetes_runs_on_the_servers(monkeypatch: pytest.MonkeyPatch) -> None:
    config = yaml.safe_load((DEPLOY / "k8s" / "configmap.yaml").read_text())["data"]
    secret = yaml.safe_load((DEPLOY / "k8s" / "secret.example.yaml").read_text())["stringData"]
    s = _settings({**config, **{k: v for k, v in secret.items() if k.startswith("CTXMEM_")}}, monkeypatch)
    assert not s.database.embedded
    assert s.vectors.backend == "qdrant"
    assert s.database.auto_migrate is False
