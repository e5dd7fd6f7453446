"""Property-based fuzzing of the whole OpenAPI against a live ``ctxmem serve`` (issue #12, part 4).

Schemathesis generates requests for every operation the server publishes at ``/openapi.json`` — data
that fits the schema and data that breaks it — and sends them over loopback with a key of a random
role (agent, operator, admin), half of them aimed at a user that exists (with items and a profile entry)
so that reads, deletes, confirmations and windows reach the database rather than a 404. Every response
must: not be a 5xx; if a 4xx, be ``application/problem+json`` naming its own status; conform to the
schema (status code documented, content type, body schema, headers); and reject schema-breaking input
with a 4xx. ``CTXMEM_FUZZ_CASES`` (default 10,000) is the number of requests; the test fails if fewer
were sent.
"""

from __future__ import annotations

import collections
import json
import math
import os
import traceback
from dataclasses import dataclass, field
from typing import Any

import httpx
import requests
import schemathesis
from hypothesis import HealthCheck, Phase, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    negative_data_rejection,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from service import contract
from tests.conftest import TenantKeys
from tests.proof.live import LiveServer

TOTAL_CASES = int(os.environ.get("CTXMEM_FUZZ_CASES", "10000"))
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
    response_headers_conformance,
    negative_data_rejection,
]
# Schema-breaking input must be refused with a 4xx; a body too large to read is refused too (413).
CONFIG = schemathesis.Config.from_dict(
    {"checks": {"negative_data_rejection": {"expected-statuses": ["400", "401", "403", "404", "405", "413", "422"]}}}
)
MODES = (schemathesis.GenerationMode.POSITIVE, schemathesis.GenerationMode.NEGATIVE)
ROLES = ("agent", "operator", "admin")
# What a schema-valid request may not get: the statuses that say the request itself is malformed. Positive
# data refused with one of them fails the test (issue #31), unless every reason given is one of the rules the
# schema cannot express, which the operation's description lists (service/contract.py).
REFUSALS = frozenset({400, 413, 422})
SEEDED_USER = "fuzz-user"


def assert_problem(response: schemathesis.Response) -> None:
    """A 4xx is RFC 9457 problem+json that names its own status and a ctxmem problem type."""
    if not 400 <= response.status_code < 500:
        return
    where = f"{response.request.method} {response.request.url} -> {response.status_code}: {response.content[:300]!r}"
    content_type = response.headers.get("content-type", [""])[0]
    assert content_type.split(";")[0] == "application/problem+json", where
    body = json.loads(response.content)
    assert body["status"] == response.status_code, where
    assert str(body["type"]).startswith("urn:ctxmem:problem:"), where
    assert isinstance(body["title"], str) and body["title"], where


def seed(base_url: str, tenant: TenantKeys) -> dict[str, str]:
    """A user with a few items (one keyed, one constraint) and a profile entry; their ids for the path."""
    with httpx.Client(base_url=base_url, headers=tenant.agent, timeout=30) as c:
        items = [
            {"type": "fact", "content": "The user runs PostgreSQL 18 in production.", "key": "db", "source": "user"},
            {"type": "constraint", "content": "Never suggest Redis Cluster.", "hard": True, "source": "user"},
            {"type": "tool_result", "content": '{"rows": 3}', "source": "tool"},
        ]
        r = c.post(f"/v1/users/{SEEDED_USER}/items/batch", json={"items": items})
        assert r.status_code == 201, r.text
        item_id = r.json()["items"][0]["id"]
        obs = {"dimension": "preference", "key": "editor", "value": "vim", "session_id": "s1", "explicit": True}
        r = c.post(f"/v1/users/{SEEDED_USER}/observations", json=obs)
        assert r.status_code == 201, r.text
        entry_id = r.json()["id"]
    return {"user_id": SEEDED_USER, "item_id": str(item_id), "entry_id": str(entry_id)}


def on_the_wire(raw: dict[str, Any]) -> dict[str, Any]:
    """The published schema as a request can express it: a query, header or path parameter is a string on
    the wire and ``null`` is only its absence, so FastAPI's ``anyOf: [X, {type: null}]`` of an optional
    parameter is ``X`` here. (Otherwise schemathesis counts ``?domain=false`` -- a boolean in its model, a
    valid one-element list of strings on the wire -- as schema-breaking input that was accepted.)"""
    for ops in raw["paths"].values():
        for op in ops.values():
            for param in op.get("parameters", []):
                branches = param.get("schema", {}).get("anyOf")
                if branches and {"type": "null"} in branches:
                    rest = [b for b in branches if b != {"type": "null"}]
                    schema = {k: v for k, v in param["schema"].items() if k != "anyOf"}
                    param["schema"] = {**schema, **rest[0]} if len(rest) == 1 else {**schema, "anyOf": rest}
    return raw


def has_inputs(operation: Any) -> bool:
    raw = operation.definition.raw
    return bool(raw.get("parameters") or raw.get("requestBody"))


def modes_of(operation: Any) -> tuple[schemathesis.GenerationMode, ...]:
    """Nothing to break in an operation without parameters or body: positive data only."""
    return MODES if has_inputs(operation) else MODES[:1]


def operation_strategy(operation: Any, mode: schemathesis.GenerationMode, ids: dict[str, str]) -> st.SearchStrategy:
    """Free generation, plus (for a path with ids) the same with the path aimed at the seeded user."""
    free = operation.as_strategy(generation_mode=mode)
    names = {p["name"] for p in operation.definition.raw.get("parameters", []) if p.get("in") == "path"}
    fixed = {name: ids[name] for name in names if name in ids}
    if not fixed:
        return free
    return st.one_of(free, operation.as_strategy(generation_mode=mode, path_parameters=fixed))


@dataclass
class Fuzzer:
    base_url: str
    keys: dict[str, dict[str, str]]
    ids: dict[str, str]
    session: requests.Session = field(default_factory=requests.Session)
    sent: collections.Counter[str] = field(default_factory=collections.Counter)
    statuses: collections.Counter[tuple[str, int]] = field(default_factory=collections.Counter)
    # Schema-valid requests refused: (operation, status, the problem's type and detail) -> how many.
    rejected: collections.Counter[tuple[str, int, str]] = field(default_factory=collections.Counter)
    undocumented: list[str] = field(default_factory=list)

    def run(self, operation: Any, mode: schemathesis.GenerationMode, examples: int) -> None:
        """``examples`` generated requests for one operation in one mode; raises on the first failure
        (after shrinking it)."""

        @hsettings(
            max_examples=examples,
            deadline=None,
            database=None,
            phases=[Phase.generate, Phase.shrink],
            suppress_health_check=list(HealthCheck),
        )
        @given(case=operation_strategy(operation, mode, self.ids), role=st.sampled_from(ROLES))
        def fuzz(case: schemathesis.Case, role: str) -> None:
            # A case that breaks the bearer scheme itself (no or a malformed Authorization) is sent as
            # generated, and must be refused; every other case carries a real key of a random role.
            headers = None if operation.schema.is_security_param_negated(case) else self.keys[role]
            response = case.call(base_url=self.base_url, session=self.session, headers=headers, timeout=60)
            self.sent[operation.label] += 1
            self.statuses[(operation.label, response.status_code)] += 1
            case.validate_response(response, checks=CHECKS, headers=headers)
            assert_problem(response)
            if mode is schemathesis.GenerationMode.POSITIVE and response.status_code in REFUSALS:
                problem = json.loads(response.content)
                why = f"{problem['type']}: {problem['detail']}"
                self.rejected[(operation.label, response.status_code, why)] += 1
                # Every reason counts, not only the first: a validation problem lists them all in errors.
                reasons = [f"{problem['type']}: {e['msg']}" for e in problem.get("errors") or []] or [why]
                method, path = operation.method, operation.path
                missing = [r for r in reasons if not contract.documented_refusal(method, path, r)]
                if missing:
                    self.undocumented.append(
                        f"{case.method} {response.request.url} -> {response.status_code} {'; '.join(missing)[:400]}\n"
                        f"  headers={ {k: v for k, v in (case.headers or {}).items() if k != 'Authorization'} } "
                        f"query={case.query} body={str(case.body)[:300]}"
                    )

        fuzz()


def test_whole_openapi_fuzzed_with_every_role(live: LiveServer, live_tenant: TenantKeys) -> None:
    raw = httpx.get(live.base_url + "/openapi.json", timeout=30).json()
    schema = schemathesis.openapi.from_dict(on_the_wire(raw), config=CONFIG)
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 19, [op.label for op in operations]
    fuzzer = Fuzzer(
        live.base_url, {role: getattr(live_tenant, role) for role in ROLES}, seed(live.base_url, live_tenant)
    )
    runs = [(op, mode) for op in operations for mode in modes_of(op)]
    # Operations without inputs have a handful of distinct requests; the budget goes to the others.
    per_run = math.ceil(TOTAL_CASES * 1.02 / sum(has_inputs(op) for op, _ in runs))
    failures: list[str] = []
    for operation, mode in runs:
        try:
            fuzzer.run(operation, mode, per_run if has_inputs(operation) else 5)
        except BaseException as exc:  # one report for every operation, not just the first that fails
            failures.append(f"{operation.label} [{mode.value}]: {exc}\n{traceback.format_exc()}")

    total = sum(fuzzer.sent.values())
    summary = ", ".join(f"{label} {n}" for label, n in sorted(fuzzer.sent.items()))
    print(f"\nfuzzed {total} requests over {len(operations)} operations: {summary}")
    print("statuses:", dict(sorted(fuzzer.statuses.items())))
    print("schema-valid requests rejected:", sum(fuzzer.rejected.values()))
    for (label, status, why), n in sorted(fuzzer.rejected.items()):
        print(f"  {n:5d} {label} {status} {why[:200]}")
    assert not failures, "\n\n".join(failures)
    print(f"schema-valid requests refused by no documented rule: {len(fuzzer.undocumented)}")
    for line in fuzzer.undocumented[:20]:
        print("  " + line)
    assert not fuzzer.undocumented, "schema-valid requests refused by no documented rule:\n" + "\n".join(
        fuzzer.undocumented[:50]
    )
    assert total >= TOTAL_CASES, f"only {total} requests were sent ({summary})"
    assert not any(status >= 500 for _, status in fuzzer.statuses)
