"""The MCP server of ctxmem: memory tools for one user, over the SDK's ``AsyncClient``.

``build_server(user, session_id=...)`` returns an ``MCPServer`` whose tools (``remember``, ``observe``, ``search``,
``expand``, ``window``, ``confirm``, ``reject``, ``extract``, ``extract_session``) and resources
(``ctxmem://profile``, ``ctxmem://items/{item_id}``) act for the one user the handle is bound to. The user, the key
and the URL come from the server's configuration (``ctxmem_client.mcp_cli``), never from the model: no tool takes
them, and a call that names an argument its tool does not declare (``user_id``…) is refused. ctxmem's errors become
tool errors carrying the problem's detail.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Awaitable, Mapping
from typing import Annotated, Any, Literal, TypeVar

import pydantic
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ToolError
from mcp.types import CallToolResult, TextContent
from pydantic import BaseModel, Field

from ctxmem_client.async_client import AsyncUser
from ctxmem_client.errors import CtxmemError
from ctxmem_client.models import ExtractionResult, Item, ProfileEntry
from ctxmem_client.models.items import ItemType, Scope
from ctxmem_client.models.profiles import Dimension, Polarity

T = TypeVar("T")

INSTRUCTIONS = (
    "Long-term memory of the user you are working for (the server is bound to one user; you cannot choose "
    "another). Call `search` before answering from memory and `expand` with the [id] before a shortened line of a "
    "window to read the whole item; `remember` facts, decisions, tool results and the user's constraints "
    "(hard=true) worth keeping; `observe` what the user reveals about their goals, abilities, preferences and "
    "style, and `confirm` or `reject` a profile entry when the user says yes or no to it. `extract` learns from a "
    "conversation by itself (the user's constraints, preferences, facts, goals and decisions, in their own "
    "words); `extract_session` from a stored one. `window` assembles the context of the next model call. The "
    "profile is the resource ctxmem://profile."
)
DEFAULT_WINDOW_TOKENS = 4000


def problem_text(err: CtxmemError) -> str:
    """One line for the model: what ctxmem answered and its detail, which says how to fix the call."""
    head = f"ctxmem answered {err.status} {err.slug}" if err.status else "ctxmem did not answer"
    text = f"{head} ({err.title}): {err.detail}"
    problems = "; ".join(f"{'.'.join(str(p) for p in e.get('loc', []))}: {e.get('msg')}" for e in err.errors)
    return f"{text} [{problems}]" if problems else text


async def _tool(call: Awaitable[T]) -> T:
    try:
        return await call
    except CtxmemError as err:
        raise ToolError(problem_text(err)) from err
    except pydantic.ValidationError as err:  # refused by the SDK before anything was sent
        raise ToolError(f"invalid arguments: {err}") from err


async def _resource(call: Awaitable[T]) -> T:
    try:
        return await call
    except CtxmemError as err:
        raise ResourceError(problem_text(err)) from err


def _given(**fields: Any) -> dict[str, Any]:
    """The fields the model set: None means "not given", so the server's default applies."""
    return {k: v for k, v in fields.items() if v is not None}


# Results: short, typed views of the SDK's models (a model reads them in its context).


class Resolution(BaseModel):
    outcome: str = Field(description="new, replaced, rejected or reinforced")
    detail: str


class Remembered(BaseModel):
    id: uuid.UUID
    type: str
    key: str | None
    scope: str
    session_id: str | None
    hard: bool
    status: str
    resolution: Resolution | None = Field(None, description="How a keyed write was resolved against its slot")

    @classmethod
    def of(cls, item: Item) -> Remembered:
        res = item.resolution
        return cls(
            id=item.id,
            type=item.type,
            key=item.key,
            scope=item.scope,
            session_id=item.session_id,
            hard=item.hard,
            status=item.status,
            resolution=Resolution(outcome=res.outcome, detail=res.detail) if res else None,
        )


class Entry(BaseModel):
    id: uuid.UUID
    domain: str | None
    dimension: str
    key: str
    value: str
    polarity: str
    tier: str = Field(description="current, candidate or long_term")
    status: str = Field(description="active, weakened, expired or rejected")
    score: float
    explicit: bool
    evidence_count: int

    @classmethod
    def of(cls, entry: ProfileEntry) -> Entry:
        return cls.model_validate(entry.model_dump(include=set(cls.model_fields)))


class Hit(BaseModel):
    id: uuid.UUID
    type: str
    content: str
    score: float = Field(description="1 for the best match")
    why: str
    matched: list[str]


class Hits(BaseModel):
    hits: list[Hit]
    tokens_used: int
    warnings: list[str]


class Expanded(BaseModel):
    id: uuid.UUID
    level: int
    text: str
    tokens: int
    status: str


class WindowOut(BaseModel):
    text: str = Field(description="The context, section after section, the input last")
    prompt: dict[str, Any] | None = Field(None, description="With format: the model call's body, ready to send")
    mode: str
    tokens_budget: int
    tokens_used: int
    warnings: list[str]


class Turn(BaseModel):
    role: Literal["user", "assistant", "system", "developer"] = Field(
        description="Who said it; only the user's own messages are learned from"
    )
    content: str = Field(description="What was said, as it was said")


class LearnedRecord(BaseModel):
    type: str = Field(description="constraint, preference, fact, goal or decision")
    content: str = Field(description="The user's words, verbatim")
    key: str
    hard: bool
    outcome: str = Field(
        description="new, replaced (an older value of its slot), reinforced (the same value again), rejected "
        "(a stronger value is in force), or would_write in a dry run"
    )
    item_id: uuid.UUID | None = Field(description="The stored item (null in a dry run)")
    message_index: int | None = Field(
        description="extract: which of the given messages it was said in (0 is the first); null for a stored session"
    )


class Refused(BaseModel):
    reason: str = Field(
        description="not_user_message, ungrounded, service_text (ctxmem's own window text), unknown_message, malformed"
    )
    detail: str
    quote: str | None
    message_index: int | None


class Learned(BaseModel):
    extracted_by: str = Field(description="The extractor and its version, e.g. rules/1")
    dry_run: bool
    messages: int = Field(description="Messages extracted by this call")
    waiting: int = Field(description="The stored session's messages still waiting (0 for given messages)")
    records: list[LearnedRecord]
    profile: list[Entry] = Field(description="The profile entries the user's preferences and goals fed")
    rejected: list[Refused]

    @classmethod
    def of(cls, result: ExtractionResult) -> Learned:
        records = [
            LearnedRecord(
                type=r.type,
                content=r.content,
                key=r.key,
                hard=r.hard,
                outcome=r.outcome,
                item_id=r.item.id if r.item is not None else None,
                message_index=r.evidence.message_index,
            )
            for r in result.records
        ]
        rejected = [
            Refused(reason=r.reason, detail=r.detail, quote=r.quote, message_index=r.message_index)
            for r in result.rejected
        ]
        return cls(
            extracted_by=result.extracted_by,
            dry_run=result.dry_run,
            messages=result.messages,
            waiting=result.waiting,
            records=records,
            profile=[Entry.of(e) for e in result.profile],
            rejected=rejected,
        )


SessionArg = Annotated[
    str | None, Field(description="The session this belongs to (default: the server's configured session)")
]
EntryId = Annotated[uuid.UUID, Field(description="A profile entry's id (from observe or the profile resource)")]
WritableSource = Literal["user", "tool", "summary", "model"]


def build_server(user: AsyncUser, *, session_id: str | None = None) -> MCPServer[Any]:
    """The MCP server acting for ``user`` (an ``AsyncClient``'s handle); ``session_id`` is the default session
    of ``remember``, ``observe``, ``window``, ``confirm``, ``reject``, ``extract`` and ``extract_session``."""
    for name, value in (("user", user.user_id), ("session", session_id)):
        # A URL dot-segment: ctxmem refuses to store anything under it (docs/api.md#ids), so refuse to start.
        if value in (".", ".."):
            raise ValueError(
                f"{name} id {value!r} is a URL dot-segment, which ctxmem refuses for writes (clients and proxies "
                "that normalise paths cannot reach it): choose another id"
            )
    server: MCPServer[Any] = MCPServer("ctxmem", instructions=INSTRUCTIONS, log_level="WARNING")

    def session(given: str | None) -> str | None:
        return given if given is not None else session_id

    @server.tool()
    async def remember(
        content: Annotated[str, Field(description="The text to keep, verbatim")],
        type: Annotated[ItemType, Field(description="What it is; a rule the user set is a constraint")] = "fact",
        key: Annotated[
            str | None, Field(description="A slot name: a newer item with the same key replaces the older one")
        ] = None,
        value: Annotated[Any, Field(description="The slot's structured value (any JSON), e.g. 300")] = None,
        scope: Annotated[
            Scope | None, Field(description="Where it applies (default user: everywhere); session needs a session")
        ] = None,
        session_id: SessionArg = None,
        hard: Annotated[bool, Field(description="A constraint always in the window, verbatim")] = False,
        source: Annotated[WritableSource, Field(description="Who said it: the user, a tool, or you")] = "model",
        domain: Annotated[str | None, Field(description="A topic label, e.g. travel")] = None,
    ) -> Remembered:
        """Write one item into the user's memory (a fact, a decision, a tool result, a constraint…)."""
        given = _given(key=key, value=value, scope=scope, session_id=session(session_id), domain=domain)
        return Remembered.of(await _tool(user.add_item(type=type, content=content, source=source, hard=hard, **given)))

    @server.tool()
    async def observe(
        dimension: Annotated[Dimension, Field(description="goal, ability, preference, decision_style, relationship")],
        key: Annotated[str, Field(description="What about it, e.g. seat")],
        value: Annotated[str, Field(description="The observed value, e.g. aisle")],
        explicit: Annotated[bool, Field(description="The user said it outright (not inferred)")] = False,
        polarity: Annotated[Polarity | None, Field(description="like, dislike or neutral")] = None,
        stance: Annotated[
            Literal["supports", "contradicts"] | None, Field(description="Whether this supports the value")
        ] = None,
        domain: Annotated[str | None, Field(description="A topic, e.g. travel (none: it holds everywhere)")] = None,
        context: Annotated[str | None, Field(description="The situation it was seen in")] = None,
        note: Annotated[str | None, Field(description="Free text kept with the evidence")] = None,
        session_id: SessionArg = None,
    ) -> Entry:
        """Record evidence about the user; returns the profile entry it supports, rescored."""
        where = session(session_id)
        if where is None:
            raise ToolError("observe needs a session_id: pass one (the server has no configured session)")
        given = _given(polarity=polarity, stance=stance, domain=domain, context=context, note=note)
        found = user.observe(dimension=dimension, key=key, value=value, session_id=where, explicit=explicit, **given)
        return Entry.of(await _tool(found))

    @server.tool()
    async def search(
        query: Annotated[
            str, Field(description="What to look for, in words; or a window's [id] alone, whose item then comes first")
        ],
        limit: Annotated[int, Field(ge=1, le=100, description="At most this many hits")] = 10,
        types: Annotated[list[ItemType] | None, Field(description="Only items of these types")] = None,
        budget: Annotated[int | None, Field(ge=1, description="At most this many tokens of content in all")] = None,
        session_id: Annotated[str | None, Field(description="Only items written in this session")] = None,
    ) -> Hits:
        """Search the user's memory: the items in force, best first, with why each matched."""
        found = await _tool(
            user.search(query=query, limit=limit, **_given(types=types, budget=budget, session_id=session_id))
        )
        hits = [
            Hit(id=h.item.id, type=h.item.type, content=h.item.content, score=h.score, why=h.why, matched=h.matched)
            for h in found.items
        ]
        return Hits(hits=hits, tokens_used=found.tokens.used, warnings=found.warnings)

    @server.tool()
    async def expand(
        item_id: Annotated[
            str,
            Field(
                description="An item's id (from search) or its handle: the [id] a window puts before a shortened "
                "item (the end of the id)",
                pattern=r"^[0-9a-fA-F-]{8,36}$",
            ),
        ],
        level: Annotated[
            int, Field(ge=0, le=4, description="0 original, 1 condensed, 2 summary, 3 key fields, 4 index line")
        ] = 0,
    ) -> Expanded:
        """One item's text at a level of detail: level 0 is the original, verbatim."""
        item = await _tool(user.get_item(item_id, level=level))
        at = item.at_level
        if at is None:
            raise ToolError(f"ctxmem returned item {item_id} without its text at level {level}")
        return Expanded(id=item.id, level=at.level, text=at.text, tokens=at.tokens, status=item.status)

    @server.tool()
    async def window(
        input: Annotated[str, Field(description="The latest input (the user's message) to answer")],
        max_tokens: Annotated[int, Field(ge=1, description="The context's token budget")] = DEFAULT_WINDOW_TOKENS,
        query: Annotated[str | None, Field(description="What to recall, if not the input")] = None,
        format: Annotated[
            Literal["openai", "anthropic"] | None,
            Field(description="Also return prompt: the request body for that API, ready to send"),
        ] = None,
        session_id: SessionArg = None,
        task_id: Annotated[str | None, Field(description="The task in progress")] = None,
    ) -> WindowOut:
        """Assemble the context for the next model call: constraints, profile, relevant memory, the input."""
        given = _given(query=query, format=format, session_id=session(session_id), task_id=task_id)
        found = await _tool(user.window(input=input, max_tokens=max_tokens, **given))
        return WindowOut(
            text=found.text,
            prompt=found.prompt,
            mode=found.mode,
            tokens_budget=found.tokens.budget,
            tokens_used=found.tokens.used,
            warnings=found.warnings,
        )

    def verdict_body(note: str | None, context: str | None, session_id: str | None) -> dict[str, Any]:
        return _given(note=note, context=context, session_id=session(session_id))

    @server.tool()
    async def confirm(
        entry_id: EntryId,
        note: Annotated[str | None, Field(description="What the user said, e.g. 'yes, always aisle'")] = None,
        context: Annotated[str | None, Field(description="The situation it was said in")] = None,
        session_id: SessionArg = None,
    ) -> Entry:
        """The user said yes to a profile entry: it becomes long_term and active at once."""
        return Entry.of(await _tool(user.confirm(entry_id, **verdict_body(note, context, session_id))))

    @server.tool()
    async def reject(
        entry_id: EntryId,
        note: Annotated[str | None, Field(description="What the user said")] = None,
        context: Annotated[str | None, Field(description="The situation it was said in")] = None,
        session_id: SessionArg = None,
    ) -> Entry:
        """The user said no to a profile entry: it is rejected until new explicit support."""
        return Entry.of(await _tool(user.reject(entry_id, **verdict_body(note, context, session_id))))

    @server.tool()
    async def extract(
        messages: Annotated[
            list[Turn], Field(min_length=1, description="The conversation, oldest first (role and content each)")
        ],
        dry_run: Annotated[bool, Field(description="Store nothing: only say what would be learned")] = False,
        session_id: SessionArg = None,
    ) -> Learned:
        """Learn from a conversation: what the user states about themselves (constraints, preferences, facts,
        goals, decisions) is stored in their own words, each a memory item; preferences and goals also feed the
        profile. Only the user's messages count. dry_run=true stores nothing and says what would be learned."""
        turns = [t.model_dump() for t in messages]
        found = user.extract(turns, session_id=session(session_id), dry_run=dry_run)
        return Learned.of(await _tool(found))

    @server.tool()
    async def extract_session(
        session_id: SessionArg = None,
        reextract: Annotated[
            bool, Field(description="Also extract again what an older extractor version extracted")
        ] = False,
    ) -> Learned:
        """Learn now from a stored conversation's messages that wait (ctxmem would, a little later, by itself):
        the user's constraints, preferences, facts, goals and decisions, in their own words."""
        where = session(session_id)
        if where is None:
            raise ToolError("extract_session needs a session_id: pass one (the server has no configured session)")
        return Learned.of(await _tool(user.extract_session(where, reextract=reextract)))

    @server.resource("ctxmem://profile", name="profile", mime_type="application/json")
    async def profile() -> str:
        """The user's profile: entries by tier and domain, and the effective view a window uses."""
        found = await _resource(user.profile(session_id=session_id))
        return json.dumps(found.model_dump(mode="json"))

    @server.resource("ctxmem://items/{item_id}", name="item", mime_type="application/json")
    async def item(item_id: str) -> str:
        """One item of the user's memory, whatever its status."""
        return json.dumps((await _resource(user.get_item(item_id))).model_dump(mode="json"))

    server.middleware.append(UndeclaredArguments(server))
    return server


class UndeclaredArguments:
    """Refuses a tool call naming an argument its tool does not declare. The SDK would drop it silently; a model
    that passes ``user_id`` should learn that this server acts for one user, set by its configuration."""

    def __init__(self, server: MCPServer[Any]) -> None:
        self._server = server
        self._declared: dict[str, set[str]] | None = None

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        if ctx.method == "tools/call" and isinstance(ctx.params, Mapping):
            if self._declared is None:
                tools = await self._server.list_tools()
                self._declared = {t.name: set(t.input_schema.get("properties", {})) for t in tools}
            declared = self._declared.get(str(ctx.params.get("name")))
            arguments = ctx.params.get("arguments") or {}
            extra = sorted(set(arguments) - declared) if declared is not None and isinstance(arguments, Mapping) else []
            if extra:
                text = (
                    f"unknown argument(s) {', '.join(extra)}: this tool takes {', '.join(sorted(declared or ()))}. "
                    "The server acts for the one user (and key) of its configuration; no tool takes a user id or a key."
                )
                return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True)
        return await call_next(ctx)
