"""problem+json answers of a real server as typed exceptions, and the slug table kept whole: every problem
type docs/errors.md lists, and every ServiceError of the server, has its class in the SDK."""

from __future__ import annotations

import re
import uuid
from pathlib import Path

import pydantic
import pytest
from ctxmem_client import (
    BatchItemInvalid,
    BudgetTooSmall,
    Client,
    CtxmemError,
    Forbidden,
    HistoryInvalid,
    ItemNotFound,
    NotFound,
    PayloadTooLarge,
    Unauthorized,
    ValidationError,
)
from ctxmem_client.errors import SLUG_CLASSES, STATUS_CLASSES, error_for

from service import errors as server_errors
from tests.sdk.conftest import Keys, Live

ROOT = Path(__file__).resolve().parents[2]


def _user() -> str:
    return f"u-{uuid.uuid4().hex[:10]}"


def test_404_unknown_item(live: Live, keys: Keys) -> None:
    with Client(live.url, keys.agent) as client, pytest.raises(ItemNotFound) as caught:
        client.user(_user()).get_item(uuid.uuid4())
    err = caught.value
    assert isinstance(err, NotFound) and isinstance(err, CtxmemError)
    assert (err.status, err.type, err.title) == (404, "urn:ctxmem:problem:item-not-found", "No such item")
    assert err.body["instance"].startswith("/v1/users/")


def test_422_validation_error_names_the_field(live: Live, keys: Keys) -> None:
    with Client(live.url, keys.agent) as client, pytest.raises(ValidationError) as caught:
        client.user(_user()).add_item(type="fact", content="x", scope="session")
    err = caught.value
    assert err.status == 422 and err.slug == "validation-error" and "session_id" in err.detail
    assert err.errors and err.errors[0]["loc"][0] == "body"


def test_422_batch_item_invalid_has_its_index(live: Live, keys: Keys) -> None:
    with Client(live.url, keys.agent) as client, pytest.raises(BatchItemInvalid) as caught:
        client.user(_user()).add_items([{"type": "fact", "content": "ok"}, {"type": "fact", "content": " "}])
    assert caught.value.index == 1 and isinstance(caught.value, ValidationError)


def test_422_history_invalid_and_budget_too_small(live: Live, keys: Keys) -> None:
    with Client(live.url, keys.agent) as client:
        me = client.user(_user())
        with pytest.raises(HistoryInvalid):
            me.window(input="Hi", max_tokens=500, messages=[{"role": "tool", "tool_call_id": "c1", "content": "{}"}])
        me.add_item(type="constraint", content="Never book flights that land after 22:00. " * 5, hard=True)
        with pytest.raises(BudgetTooSmall) as caught:
            me.window(input="Book a flight.", max_tokens=10)
    err = caught.value
    assert err.status == 422 and err.budget == 10 and err.required is not None and err.required > 10


def test_401_bad_key_and_403_wrong_role(live: Live, keys: Keys) -> None:
    with Client(live.url, "cmk_not-a-key") as client, pytest.raises(Unauthorized) as caught:
        client.user("alice").list_items()
    assert caught.value.status == 401 and caught.value.slug == "unauthorized"
    with Client(live.url, keys.operator) as client, pytest.raises(Forbidden) as denied:
        client.user("alice").add_item(type="fact", content="x")
    assert "items:write" in denied.value.detail


def test_413_payload_too_large(live: Live, keys: Keys) -> None:
    with Client(live.url, keys.agent) as client, pytest.raises(PayloadTooLarge) as caught:
        client.user(_user()).add_item(type="fact", content="x" * (1024 * 1024 + 1))
    assert caught.value.status == 413 and caught.value.slug == "payload-too-large"


def test_unknown_request_keys_are_refused_before_sending() -> None:
    with Client("http://127.0.0.1:9") as client, pytest.raises(pydantic.ValidationError):
        client.user("alice").add_item(type="fact", content="x", contnet="typo")  # type: ignore[call-arg]


def _documented_slugs() -> set[str]:
    text = (ROOT / "docs" / "errors.md").read_text(encoding="utf-8")
    return set(re.findall(r"^### ([a-z-]+)$", text, re.M))


def _service_errors() -> list[type[server_errors.ServiceError]]:
    found: list[type[server_errors.ServiceError]] = []
    todo = [server_errors.ServiceError]
    while todo:
        cls = todo.pop()
        found.append(cls)
        todo.extend(cls.__subclasses__())
    return found


def test_every_documented_problem_type_has_a_class() -> None:
    documented = _documented_slugs()
    assert len(documented) > 20
    assert documented <= set(SLUG_CLASSES), documented - set(SLUG_CLASSES)


def test_every_service_error_maps_to_its_family() -> None:
    classes = _service_errors()
    assert len(classes) > 15
    for cls in classes:
        sdk = SLUG_CLASSES[cls.slug]
        family = STATUS_CLASSES.get(cls.status)
        assert family is None or issubclass(sdk, family) or sdk.__name__ in ("BudgetTooSmall", "IdempotencyKeyReused")
        err = error_for(cls.status, cls("why").body("/x"))
        assert type(err) is (sdk if sdk is not CtxmemError else family or CtxmemError)
        assert (err.status, err.title, err.detail) == (cls.status, cls.title, "why")


def test_an_unknown_type_falls_back_to_its_status_family() -> None:
    err = error_for(404, {"type": "urn:ctxmem:problem:tenant-not-found", "title": "t", "detail": "d"})
    assert type(err) is NotFound
    html = error_for(502, "<html>Bad Gateway</html>", reason="Bad Gateway")
    assert html.status == 502 and html.type == "about:blank" and html.detail == "Bad Gateway"
