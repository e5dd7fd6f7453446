"""Opaque page cursors: what encode_cursor issues decode_cursor reads back; anything else is a 422 that says
what to send instead."""

from __future__ import annotations

import base64
import json
import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st

from service.errors import ValidationFailed
from service.pagination import decode_cursor, encode_cursor

ORDERS = st.text(min_size=1, max_size=20)


@given(st.uuids(), ORDERS)
def test_a_cursor_reads_back_as_the_id_it_was_issued_for(last_id: uuid.UUID, order: str) -> None:
    cursor = encode_cursor(last_id, order)
    assert "=" not in cursor and "/" not in cursor and "+" not in cursor  # safe in a query string as is
    assert decode_cursor(cursor, order) == last_id


@given(st.uuids(), ORDERS, ORDERS)
def test_a_cursor_is_only_valid_for_the_order_it_was_issued_for(last_id: uuid.UUID, issued: str, asked: str) -> None:
    cursor = encode_cursor(last_id, issued)
    if issued == asked:
        assert decode_cursor(cursor, asked) == last_id
    else:
        with pytest.raises(ValidationFailed, match="send the same order") as err:
            decode_cursor(cursor, asked)
        assert err.value.status == 422


def forged(obj: object) -> str:
    return base64.urlsafe_b64encode(json.dumps(obj).encode()).decode().rstrip("=")


@pytest.mark.parametrize(
    "cursor",
    [
        "",
        "not a cursor!",
        "%%%%",
        "é",  # not ASCII
        forged([1, 2]),  # JSON of another shape
        forged({"id": 7, "o": "asc"}),
        forged({"id": "not-a-uuid", "o": "asc"}),
        forged({"id": str(uuid.UUID(int=1))}),  # no order
        encode_cursor(uuid.UUID(int=5), "asc")[:-3],  # truncated
    ],
)
def test_anything_but_an_issued_cursor_is_a_422_naming_the_parameter(cursor: str) -> None:
    with pytest.raises(ValidationFailed, match="cursor is not one this service issued") as err:
        decode_cursor(cursor, "asc")
    body = err.value.body()
    assert body["status"] == 422
    assert body["errors"] == [{"loc": ["query", "cursor"], "msg": body["detail"], "type": "value_error"}]
    assert "next_cursor" in body["detail"]  # says what to send instead


def test_a_cursor_names_a_foreign_order_briefly() -> None:
    cursor = encode_cursor(uuid.UUID(int=9), "x" * 500)
    with pytest.raises(ValidationFailed) as err:
        decode_cursor(cursor, "asc")
    assert "x" * 16 in err.value.detail and "x" * 17 not in err.value.detail
