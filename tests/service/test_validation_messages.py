"""service/validation_messages.py: each pydantic error as a message naming the field, what was sent and
what is accepted."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from schemas.profiles import ObservationBatchCreate
from schemas.windows import WindowRequest
from service.validation_messages import explain, fields_at, location, relevant


def all_errors(model: type[BaseModel], body: Any) -> list[dict[str, Any]]:
    try:
        model.model_validate(body)
    except ValidationError as exc:
        return [{**e, "loc": ("body", *e["loc"])} for e in exc.errors()]
    raise AssertionError("the body was valid")


def first_error(model: type[BaseModel], body: Any) -> dict[str, Any]:
    try:
        model.model_validate(body)
    except ValidationError as exc:
        err = dict(exc.errors()[0])
        err["loc"] = ("body", *err["loc"])  # as FastAPI reports a body error
        return err
    raise AssertionError("the body was valid")


def test_fields_at_walks_lists_optionals_and_nested_models() -> None:
    assert "max_tokens" in fields_at(WindowRequest, [])
    message_fields = fields_at(WindowRequest, ["messages", 3])
    assert {"role", "content", "tool_calls", "tool_call_id"} <= set(message_fields)
    assert set(fields_at(WindowRequest, ["messages", 0, "tool_calls", 0, "function"])) == {"name", "arguments"}
    assert fields_at(WindowRequest, ["no_such_field"]) == []
    assert fields_at(None, ["anything"]) == []


def test_an_unknown_field_suggests_the_closest_known_one() -> None:
    err = first_error(WindowRequest, {"input": "x", "max_token": 5})
    assert explain(err, body_model=WindowRequest, content_type="application/json") == (
        "unknown field 'max_token'; did you mean 'max_tokens'?"
    )


def test_an_unknown_nested_field_lists_the_known_ones_when_none_is_close() -> None:
    body = {"observations": [{"zzzz": 1}]}
    err = next(e for e in all_errors(ObservationBatchCreate, body) if e["type"] == "extra_forbidden")
    msg = explain(err, body_model=ObservationBatchCreate, content_type="application/json")
    assert msg.startswith("unknown field 'observations[0].zzzz'; known fields: domain, dimension, key, value")


def test_a_non_object_body_says_to_send_json_and_how() -> None:
    err = {"loc": ("body",), "type": "model_attributes_type", "msg": "Input should be a valid dictionary"}
    form = explain(err, body_model=WindowRequest, content_type="application/x-www-form-urlencoded")
    assert "Content-Type: application/json" in form and "got application/x-www-form-urlencoded" in form
    assert "-H 'Content-Type: application/json'" in form
    assert explain(err, body_model=WindowRequest, content_type="application/json").startswith(
        "the body must be a JSON object, e.g. {"
    )
    assert "JSON object" in explain(err, body_model=None, content_type=None)


def test_missing_names_the_path() -> None:
    err = first_error(WindowRequest, {"input": "x", "max_tokens": 5, "messages": [{"content": "hi"}]})
    assert explain(err, body_model=WindowRequest, content_type=None) == "messages[0].role is required"


def test_tool_call_arguments_sent_as_an_object_get_the_openai_encoding() -> None:
    call = {"id": "c", "function": {"name": "f", "arguments": {"city": "Lisbon"}}}
    body = {"input": "x", "max_tokens": 5, "messages": [{"role": "assistant", "tool_calls": [call]}]}
    err = first_error(WindowRequest, body)
    msg = explain(err, body_model=WindowRequest, content_type=None)
    assert msg.startswith("messages[0].tool_calls[0].function.arguments must be a JSON-encoded string")
    assert "json.dumps" in msg


def test_too_long_text_gives_its_length_and_the_limit() -> None:
    err = first_error(WindowRequest, {"input": "x", "max_tokens": 5, "session_id": "s" * 300})
    assert explain(err, body_model=None, content_type=None) == (
        "session_id has 300 characters; at most 128 characters are accepted"
    )


def test_too_long_safe_text_with_constraints_gives_its_length() -> None:
    err = first_error(WindowRequest, {"input": "x" * 40_000, "max_tokens": 5})
    assert explain(err, body_model=None, content_type=None) == (
        "input has 40,000 characters; at most 32,000 characters are accepted"
    )


def test_too_long_lists_give_their_length_and_the_limit() -> None:
    err = first_error(WindowRequest, {"input": "x", "max_tokens": 5, "domains": ["d"] * 40})
    assert explain(err, body_model=None, content_type=None) == "domains has 40 elements; at most 32 are accepted"


def test_a_literal_names_the_accepted_values() -> None:
    err = first_error(WindowRequest, {"input": "x", "max_tokens": 5, "messages": [{"role": "robot"}]})
    msg = explain(err, body_model=None, content_type=None)
    assert msg.startswith("messages[0].role: 'robot' is not one of ")
    assert "'assistant'" in msg


def test_value_errors_lose_pydantics_prefix() -> None:
    err = first_error(WindowRequest, {"input": "x"})
    assert explain(err, body_model=None, content_type=None).startswith("a budget is needed")
    assert (
        explain(
            {"loc": ("body", "x"), "type": "assertion_error", "msg": "Assertion failed, no"},
            body_model=None,
            content_type=None,
        )
        == "x: no"
    )


@pytest.mark.parametrize(
    ("loc", "shown"),
    [
        (("query", "limit"), "limit: bad"),
        (("path", "user_id"), "user_id: bad"),
        ((), "bad"),
        (("body", "a", 2, "b"), "a[2].b: bad"),
    ],
)
def test_the_location_is_written_as_a_path(loc: tuple[Any, ...], shown: str) -> None:
    assert explain({"loc": loc, "type": "other", "msg": "bad"}, body_model=None, content_type=None) == shown


def test_an_empty_safe_text_says_it_needs_a_character() -> None:
    from schemas.search import SearchRequest

    err = first_error(SearchRequest, {"query": ""})
    assert explain(err, body_model=None, content_type=None) == "query must have at least 1 character"


def test_a_union_fields_location_is_the_field_not_the_branch_pydantic_tried() -> None:
    """A message's content is a string or a list of parts: an error names messages[0].content, not the
    branch's type (which printed a Python function's address)."""
    body = {"input": "x", "max_tokens": 5, "messages": [{"role": "user", "content": "a\x00b"}]}
    errors = all_errors(WindowRequest, body)
    messages = [explain(e, body_model=WindowRequest, content_type=None) for e in errors]
    assert "messages[0].content: text must not contain NUL bytes" in messages
    assert all("function" not in m and "[" not in m.split(":")[0].replace("[0]", "") for m in messages), messages
    assert {tuple(location(e["loc"])) for e in errors} == {("body", "messages", "0", "content")}


def test_a_union_reports_the_branch_of_the_values_own_type() -> None:
    """A string with a NUL fails the string branch for its text and the list branch for being a string:
    only the first is worth reading. A value of no branch's type keeps every mismatch."""
    body = {"input": "x", "max_tokens": 5, "messages": [{"role": "user", "content": "a\x00b"}]}
    kept = relevant(all_errors(WindowRequest, body))
    assert [explain(e, body_model=WindowRequest, content_type=None) for e in kept] == [
        "messages[0].content: text must not contain NUL bytes"
    ]
    # A list of parts with a bad part: the part's error, not "content: Input should be a valid string".
    body["messages"] = [{"role": "user", "content": [{"type": "text", "text": "a\x00"}]}]
    kept = relevant(all_errors(WindowRequest, body))
    assert [explain(e, body_model=WindowRequest, content_type=None) for e in kept] == [
        "messages[0].content[0].text: text must not contain NUL bytes"
    ]
    body["messages"] = [{"role": "user", "content": 5}]
    assert len(relevant(all_errors(WindowRequest, body))) == len(all_errors(WindowRequest, body)) >= 2
