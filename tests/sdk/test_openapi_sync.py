"""The SDK's models stay in step with the server's OpenAPI document, fetched from an app built by
``service.app.create_app``: every field of each response model, every key of each request, every query
parameter and every route the SDK sends exists in the server's schema — so a renamed or removed field fails
here, not in a user's agent — and every operation of the server has its SDK call."""

from __future__ import annotations

import inspect
import re
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest
from ctxmem_client import _calls as calls
from ctxmem_client import models
from ctxmem_client.models.base import Model

from service.app import create_app
from service.settings import Settings

# SDK response model -> the server's component schema.
RESPONSES: dict[type[Model], str] = {
    models.Item: "ItemRead",
    models.ItemPage: "ItemPage",
    models.ItemBatch: "ItemBatchResult",
    models.Resolution: "Resolution",
    models.LevelText: "LevelText",
    models.Variants: "ItemVariants",
    models.ProfileEntry: "ProfileEntryRead",
    models.ProfileEntryBatch: "ProfileEntryBatch",
    models.Observation: "ObservationRead",
    models.EffectiveEntry: "EffectiveEntryRead",
    models.EffectiveProfile: "EffectiveProfileRead",
    models.Overridden: "OverriddenRead",
    models.Profile: "ProfileRead",
    models.EntryEvidence: "EntryEvidence",
    models.Event: "EventRead",
    models.EventPage: "EventPage",
    models.EraseResult: "EraseResult",
    models.JobRun: "JobRunRead",
    models.JobRunPage: "JobRunPage",
    models.SearchHit: "SearchHit",
    models.SearchTokens: "SearchTokens",
    models.SearchResults: "SearchResponse",
    models.Window: "WindowResponse",
    models.WindowItem: "WindowItem",
    models.WindowSection: "WindowSection",
    models.WindowTokens: "WindowTokens",
    models.Omitted: "Omitted",
    models.OmittedSummary: "OmittedSummary",
    models.StoredMessage: "StoredMessage",
    models.MessagesAppended: "MessagesAppended",
    models.MessagePage: "MessagePage",
    models.SessionEnded: "SessionEnded",
    models.MessagePopped: "MessagePopped",
    models.Evidence: "Evidence",
    models.ExtractedRecord: "ExtractedRecord",
    models.RejectedRecord: "RejectedRecord",
    models.ExtractionResult: "ExtractionResult",
}
# Answers the OpenAPI document does not describe (plain JSON routes, a streamed export); the live tests
# validate real answers against these models (tests/sdk/test_client.py).
NOT_IN_SCHEMA = {models.Health, models.Readiness, models.Export}

REQUESTS: dict[Any, str] = {
    models.ItemCreate: "ItemCreate",
    models.ItemBatchCreate: "ItemBatchCreate",
    models.ItemVariants: "ItemVariants",
    models.ObservationCreate: "ObservationCreate",
    models.ObservationBatchCreate: "ObservationBatchCreate",
    models.ConfirmBody: "ConfirmBody",
    models.SearchRequest: "SearchRequest",
    models.WindowRequest: "WindowRequest",
    models.MessagesAppend: "MessagesAppend",
    models.ExtractRequest: "ExtractRequest",
    models.SessionExtractRequest: "SessionExtractRequest",
}


@pytest.fixture(scope="module")
async def spec(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    app = create_app(Settings(data_dir=tmp_path_factory.mktemp("sdk-openapi"), tokenizer="estimate"))
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://ctxmem.test") as c:
        response = await c.get("/openapi.json")
    assert response.status_code == 200
    found: dict[str, Any] = response.json()
    return found


def _properties(spec: dict[str, Any], component: str) -> set[str]:
    schema = spec["components"]["schemas"][component]
    return set(schema["properties"])


def test_every_response_model_is_mapped() -> None:
    exported = {
        obj for obj in vars(models).values() if inspect.isclass(obj) and issubclass(obj, Model) and obj is not Model
    }
    assert len(exported) > 25
    assert exported == set(RESPONSES) | NOT_IN_SCHEMA, exported ^ (set(RESPONSES) | NOT_IN_SCHEMA)


@pytest.mark.parametrize("model", list(RESPONSES), ids=lambda m: m.__name__)
def test_response_fields_exist_on_the_server(spec: dict[str, Any], model: type[Model]) -> None:
    ours = set(model.model_fields)
    theirs = _properties(spec, RESPONSES[model])
    assert ours, model
    assert ours <= theirs, f"{model.__name__}: {sorted(ours - theirs)} not in {RESPONSES[model]}"


@pytest.mark.parametrize("request_type", list(REQUESTS), ids=lambda t: t.__name__)
def test_request_keys_exist_on_the_server(spec: dict[str, Any], request_type: Any) -> None:
    component = spec["components"]["schemas"][REQUESTS[request_type]]
    ours = set(request_type.__annotations__)
    assert ours <= set(component["properties"]), sorted(ours - set(component["properties"]))
    # What the server requires, the SDK's TypedDict requires too (so mypy catches a missing key).
    assert set(component.get("required", ())) == set(request_type.__required_keys__)


def _query_parameters(spec: dict[str, Any], method: str, path: str) -> set[str]:
    operation = spec["paths"][path][method]
    return {p["name"] for p in operation.get("parameters", []) if p["in"] == "query"}


def test_query_parameters_exist_on_the_server(spec: dict[str, Any]) -> None:
    items = _query_parameters(spec, "get", "/v1/users/{user_id}/items")
    assert set(models.ItemFilters.__annotations__) | {"cursor"} <= items
    assert {"level"} <= _query_parameters(spec, "get", "/v1/users/{user_id}/items/{item_id}")
    assert {"domain", "session_id", "tier"} <= _query_parameters(spec, "get", "/v1/users/{user_id}/profile")
    assert {"kind", "order", "limit", "cursor"} <= _query_parameters(spec, "get", "/v1/users/{user_id}/events")
    assert {"name", "limit"} <= _query_parameters(spec, "get", "/v1/jobs/runs")
    messages = "/v1/users/{user_id}/sessions/{session_id}/messages"
    assert {"limit", "cursor"} <= _query_parameters(spec, "get", messages)


def _every_call() -> list[calls.Call[Any]]:
    u = calls.user_path("alice")
    some = uuid.uuid4()
    return [
        calls.health(),
        calls.ready(),
        calls.run_job("decay", now=None),
        calls.job_runs(name=None, limit=None),
        calls.add_item(u, {"type": "fact", "content": "x"}),
        calls.add_items(u, [{"type": "fact", "content": "x"}]),
        calls.list_items(u, {}, None),
        calls.get_item(u, some, level=None),
        calls.delete_item(u, some),
        calls.observe(u, {"dimension": "goal", "key": "k", "value": "v", "session_id": "s"}),
        calls.observe_batch(u, [{"dimension": "goal", "key": "k", "value": "v", "session_id": "s"}]),
        calls.profile(u, domains=None, session_id=None, tiers=None),
        calls.profile_entry(u, some),
        calls.verdict(u, some, {}, confirm=True),
        calls.verdict(u, some, {}, confirm=False),
        calls.window(u, {"input": "x", "max_tokens": 10}),
        calls.search(u, {"query": "x"}),
        calls.events(u, kinds=None, order=None, limit=None, cursor=None),
        calls.append_messages(u, "s1", [{"role": "user", "content": "x"}]),
        calls.list_messages(u, "s1", limit=None, cursor=None),
        calls.end_session(u, "s1"),
        calls.pop_message(u, "s1"),
        calls.extract(u, [{"role": "user", "content": "x"}], session_id=None, dry_run=True),
        calls.extract_session(u, "s1", reextract=False),
        calls.export(u),
        calls.erase(u),
    ]


def _template(path: str) -> re.Pattern[str]:
    parts = re.split(r"(\{[^}]+\})", path)
    return re.compile("^" + "".join("[^/]+" if p.startswith("{") else re.escape(p) for p in parts) + "$")


def test_every_route_the_sdk_calls_exists(spec: dict[str, Any]) -> None:
    served = [(method.upper(), _template(path)) for path, ops in spec["paths"].items() for method in ops]
    made = _every_call()
    source = Path(calls.__file__).read_text(encoding="utf-8")
    assert len(made) == len(re.findall(r"\) -> Call\[", source)) + 1  # verdict makes two
    for call in made:
        assert any(m == call.method and t.match(call.path) for m, t in served), (call.method, call.path)
    # and the SDK calls every operation the server has
    called = {(c.method, next(p for p in spec["paths"] if _template(p).match(c.path))) for c in made}
    assert called == {(m.upper(), p) for p, ops in spec["paths"].items() for m in ops}
