"""The bases of the client's models.

Responses are pydantic models that keep fields this version does not know (``extra="allow"``), so a newer
server never breaks an older client. Requests are ``TypedDict``s: a method takes their keys as keyword
arguments (``user.add_item(type="fact", content="...")``, checked by mypy and by pydantic before sending,
unknown keys refused), and a caller that builds requests ahead of time writes the same keys as a dict.
``typing_extensions`` is pydantic's own dependency: pydantic needs its ``TypedDict`` before Python 3.12.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, TypeAdapter

FORBID = ConfigDict(extra="forbid")


class Model(BaseModel):
    model_config = ConfigDict(extra="allow", populate_by_name=True)


def dump_request(adapter: TypeAdapter[Any], value: Any) -> bytes:
    """A request body as JSON: validated against its TypedDict, keys left out when not given."""
    return adapter.dump_json(adapter.validate_python(value), exclude_none=True)
