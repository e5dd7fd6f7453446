"""The OpenAPI document a newcomer reads at /docs: every route that needs a key declares the bearer scheme
(so "Authorize" works), every parameter and request field says what it is and shows an example, and the
request examples are real requests — each one sent to the live app succeeds."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.conftest import TenantKeys

pytestmark = pytest.mark.asyncio


async def _openapi(client: httpx.AsyncClient) -> dict[str, Any]:
    r = await client.get("/openapi.json")
    assert r.status_code == 200
    doc: dict[str, Any] = r.json()
    return doc


def _operations(doc: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [(path, method, op) for path, ops in doc["paths"].items() for method, op in ops.items()]


def _request_schemas(doc: dict[str, Any]) -> set[str]:
    """Names of the component schemas request bodies use, followed through every $ref."""
    schemas = doc["components"]["schemas"]
    seen: set[str] = set()

    def visit(node: Any) -> None:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str):
                name = ref.rsplit("/", 1)[-1]
                if name not in seen:
                    seen.add(name)
                    visit(schemas[name])
            for value in node.values():
                visit(value)
        elif isinstance(node, list):
            for value in node:
                visit(value)

    for _, _, op in _operations(doc):
        body = op.get("requestBody")
        if body is not None:
            visit(body["content"]["application/json"]["schema"])
    return seen


async def test_every_key_route_declares_the_bearer_scheme(client: httpx.AsyncClient) -> None:
    doc = await _openapi(client)
    schemes = doc["components"]["securitySchemes"]
    assert schemes == {"apiKey": {"type": "http", "scheme": "bearer", "description": schemes["apiKey"]["description"]}}
    ops = _operations(doc)
    v1 = [(p, m, op) for p, m, op in ops if p.startswith("/v1/")]
    assert len(v1) >= 15
    for path, method, op in v1:
        assert op.get("security") == [{"apiKey": []}], f"{method.upper()} {path} does not declare the bearer scheme"
    for path, method, op in ops:
        if not path.startswith("/v1/"):
            assert "security" not in op, f"{method.upper()} {path} is public but declares a key"


async def test_every_parameter_and_request_field_is_described_with_an_example(client: httpx.AsyncClient) -> None:
    doc = await _openapi(client)
    missing: list[str] = []
    for path, method, op in _operations(doc):
        for p in op.get("parameters", []):
            where = f"{method.upper()} {path} parameter {p['name']}"
            if not p.get("description"):
                missing.append(f"{where}: description")
            if not (p.get("examples") or p.get("example") is not None or p.get("schema", {}).get("examples")):
                missing.append(f"{where}: example")
    schemas = doc["components"]["schemas"]
    names = _request_schemas(doc)
    assert {"ItemCreate", "WindowRequest", "ObservationCreate", "ChatMessage"} <= names
    for name in sorted(names):
        schema = schemas[name]
        if schema.get("type") != "object":
            continue
        if not schema.get("examples"):
            missing.append(f"{name}: example")
        for field, spec in schema.get("properties", {}).items():
            if not spec.get("description"):
                missing.append(f"{name}.{field}: description")
    assert missing == []


async def test_the_request_examples_are_accepted_by_the_live_app(client: httpx.AsyncClient, tenant: TenantKeys) -> None:
    """Each documented example body, sent as is, succeeds: the docs cannot drift into requests that fail."""
    doc = await _openapi(client)
    examples = {name: doc["components"]["schemas"][name]["examples"] for name in _request_schemas(doc)}
    base = "/v1/users/docs-example"
    sent = 0
    # (schema, route, status): each documented body of the schema, sent to its route, gets that status
    for name, route, status in [
        ("ItemCreate", "/items", 201),
        ("ItemBatchCreate", "/items/batch", 201),
        ("ObservationCreate", "/observations", 201),
        ("ObservationBatchCreate", "/observations/batch", 201),
        ("WindowRequest", "/window", 200),
    ]:
        for body in examples[name]:
            r = await client.post(f"{base}{route}", json=body, headers=tenant.agent)
            assert r.status_code == status, (name, r.text)
            if name == "WindowRequest":
                assert body["input"] in r.json()["text"]
            sent += 1
    profile = (await client.get(f"{base}/profile", headers=tenant.agent)).json()
    entry_ids = [e["id"] for by_domain in profile["tiers"].values() for es in by_domain.values() for e in es]
    assert entry_ids, profile
    for body in examples["ConfirmBody"]:
        r = await client.post(f"{base}/profile/{entry_ids[0]}/confirm", json=body, headers=tenant.operator)
        assert r.status_code == 200, r.text
        sent += 1
    for body in examples["JobRunRequest"]:
        r = await client.post("/v1/jobs/expire/run", json=body, headers=tenant.admin)
        assert r.status_code == 200, r.text
        sent += 1
    assert sent >= 9


async def test_docs_pages_are_served_with_local_assets(client: httpx.AsyncClient) -> None:
    for page, asset in (("/docs", "swagger-ui-bundle.js"), ("/redoc", "redoc.standalone.js")):
        r = await client.get(page)
        assert r.status_code == 200
        html = r.text
        assert f"/docs-assets/{asset}" in html
        assert "cdn.jsdelivr.net" not in html and "fonts.googleapis.com" not in html
        js = await client.get(f"/docs-assets/{asset}")
        assert js.status_code == 200 and len(js.content) > 100_000
