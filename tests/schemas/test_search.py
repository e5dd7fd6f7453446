"""schemas/search.py: what a search request may ask for, and the defaults it gets."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from schemas.search import SearchRequest


def request(**fields: Any) -> SearchRequest:
    return SearchRequest.model_validate({"query": "replica lag", **fields})


def test_defaults_are_ten_items_no_budget_and_no_filter() -> None:
    r = request()
    assert (r.limit, r.budget, r.types, r.domains, r.statuses, r.session_id) == (10, None, None, None, None, None)


@pytest.mark.parametrize(
    ("fields", "says"),
    [
        ({"query": ""}, "at least 1 item"),  # pydantic's words; the API's 422 says "character" (validation_messages)
        ({"limit": 0}, "greater than or equal to 1"),
        ({"limit": 101}, "less than or equal to 100"),
        ({"budget": 0}, "greater than or equal to 1"),
        ({"statuses": ["superseded"]}, "'available', 'verified' or 'missing'"),
        ({"statuses": []}, "at least 1 item"),
        ({"types": ["nonsense"]}, "Input should be"),
        ({"observed_after": "2026-12-01"}, "observed_after"),
        ({"observed_after": "2026-12-01T00:00:00Z", "observed_before": "2026-12-01T00:00:00Z"}, "must be before"),
        ({"unknown": 1}, "Extra inputs are not permitted"),
    ],
)
def test_what_cannot_be_searched_is_refused(fields: dict[str, Any], says: str) -> None:
    with pytest.raises(ValidationError, match=says):
        request(**fields)


def test_a_time_range_and_the_statuses_in_force_are_accepted() -> None:
    r = request(
        observed_after="2026-11-01T00:00:00Z", observed_before="2026-12-01T00:00:00+01:00", statuses=["verified"]
    )
    assert r.observed_after is not None and r.observed_before is not None and r.observed_after < r.observed_before
    assert r.statuses == ["verified"]
