"""The published OpenAPI is a contract a generated client can trust (issue #31): every parameter example
and every boundary value the schema allows (a minimum, a maximum, an enum's every value, a string of the
longest length) sent to the live app is accepted -- or refused only by a rule the operation's description
lists (service/contract.py) -- and those rules are the ones docs/api.md shows."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import httpx
import pytest

from service import contract
from tests.conftest import TenantKeys
from tests.service.test_openapi_docs import _openapi, _operations

ROOT = Path(__file__).resolve().parents[2]
REFUSALS = frozenset({400, 413, 422})
USER = "contract-user"


def _example(param: dict[str, Any]) -> Any:
    schema = param.get("schema", {})
    for source in (param.get("examples"), schema.get("examples")):
        if isinstance(source, dict):  # OpenAPI's named examples
            return next(iter(source.values()))["value"]
        if source:
            return source[0]
    if "example" in param:
        return param["example"]
    return schema.get("example")


def _boundaries(schema: dict[str, Any]) -> list[Any]:
    """The edge values a schema allows: its bounds, its every enum value, its longest string."""
    values: list[Any] = []
    kind = schema.get("type")
    if kind == "integer" or kind == "number":
        values += [schema[bound] for bound in ("minimum", "maximum") if bound in schema]
    if "enum" in schema:
        values += list(schema["enum"])
    if kind == "string" and "maxLength" in schema and "enum" not in schema:
        longest = "a" * schema["maxLength"]
        if re.search(schema.get("pattern", ""), longest):
            values.append(longest)
    if kind == "boolean":
        values += [True, False]
    return values


def _key(tenant: TenantKeys, path: str, method: str) -> dict[str, str]:
    """The least role the route needs."""
    if path.startswith("/v1/jobs"):
        return tenant.admin
    if path.endswith(("/confirm", "/reject")) or (method == "delete" and path == "/v1/users/{user_id}"):
        return tenant.operator
    return tenant.agent


async def _seed(client: httpx.AsyncClient, tenant: TenantKeys) -> dict[str, str]:
    """A user with an item and a profile entry, so that examples aimed at them reach the database."""
    r = await client.post(
        f"/v1/users/{USER}/items",
        json={"type": "fact", "content": "The user runs PostgreSQL.", "source": "user"},
        headers=tenant.agent,
    )
    assert r.status_code == 201, r.text
    item_id = r.json()["id"]
    obs = {"dimension": "preference", "key": "editor", "value": "vim", "session_id": "s1", "explicit": True}
    r = await client.post(f"/v1/users/{USER}/observations", json=obs, headers=tenant.agent)
    assert r.status_code == 201, r.text
    return {"user_id": USER, "item_id": item_id, "entry_id": r.json()["id"], "session_id": "s1", "name": "expire"}


def _documented(method: str, path: str, response: httpx.Response) -> bool:
    problem = response.json()
    reasons = [f"{problem['type']}: {e['msg']}" for e in problem.get("errors") or []]
    reasons = reasons or [f"{problem['type']}: {problem['detail']}"]
    return all(contract.documented_refusal(method, path, reason) for reason in reasons)


@pytest.mark.asyncio
async def test_every_parameter_example_and_boundary_value_is_accepted(
    client: httpx.AsyncClient, tenant: TenantKeys
) -> None:
    doc = await _openapi(client)
    ids = await _seed(client, tenant)
    refused: list[str] = []
    sent = 0
    for path, method, op in _operations(doc):
        if method == "delete":
            continue  # the deletes would erase the seeded user; their parameters are the reads' ones
        params = op.get("parameters", [])
        body = None
        variants: list[tuple[str, str, Any]] = []
        if "requestBody" in op:
            ref = op["requestBody"]["content"]["application/json"]["schema"].get("$ref", "")
            schema = doc["components"]["schemas"][ref.rsplit("/", 1)[-1]] if ref else {}
            body = (schema.get("examples") or [{}])[0]
            # Each field of the body at each edge value its schema allows, the rest as in the example.
            for name, prop in schema.get("properties", {}).items():
                for branch in prop.get("anyOf", [prop]):
                    variants += [("body", name, value) for value in _boundaries(branch)]
        # Each parameter alone at each of its values (examples first), the others left out or at the seed.
        for p in params:
            if p["in"] == "path":
                continue
            if p["in"] == "header" and p["name"] == "Authorization":
                continue
            example = _example(p)
            for value in ([example] if example is not None else []) + _boundaries(p.get("schema", {})):
                variants.append((p["in"], p["name"], value))
        for p in params:
            if p["in"] == "path" and p["name"] in ("user_id", "session_id"):
                for value in [_example(p), *_boundaries(p["schema"])]:
                    if value is not None:
                        variants.append(("path", p["name"], value))
        variants.append(("none", "", None))
        for where, name, value in variants:
            values = dict(ids)
            query: dict[str, Any] = {}
            headers = dict(_key(tenant, path, method))
            if where == "path":
                values[name] = value
            elif where == "query":
                query[name] = str(value).lower() if isinstance(value, bool) else value
            elif where == "header":
                headers[name] = str(value)
            if where == "header" and name == "Idempotency-Key":
                # An example is a shape: each request its own key, of the same length.
                headers[name] = f"{value}"[: -len(str(sent)) - 1] + f"-{sent}"
            url = path.format(**values)
            sending = {**body, name: value} if where == "body" and body is not None else body
            r = await client.request(method.upper(), url, params=query, json=sending, headers=headers)
            sent += 1
            assert r.status_code < 500, (method, url, r.text)
            if r.status_code in REFUSALS and not _documented(method, path, r):
                refused.append(f"{method.upper()} {url} {where} {name}={str(value)[:40]!r}: {r.text[:300]}")
    print(f"sent {sent}")
    assert sent >= 150
    assert refused == [], "\n".join(refused)


@pytest.mark.asyncio
async def test_each_operation_describes_the_rules_that_apply_to_it(client: httpx.AsyncClient) -> None:
    doc = await _openapi(client)
    used: set[contract.Rule] = set()
    for path, method, op in _operations(doc):
        description = op.get("description", "")
        for rule in contract.RULES:
            stated = rule.says[1:] in description
            assert stated == rule.applies_to(method, path), (method, path, rule.says)
            if stated:
                used.add(rule)
    assert used == set(contract.RULES), "a rule that applies to no operation"


@pytest.mark.asyncio
async def test_numeric_bounds_are_published_under_json_schemas_names(client: httpx.AsyncClient) -> None:
    """A count with a validator of its own (255.0 read as 255) had its bounds published as pydantic's ge/le,
    which schema tools ignore: a generated client sent a budget of -86."""
    doc = await _openapi(client)
    found: list[str] = []

    def visit(node: Any, where: str) -> None:
        if isinstance(node, dict):
            if node.get("type") in ("integer", "number"):
                found.extend(f"{where}.{k}" for k in ("ge", "le", "gt", "lt") if k in node)
            for key, value in node.items():
                visit(value, f"{where}.{key}")
        elif isinstance(node, list):
            for i, value in enumerate(node):
                visit(value, f"{where}[{i}]")

    visit(doc, "")
    assert found == []
    budget = doc["components"]["schemas"]["SearchRequest"]["properties"]["budget"]["anyOf"][0]
    assert (budget["minimum"], budget["maximum"]) == (1, 2_000_000)


def test_docs_list_the_same_rules() -> None:
    api = (ROOT / "docs" / "api.md").read_text()
    section = api.split("## OpenAPI: what the schema cannot say", 1)[1].split("\n## ", 1)[0]
    listed = [line for line in section.splitlines() if line.startswith("- ")]
    assert listed == [rule.line for rule in contract.RULES]


def test_a_refusal_is_documented_only_where_its_rule_applies() -> None:
    nul = "urn:ctxmem:problem:validation-error: content: text must not contain NUL bytes"
    assert contract.documented_refusal("POST", "/v1/users/{user_id}/items", nul) is not None
    assert contract.documented_refusal("GET", "/v1/users/{user_id}/items", nul) is None
    hard = "urn:ctxmem:problem:validation-error: only constraints can be hard"
    assert contract.documented_refusal("POST", "/v1/users/{user_id}/window", hard) is None
    other = "urn:ctxmem:problem:validation-error: limit: Input should be a valid integer"
    assert contract.documented_refusal("POST", "/v1/users/{user_id}/search", other) is None
