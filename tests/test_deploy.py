"""The deployment files configure what production needs (no container engine here: checked statically).
Each file's CTXMEM_* environment is loaded into Settings as the containers would see it; compose.yaml is
validated against the compose specification's JSON schema and the Kubernetes manifests against the API's
schemas (kubernetes-validate, offline), and the references between them (selectors, names, ports) resolve."""

from __future__ import annotations

import copy
import json
import os
import re
from importlib.resources import files
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
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


# -- schemas: the compose specification and the Kubernetes API ------------------------------------------


def _compose_schema() -> dict[str, Any]:
    """The compose-spec JSON schema as check-jsonschema vendors it (its ``compose-spec`` builtin, copied
    from github.com/compose-spec/compose-spec schema/compose-spec.json): no network at test time."""
    schema = files("check_jsonschema.builtin_schemas.vendor") / "compose-spec.json"
    return dict(json.loads(schema.read_text()))


def _compose_errors(doc: Any) -> list[str]:
    schema = _compose_schema()
    cls = jsonschema.validators.validator_for(schema)
    validator = cls(schema, format_checker=cls.FORMAT_CHECKER)
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(doc)]


def _interpolated(value: Any) -> Any:
    """The document as compose sees it after interpolation with every variable unset (defaults)."""
    if isinstance(value, dict):
        return {k: _interpolated(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_interpolated(v) for v in value]
    if isinstance(value, str):
        return _expand(value)
    return value


def test_compose_file_matches_the_compose_specification() -> None:
    raw = yaml.safe_load((DEPLOY / "compose.yaml").read_text())
    assert _compose_errors(raw) == []
    assert _compose_errors(_interpolated(raw)) == []


def test_compose_references_resolve() -> None:
    compose = yaml.safe_load((DEPLOY / "compose.yaml").read_text())
    services = compose["services"]
    for name, service in services.items():
        for dep in service.get("depends_on", {}):
            assert dep in services, f"{name} depends on unknown service {dep}"
        for mount in service.get("volumes", []):
            source = str(mount).split(":", 1)[0]
            if not source.startswith((".", "/")):
                assert source in compose.get("volumes", {}), f"{name}: volume {source} is not declared"
    # Every ctxmem role runs the one image with migrations off, after `migrate` succeeded.
    for name in ("api", "scheduler"):
        assert services[name]["depends_on"]["migrate"] == {"condition": "service_completed_successfully"}


def test_the_compose_check_refuses_a_broken_file() -> None:
    compose = yaml.safe_load((DEPLOY / "compose.yaml").read_text())
    compose["services"]["api"]["restart"] = ["always"]  # a string, not a list
    compose["services"]["api"]["healthcheck"]["intervals"] = "10s"  # no such key
    errors = _compose_errors(compose)
    assert any("services/api/restart" in e for e in errors), errors
    assert any("intervals" in e for e in errors), errors


KUBERNETES = ("1.28.0", kubernetes_validate.latest_version())


def _kustomization() -> dict[str, Any]:
    return dict(yaml.safe_load((DEPLOY / "k8s" / "kustomization.yaml").read_text()))


def _manifests() -> list[tuple[str, dict[str, Any]]]:
    out = []
    for path in sorted((DEPLOY / "k8s").glob("*.yaml")):
        if path.name != "kustomization.yaml":
            out += [(path.name, doc) for doc in yaml.safe_load_all(path.read_text()) if doc]
    return out


@pytest.mark.parametrize("version", KUBERNETES)
def test_kubernetes_manifests_match_the_api_schemas(version: str) -> None:
    """Strict: an unknown field is an error, as the API server's field validation makes it."""
    for name, doc in _manifests():
        try:
            kubernetes_validate.validate(doc, version, strict=True)
        except kubernetes_validate.ValidationError as exc:
            pytest.fail(f"{name} ({doc['kind']}) against Kubernetes {version}: {exc}")


def test_the_kubernetes_check_refuses_a_broken_manifest() -> None:
    deployment = copy.deepcopy(next(doc for name, doc in _manifests() if name == "api-deployment.yaml"))
    deployment["spec"]["template"]["spec"]["containers"][0]["resource"] = {"limits": {"memory": "1Gi"}}
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(deployment, KUBERNETES[-1], strict=True)
    deployment = copy.deepcopy(next(doc for name, doc in _manifests() if name == "api-deployment.yaml"))
    deployment["spec"]["replicas"] = "two"
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(deployment, KUBERNETES[-1], strict=True)


def test_kustomization_lists_every_manifest_but_the_example_secret() -> None:
    listed = _kustomization()["resources"]
    files_here = {p.name for p in (DEPLOY / "k8s").glob("*.yaml")} - {"kustomization.yaml"}
    assert set(listed) == files_here - {"secret.example.yaml"}
    images = {i["name"] for i in _kustomization()["images"]}
    for name, doc in _manifests():
        for container in _pod_spec(doc).get("containers", []):
            assert container["image"] in images, f"{name}: image {container['image']} is not set by kustomization"


def _pod_spec(doc: dict[str, Any]) -> dict[str, Any]:
    return dict(doc.get("spec", {}).get("template", {}).get("spec", {}))


def test_kubernetes_references_resolve() -> None:
    """What the schemas cannot see: selectors that select the pods, names that name something."""
    manifests = [doc for _, doc in _manifests()]
    by_kind: dict[str, dict[str, dict[str, Any]]] = {}
    for doc in manifests:
        by_kind.setdefault(doc["kind"], {})[doc["metadata"]["name"]] = doc
    pod_labels = {name: d["spec"]["template"]["metadata"]["labels"] for name, d in by_kind["Deployment"].items()}
    job_labels = [d["spec"]["template"]["metadata"]["labels"] for d in by_kind["Job"].values()]

    def selects(selector: dict[str, str]) -> list[str]:
        return [name for name, labels in pod_labels.items() if selector.items() <= labels.items()]

    for name, d in by_kind["Deployment"].items():
        assert selects(d["spec"]["selector"]["matchLabels"]) == [name], f"{name}'s selector"
    for name, pdb in by_kind["PodDisruptionBudget"].items():
        assert selects(pdb["spec"]["selector"]["matchLabels"]) == [name], f"PDB {name} selects its Deployment"
    for name, svc in by_kind["Service"].items():
        (target,) = selects(svc["spec"]["selector"])
        ports = {p["name"] for c in _pod_spec(by_kind["Deployment"][target])["containers"] for p in c.get("ports", [])}
        assert all(p["targetPort"] in ports for p in svc["spec"]["ports"]), f"Service {name}'s targetPort"
        assert not any(svc["spec"]["selector"].items() <= labels.items() for labels in job_labels)
    for name, hpa in by_kind["HorizontalPodAutoscaler"].items():
        assert hpa["spec"]["scaleTargetRef"]["name"] in by_kind["Deployment"], f"HPA {name}'s target"
    for doc in manifests:
        spec = _pod_spec(doc)
        for container in spec.get("containers", []):
            for source in container.get("envFrom", []):
                if "configMapRef" in source:
                    assert source["configMapRef"]["name"] in by_kind["ConfigMap"]
                if "secretRef" in source:
                    assert source["secretRef"]["name"] in by_kind["Secret"]  # secret.example.yaml's name
            ports = {p["name"] for p in container.get("ports", [])}
            for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
                if probe in container:
                    assert container[probe]["httpGet"]["port"] in ports, f"{container['name']}: {probe}"
            mounts = {m["name"] for m in container.get("volumeMounts", [])}
            assert mounts <= {v["name"] for v in spec.get("volumes", [])}, f"{container['name']}: volumes"
