"""The rules a request can break while fitting the published schema: they depend on several fields, on what
is stored, or on something JSON Schema cannot say. One list, used three ways: each operation's OpenAPI
description lists the rules that apply to it (``service/app.py``), docs/api.md shows the same list (a test
holds them equal), and the OpenAPI fuzz test counts a schema-valid request refused for any other reason as a
failure (issue #31).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

WRITES = r"^(POST|PUT|PATCH|DELETE) /v1/"
ITEM_WRITES = r"^POST /v1/users/\{user_id\}/items(/batch)?$"
LISTINGS = r"^GET /v1/users/\{user_id\}/(items|events|sessions/\{session_id\}/messages)$"
CHAT = r"^POST /v1/users/\{user_id\}/(window|extract|sessions/\{session_id\}/messages)$"
DATED = r"^POST /v1/(users/\{user_id\}/(items(/batch)?|observations(/batch)?|search)|jobs/\{name\}/run)$"
OBSERVED = r"^POST /v1/users/\{user_id\}/(items|observations)(/batch)?$"
BODIES = r"^(POST|PUT|PATCH) /v1/"


@dataclass(frozen=True)
class Rule:
    """``says`` is the rule as a client reads it; ``where`` matches the operations it applies to
    (``METHOD /path``), which ``routes`` names in words; ``refusal`` matches the problem a request breaking
    it gets (``type: detail``)."""

    says: str
    routes: str
    where: str
    refusal: str

    @property
    def line(self) -> str:
        """The rule as docs/api.md lists it."""
        return f"- {self.routes}: {self.says}"

    def applies_to(self, method: str, path: str) -> bool:
        return re.search(self.where, f"{method.upper()} {path}") is not None


RULES: tuple[Rule, ...] = (
    Rule(
        "an `Idempotency-Key` sent again with another request (route, user or body) is refused "
        "(`idempotency-key-reused`); with the same request, the first answer is replayed",
        "every write",
        WRITES,
        r"^urn:ctxmem:problem:idempotency-key-reused:",
    ),
    Rule(
        "`cursor` is a `next_cursor` this service issued, sent back unchanged with the same `order`",
        "listings",
        LISTINGS,
        r"cursor is not one this service issued|cursor was issued for order=",
    ),
    Rule(
        "`view=effective` takes no `status`, `include_*` or `extracted_by` filter",
        "`GET …/items`",
        r"^GET /v1/users/\{user_id\}/items$",
        r"view=effective",
    ),
    Rule(
        "date-times lie between 1900-01-01T00:00:00Z and 9999-01-01T00:00:00Z",
        "items, observations, search, jobs",
        DATED,
        r"must lie between 1900-01-01T00:00:00Z and 9999-01-01T00:00:00Z",
    ),
    Rule(
        "`observed_at` is not after the server's clock",
        "items, observations",
        OBSERVED,
        r"observed_at is in the future",
    ),
    Rule(
        "a `scope` of session, task, stage or step needs its `session_id`, `task_id`, `stage_id` or `step_id`",
        "items",
        ITEM_WRITES,
        r"scope '\w+' needs \w+_id",
    ),
    Rule("`hard` is for `type: constraint` only", "items", ITEM_WRITES, r"only constraints can be hard"),
    Rule("`corrects` is for `source: user` only", "items", ITEM_WRITES, r"corrects is only for user-sourced items"),
    Rule(
        "`authority` is at most what `source` earns",
        "items",
        ITEM_WRITES,
        r"is above what source '\w+' earns",
    ),
    Rule("`expires_at` is after `observed_at`", "items", ITEM_WRITES, r"expires_at must be after observed_at"),
    Rule(
        "`related_ids` and `corrects` name the user's own items",
        "items",
        ITEM_WRITES,
        r"related_ids not found for this user|corrects: no item \S+ for this user",
    ),
    Rule(
        "an item's `content` and an observation's `value` hold some non-whitespace text",
        "items, observations",
        OBSERVED,
        r"must contain non-whitespace text",
    ),
    Rule(
        "exactly one budget, `max_tokens` or `context_limit` (with `reserve_tokens` smaller than it); the "
        "pinned constraints must fit it (`budget-too-small`)",
        "window",
        r"^POST /v1/users/\{user_id\}/window$",
        r"a budget is needed|not both|reserve_tokens must be smaller than context_limit"
        r"|^urn:ctxmem:problem:budget-too-small:",
    ),
    Rule(
        "a message's `role` decides its fields: a `tool` message needs `tool_call_id`; only `assistant` "
        "messages carry `tool_calls`",
        "messages, window, extract",
        CHAT,
        r"a tool message needs tool_call_id|only assistant messages carry tool_calls",
    ),
    Rule(
        "the messages are a well-formed chat history, the session's stored messages before them included "
        "(`history-invalid`): each `tool` message answers an open call of an earlier assistant message, once",
        "messages, window",
        r"^POST /v1/users/\{user_id\}/(window|sessions/\{session_id\}/messages)$",
        r"^urn:ctxmem:problem:history-invalid:",
    ),
    Rule(
        "`observed_after` is before `observed_before`",
        "search",
        r"^POST /v1/users/\{user_id\}/search$",
        r"observed_after must be before observed_before",
    ),
    Rule(
        "no text holds a NUL character or an unpaired surrogate (U+D800 to U+DFFF), free-form JSON values "
        "(`metadata`, a message's extra fields) included: PostgreSQL cannot store them",
        "every body",
        BODIES,
        r"must not contain (NUL bytes|unpaired surrogate)",
    ),
)


def rules_for(method: str, path: str) -> list[Rule]:
    return [rule for rule in RULES if rule.applies_to(method, path)]


def described(method: str, path: str, description: str) -> str:
    """``description`` with the operation's rules appended, as a list under a heading."""
    rules = rules_for(method, path)
    if not rules:
        return description
    listed = "\n".join(f"- {rule.says[0].upper()}{rule.says[1:]}." for rule in rules)
    head = f"{description}\n\n" if description else ""
    return f"{head}**Refused (422) though the schema allows it:**\n\n{listed}"


def documented_refusal(method: str, path: str, problem: str) -> Rule | None:
    """The rule of this operation a refusal (``type: detail``) comes from, if any."""
    return next((rule for rule in rules_for(method, path) if re.search(rule.refusal, problem)), None)
